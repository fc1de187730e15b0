//! Reliability of the store in process: injected faults at every system
//! call, and a temp directory full of junk.
// Tests damage stores on purpose and drive them from threads of their
// own; the rules of clippy.toml are the library's.
#![allow(clippy::disallowed_methods)]

mod support;

use std::time::Duration;

use spillway::{
    Compression, Durability, OnStoreError, Policy, Render, Selection, Spiller, Store,
    StoreErrorKind,
};
use spillway::{FaultPlan, FaultPoint};

fn tmp_entries(store: &Store) -> usize {
    std::fs::read_dir(support::tmp_dir(store)).map_or(0, |d| d.count())
}

fn policy(compression: Compression, mode: OnStoreError) -> Policy {
    Policy::builder()
        .max_inline_bytes(4096)
        .render(Render::Raw)
        .compression(compression)
        .durability(Durability::Durable)
        .on_store_error(mode)
        .build()
        .unwrap()
}

/// Every fault point, ENOSPC, EIO, EROFS and EACCES, at every N a store
/// operation reaches: a bounded preview with an honest notice, no temp file
/// left, no panic, and a store that still verifies. Prints the tally.
#[test]
fn every_injected_fault_leaves_an_honest_preview_and_a_consistent_store() {
    let input = support::tool_output(77, 3 << 20);
    let points = [
        FaultPoint::Create,
        FaultPoint::Write,
        FaultPoint::Fsync,
        FaultPoint::Publish,
        FaultPoint::DirFsync,
    ];
    let errnos = [
        (libc::ENOSPC, "No space left", StoreErrorKind::NoSpace),
        (libc::EIO, "Input/output error", StoreErrorKind::OtherIo),
        (
            libc::EROFS,
            "Read-only file system",
            StoreErrorKind::ReadOnly,
        ),
        (
            libc::EACCES,
            "Permission denied",
            StoreErrorKind::PermissionDenied,
        ),
    ];
    let mut tally = Vec::new();
    for compression in [Compression::None, Compression::Zstd { level: 1 }] {
        for point in points {
            // How many calls does one store operation make at this point?
            let counting = FaultPlan::counting();
            {
                let dir = tempfile::tempdir().unwrap();
                let store = Store::open(dir.path())
                    .unwrap()
                    .with_faults(counting.clone());
                let o = Spiller::new(policy(compression, OnStoreError::Preview), store)
                    .unwrap()
                    .apply(&input)
                    .unwrap();
                assert!(o.store_error.is_none());
            }
            let calls = counting.calls(point);
            assert!(calls >= 1, "{point:?} is never reached");
            let mut runs = 0;
            for (errno, text, kind) in errnos {
                for nth in 1..=calls {
                    let dir = tempfile::tempdir().unwrap();
                    let store = Store::open(dir.path())
                        .unwrap()
                        .with_faults(FaultPlan::new(point, nth, errno));
                    let p = policy(compression, OnStoreError::Preview);
                    let o = Spiller::new(p.clone(), store.clone())
                        .unwrap()
                        .apply(&input)
                        .unwrap();
                    support::check_rules(&input, &p, &o);
                    let err = o
                        .store_error
                        .as_ref()
                        .map(|f| f.message.as_str())
                        .unwrap_or_else(|| panic!("{point:?} #{nth}: no error reported"));
                    assert!(err.contains(text), "{point:?} #{nth}: {err}");
                    assert_eq!(
                        o.store_error.as_ref().map(|f| f.kind),
                        Some(kind),
                        "{point:?} #{nth}: {err}"
                    );
                    assert!(o.spill.is_none());
                    assert!(
                        o.content.contains("The full output could not be saved"),
                        "{point:?} #{nth}"
                    );
                    assert!(o
                        .content
                        .ends_with(std::str::from_utf8(&input[input.len() - 30..]).unwrap()));
                    assert_eq!(tmp_entries(&store), 0, "{point:?} #{nth}: temp file left");
                    let report = store.verify_all(Duration::ZERO, &mut |_, _| {}).unwrap();
                    assert!(
                        report.corrupt.is_empty(),
                        "{point:?} #{nth}: {:?}",
                        report.corrupt
                    );
                    // Only a fault after the object was linked can leave it,
                    // and then it is complete.
                    for obj in store.list().unwrap() {
                        assert_eq!(point, FaultPoint::DirFsync);
                        assert_eq!(store.read(&obj.id, &Selection::All).unwrap(), input);
                    }
                    runs += 1;
                }
            }
            // Fail mode: a clear error that hands the preview back.
            let dir = tempfile::tempdir().unwrap();
            let store = Store::open(dir.path()).unwrap().with_faults(FaultPlan::new(
                point,
                1,
                libc::ENOSPC,
            ));
            let e = Spiller::new(policy(compression, OnStoreError::Fail), store.clone())
                .unwrap()
                .apply(&input)
                .unwrap_err();
            assert!(e.to_string().contains("No space left"), "{e}");
            assert!(e.outcome().content.len() <= 4096);
            assert_eq!(tmp_entries(&store), 0);
            tally.push(format!(
                "| {} | {:?} | {calls} | {runs} |",
                compression.name(),
                point
            ));
        }
    }
    println!("| compression | fault point | calls per operation | faulty runs (x4 errnos) |");
    println!("|---|---|---|---|");
    for row in tally {
        println!("{row}");
    }
}

/// A temp directory full of junk (files, folders, a link out of the store, a
/// FIFO): writes still work, cleanup removes the junk without following the
/// link, and reads never return wrong bytes.
#[test]
fn junk_in_the_temp_directory_is_cleaned_without_following_links() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("store")).unwrap();
    store
        .put(
            b"seed",
            Compression::None.write_options(Durability::Relaxed),
        )
        .unwrap();
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("precious"), b"do not touch").unwrap();
    let tmp = support::tmp_dir(&store);
    std::fs::write(tmp.join("junk.tmp"), b"garbage").unwrap();
    std::fs::create_dir_all(tmp.join("a-dir/nested")).unwrap();
    std::os::unix::fs::symlink(&outside, tmp.join("link-out")).unwrap();
    let fifo = std::ffi::CString::new(tmp.join("fifo").to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let input = support::tool_output(5, 100_000);
    let o = Spiller::new(Policy::default(), store.clone())
        .unwrap()
        .apply(&input)
        .unwrap();
    assert!(o.store_error.is_none());
    let report = store.verify_all(Duration::ZERO, &mut |_, _| {}).unwrap();
    assert_eq!(report.temp_removed, 4);
    assert_eq!(
        std::fs::read(outside.join("precious")).unwrap(),
        b"do not touch"
    );
    assert_eq!(
        store.read(&o.spill.unwrap().id, &Selection::All).unwrap(),
        input
    );
}

/// Content the store holds already is reported stored, whatever fault the
/// write meets (a full disk, a read-only or failing one, at the temp file's
/// creation, a write, its fsync or its publishing): whole or streamed, just
/// over the budget or large, raw or zstd, the same hit in every mode. A
/// damaged copy is never that hit: it is set aside and the fault reported.
#[test]
fn content_already_stored_is_a_hit_whatever_fault_the_write_meets() {
    let points = [
        FaultPoint::Create,
        FaultPoint::Write,
        FaultPoint::Fsync,
        FaultPoint::Publish,
    ];
    for size in [4500, 300_000, 3 << 20] {
        let input = support::tool_output(31, size);
        for compression in [Compression::None, Compression::Zstd { level: 1 }] {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::open(dir.path()).unwrap();
            let p = policy(compression, OnStoreError::Preview);
            let first = Spiller::new(p.clone(), store.clone())
                .unwrap()
                .apply(&input)
                .unwrap();
            let first = first.spill.expect("stored");
            for point in points {
                for errno in [libc::ENOSPC, libc::EROFS, libc::EIO] {
                    for nth in [1, 2] {
                        let faulty = store.with_faults(FaultPlan::new(point, nth, errno));
                        let s = Spiller::new(p.clone(), faulty.clone()).unwrap();
                        for (way, o) in [
                            ("whole", s.apply(&input).unwrap()),
                            ("streamed", support::apply_chunked(&s, &input, &[4093])),
                        ] {
                            let what =
                                format!("{size} {compression:?} {point:?} #{nth} {errno} {way}");
                            assert!(o.store_error.is_none(), "{what}: {:?}", o.store_error);
                            let spill = o.spill.as_ref().unwrap_or_else(|| panic!("{what}"));
                            assert!(spill.dedup, "{what}");
                            assert_eq!(spill.id, first.id, "{what}");
                            assert_eq!(tmp_entries(&store), 0, "{what}: temp file left");
                        }
                    }
                }
            }
            // A damaged copy, same size: set aside, and the fault reported.
            let path = std::path::PathBuf::from(&first.path);
            let mut bytes = std::fs::read(&path).unwrap();
            let mid = bytes.len() / 2;
            bytes[mid] ^= 1;
            std::fs::write(&path, &bytes).unwrap();
            let faulty = store.with_faults(FaultPlan::new(FaultPoint::Write, 1, libc::ENOSPC));
            let o =
                support::apply_chunked(&Spiller::new(p.clone(), faulty).unwrap(), &input, &[4093]);
            assert!(o.spill.is_none(), "{size}: a damaged copy was a hit");
            assert!(o.store_error.is_some(), "{size}");
            assert!(!path.exists(), "{size}: the damaged copy is still in place");
        }
    }
}
