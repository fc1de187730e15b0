//! The store: round trips, dedup, verification, hostile paths and failures.
// Tests damage stores on purpose and drive them from threads of their
// own; the rules of clippy.toml are the library's.
#![allow(clippy::disallowed_methods)]

mod support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use spillway::{
    ByteRange, Compression, Durability, Encoding, IdPrefix, LineRange, OnStoreError, Policy,
    Render, Selection, Spiller, Store, StoreError, StoreErrorKind,
};
use support::*;

const RAW: Compression = Compression::None;
const ZSTD: Compression = Compression::Zstd { level: 1 };

fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(files_under(&p));
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn objects_round_trip_raw_and_zstd_and_ids_are_blake3() {
    let (_d, store) = temp_store();
    let data = tool_output(1, 3 << 20);
    for c in [RAW, ZSTD, Compression::Zstd { level: 3 }] {
        let s = store
            .put(&data, c.write_options(Durability::Durable))
            .unwrap();
        assert_eq!(s.id.to_hex(), blake3::hash(&data).to_hex().as_str());
        assert_eq!(store.read(&s.id, &Selection::All).unwrap(), data);
    }
    let s = store
        .put(b"", ZSTD.write_options(Durability::Durable))
        .unwrap();
    assert_eq!(store.read(&s.id, &Selection::All).unwrap(), b"");
}

#[test]
fn a_second_write_of_the_same_content_stores_nothing_new() {
    let (_d, store) = temp_store();
    let data = tool_output(2, 200_000);
    let first = store
        .put(&data, ZSTD.write_options(Durability::Durable))
        .unwrap();
    assert!(!first.dedup);
    let before = files_under(support::store_dir(&store));
    let old = fs::metadata(&first.path).unwrap().modified().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    // Also through the streaming writer, and with the other compression.
    for c in [ZSTD, RAW] {
        let mut w = store.writer(c.write_options(Durability::Durable)).unwrap();
        for chunk in data.chunks(4097) {
            w.write_all(chunk).unwrap();
        }
        let again = w.finish().unwrap();
        assert!(again.dedup);
        assert_eq!(again.path, first.path);
    }
    assert_eq!(files_under(support::store_dir(&store)), before);
    let new = fs::metadata(&first.path).unwrap().modified().unwrap();
    assert!(new > old, "a dedup hit refreshes the object's mtime");
}

#[test]
fn objects_and_directories_are_private() {
    let (_d, store) = temp_store();
    let s = store
        .put(b"secret\n", RAW.write_options(Durability::Durable))
        .unwrap();
    let mode = |p: &std::path::Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&s.path), 0o600);
    assert_eq!(mode(support::store_dir(&store)), 0o700);
    assert_eq!(mode(s.path.parent().unwrap()), 0o700);
    assert_eq!(mode(&support::tmp_dir(&store)), 0o700);
}

#[test]
fn corrupt_and_truncated_objects_are_errors_never_wrong_bytes() {
    let (_d, store) = temp_store();
    let data = tool_output(3, 100_000);
    for c in [RAW, ZSTD] {
        let s = store
            .put(&data, c.write_options(Durability::Relaxed))
            .unwrap();
        let good = fs::read(&s.path).unwrap();
        let mut damaged: Vec<Vec<u8>> = Vec::new();
        for at in [0, good.len() / 2, good.len() - 1] {
            let mut b = good.clone();
            b[at] ^= 0x01;
            damaged.push(b);
        }
        damaged.push(good[..good.len() / 2].to_vec());
        damaged.push(Vec::new());
        damaged.push([good.clone(), b"extra".to_vec()].concat());
        for bytes in damaged {
            for sel in [
                Selection::All,
                Selection::Lines("1:2".parse().unwrap()),
                Selection::Bytes("0:10".parse().unwrap()),
            ] {
                fs::write(&s.path, &bytes).unwrap();
                match store.read(&s.id, &sel) {
                    Err(StoreError::Corrupt { id, .. }) => assert_eq!(id, s.id),
                    other => panic!("{c:?}: expected Corrupt, got {other:?}"),
                }
                // The read set it aside: nobody is served it again.
                assert!(
                    !s.path.exists(),
                    "{c:?}: the corrupt object was left in place"
                );
                match store.read(&s.id, &sel) {
                    Err(StoreError::NotFound { .. }) => {}
                    other => panic!("{c:?}: expected NotFound, got {other:?}"),
                }
            }
            // Writing the content again repairs the object.
            let again = store
                .put(&data, c.write_options(Durability::Relaxed))
                .unwrap();
            assert!(!again.dedup);
            assert_eq!(store.read(&s.id, &Selection::All).unwrap(), data);
        }
        fs::remove_file(&s.path).unwrap();
    }
}

#[test]
fn symlinks_are_never_followed() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("elsewhere");
    fs::create_dir(&target).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let store = Store::open(&link).unwrap();
    let err = store
        .put(b"x", RAW.write_options(Durability::Relaxed))
        .unwrap_err();
    assert!(matches!(err, StoreError::Symlink { .. }), "{err}");
    assert!(
        fs::read_dir(&target).unwrap().next().is_none(),
        "nothing written through the link"
    );

    // An object path that is a symlink is refused on read and replaced on write.
    let (_d, store) = temp_store();
    let s = store
        .put(b"real\n", RAW.write_options(Durability::Relaxed))
        .unwrap();
    let decoy = dir.path().join("decoy");
    fs::write(&decoy, b"real\n").unwrap();
    fs::remove_file(&s.path).unwrap();
    std::os::unix::fs::symlink(&decoy, &s.path).unwrap();
    assert!(matches!(
        store.read(&s.id, &Selection::All),
        Err(StoreError::Symlink { .. })
    ));
    let again = store
        .put(b"real\n", RAW.write_options(Durability::Relaxed))
        .unwrap();
    assert!(!fs::symlink_metadata(&again.path)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        fs::read(&decoy).unwrap(),
        b"real\n",
        "the link's target is untouched"
    );
    assert_eq!(store.read(&s.id, &Selection::All).unwrap(), b"real\n");
}

#[test]
fn ranges_select_exactly_and_bad_ranges_are_clear_errors() {
    let (_d, store) = temp_store();
    let text = b"one\ntwo\r\nthree\nfour";
    let s = store
        .put(text, ZSTD.write_options(Durability::Relaxed))
        .unwrap();
    let read = |sel: &str, lines: bool| {
        let sel = if lines {
            Selection::Lines(sel.parse::<LineRange>().unwrap())
        } else {
            Selection::Bytes(sel.parse::<ByteRange>().unwrap())
        };
        store.read(&s.id, &sel)
    };
    let lines: Vec<&[u8]> = vec![b"one\n", b"two\r\n", b"three\n", b"four"];
    for a in 1..=4 {
        for b in a..=6 {
            let want: Vec<u8> = lines[a - 1..b.min(4)].concat();
            assert_eq!(read(&format!("{a}:{b}"), true).unwrap(), want, "{a}:{b}");
        }
    }
    assert_eq!(read("3:", true).unwrap(), b"three\nfour");
    assert_eq!(read(":1", true).unwrap(), b"one\n");
    assert_eq!(read("2:5", false).unwrap(), b"e\nt");
    assert_eq!(read("15:", false).unwrap(), b"four");
    assert_eq!(read("19:", false).unwrap(), b"");
    assert!(matches!(
        read("5:9", true),
        Err(StoreError::OutOfRange { .. })
    ));
    assert!(matches!(
        read("20:", false),
        Err(StoreError::OutOfRange { .. })
    ));
    for bad in ["3:2", "0:1", "a:b", "1-2", "-1:2", "1.5:2", ""] {
        assert!(bad.parse::<LineRange>().is_err(), "{bad}");
    }
    assert!("9:3".parse::<ByteRange>().is_err());
}

#[test]
fn prefixes_resolve_uniquely() {
    let (_d, store) = temp_store();
    let s = store
        .put(b"abc", RAW.write_options(Durability::Relaxed))
        .unwrap();
    let hex = s.id.to_hex();
    let p: IdPrefix = hex[..8].parse().unwrap();
    assert_eq!(store.resolve(&p).unwrap(), s.id);
    // Two objects sharing a prefix: plant a second name in the shard.
    let twin = format!("{}{}", &hex[2..8], "0".repeat(56));
    fs::write(s.path.parent().unwrap().join(twin), b"x").unwrap();
    assert!(matches!(
        store.resolve(&p),
        Err(StoreError::Ambiguous { matches: 2, .. })
    ));
    assert_eq!(store.resolve(&hex[..12].parse().unwrap()).unwrap(), s.id);
    let missing: IdPrefix = "ffffffff".parse().unwrap();
    assert!(matches!(
        store.resolve(&missing),
        Err(StoreError::NotFound { .. })
    ));
}

#[test]
fn a_store_that_cannot_be_written_still_gives_a_bounded_preview() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("not-a-dir");
    fs::write(&root, b"a file where the store should be").unwrap();
    let store = Store::open(&root).unwrap();
    let input = tool_output(4, 500_000);
    let policy = policy(4096, None, 30, ZSTD);
    let o = Spiller::new(policy.clone(), store.clone())
        .unwrap()
        .apply(&input)
        .unwrap();
    check_rules(&input, &policy, &o);
    assert!(o.spill.is_none());
    let err = o.store_error.as_ref().map(|f| f.message.as_str()).unwrap();
    assert!(err.contains("not-a-dir"), "{err}");
    assert_eq!(
        o.store_error.as_ref().map(|f| f.kind),
        Some(StoreErrorKind::NotRegularFile)
    );
    assert!(o.content.contains("could not be saved"));
    assert!(o
        .content
        .ends_with(std::str::from_utf8(&input[input.len() - 20..]).unwrap()));

    // In fail mode, finish fails but hands the preview back.
    let fail = Policy::builder()
        .max_inline_bytes(4096)
        .render(Render::Raw)
        .on_store_error(OnStoreError::Fail)
        .build()
        .unwrap();
    let e = Spiller::new(fail, store)
        .unwrap()
        .apply(&input)
        .unwrap_err();
    assert!(e.to_string().contains("could not store the full output"));
    assert_eq!(e.outcome().content, o.content);
}

#[test]
fn past_max_spill_bytes_the_stream_is_counted_and_the_tail_is_the_true_end() {
    let (_d, store) = temp_store();
    let input = tool_output(5, 300_000);
    let policy = Policy::builder()
        .max_inline_bytes(4096)
        .max_spill_bytes(100_000)
        .render(Render::Raw)
        .durability(Durability::Relaxed)
        .build()
        .unwrap();
    let o = Spiller::new(policy.clone(), store.clone())
        .unwrap()
        .apply(&input)
        .unwrap();
    check_rules(&input, &policy, &o);
    let s = o.spill.as_ref().unwrap();
    assert!(s.truncated);
    assert_eq!(s.bytes, 100_000);
    assert_eq!(
        store.read(&s.id, &Selection::All).unwrap(),
        &input[..100_000]
    );
    let unstored = input.len() - 100_000;
    assert!(
        o.content
            .contains(&format!("the last {unstored} bytes were not")),
        "{}",
        o.content
    );
    assert_eq!(o.total_bytes, input.len() as u64);
}

#[test]
fn no_temp_file_survives_a_finished_or_abandoned_writer() {
    let (_d, store) = temp_store();
    let mut w = store
        .writer(ZSTD.write_options(Durability::Relaxed))
        .unwrap();
    w.write_all(&tool_output(6, 3 << 20)).unwrap();
    drop(w);
    let w = store
        .writer(RAW.write_options(Durability::Relaxed))
        .unwrap();
    w.finish().unwrap();
    assert_eq!(fs::read_dir(support::tmp_dir(&store)).unwrap().count(), 0);
}

fn relaxed(c: Compression) -> spillway::WriteOptions {
    c.write_options(Durability::Relaxed)
}

fn flip_a_byte(path: &std::path::Path) {
    let mut bytes = fs::read(path).unwrap();
    bytes[0] ^= 0x20;
    fs::write(path, bytes).unwrap();
}

/// A bad raw copy must not hide a good zstd copy of the same id, and a
/// write must not leave a bad copy in place under either name.
#[test]
fn one_id_resolves_to_its_good_copy_whatever_sits_beside_it() {
    let (_d, store) = temp_store();
    let data = tool_output(21, 200_000);
    let raw = store.put(&data, relaxed(RAW)).unwrap();
    flip_a_byte(&raw.path);
    // Stored again with zstd: a good copy exists, and the bad one is gone.
    let z = store.put(&data, relaxed(ZSTD)).unwrap();
    assert_eq!(z.encoding, Encoding::Zstd);
    assert!(!z.dedup);
    assert!(!raw.path.exists(), "the corrupt raw copy was left in place");
    assert_eq!(store.read(&z.id, &Selection::All).unwrap(), data);
    assert_eq!(store.stats().unwrap().quarantined, 1);
    // A third write, raw, reuses the good zstd copy.
    let again = store.put(&data, relaxed(RAW)).unwrap();
    assert!(again.dedup && again.encoding == Encoding::Zstd);

    // A bad copy that appears later (not through a write) never hides the
    // good one from a read.
    fs::write(&raw.path, b"garbage under the raw name").unwrap();
    assert_eq!(store.read(&z.id, &Selection::All).unwrap(), data);
    assert_eq!(
        store
            .read(&z.id, &Selection::Lines("1:1".parse().unwrap()))
            .unwrap(),
        data[..=data.iter().position(|&b| b == b'\n').unwrap()]
    );
    assert!(store.verify(&z.id).is_ok());
}

/// A directory or a link at an object name: reads fall through to the good
/// copy, and verify reports and moves the thing aside.
#[test]
fn verify_quarantines_what_is_not_a_regular_file_at_an_object_name() {
    for what in ["directory", "symbolic link", "fifo"] {
        let (d, store) = temp_store();
        let data = tool_output(22, 100_000);
        let z = store.put(&data, relaxed(ZSTD)).unwrap();
        let raw_name = support::object_file(&store, &z.id, Encoding::Raw);
        match what {
            "directory" => fs::create_dir(&raw_name).unwrap(),
            "symbolic link" => {
                let decoy = d.path().join("decoy");
                fs::write(&decoy, &data).unwrap();
                std::os::unix::fs::symlink(&decoy, &raw_name).unwrap();
            }
            _ => {
                let c = std::ffi::CString::new(raw_name.to_str().unwrap()).unwrap();
                // SAFETY: mkfifo reads a valid NUL-terminated path.
                assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            }
        }
        assert_eq!(store.read(&z.id, &Selection::All).unwrap(), data, "{what}");
        let report = store.verify_all(Duration::ZERO, &mut |_, _| {}).unwrap();
        assert_eq!(report.not_regular.len(), 1, "{what}: {report:?}");
        assert!(report.not_regular[0].quarantined.is_some(), "{what}");
        assert!(
            fs::symlink_metadata(&raw_name).is_err(),
            "{what}: still there"
        );
        let again = store.verify_all(Duration::ZERO, &mut |_, _| {}).unwrap();
        assert!(again.not_regular.is_empty() && again.corrupt.is_empty());
        assert_eq!(again.ok, 1);
    }
}

/// `v1/objects` or a shard replaced by a link: nothing is read through it.
#[test]
fn reads_never_pass_through_a_linked_directory_inside_the_store() {
    for linked in ["shard", "objects"] {
        let (d, store) = temp_store();
        let data = tool_output(23, 50_000);
        let s = store.put(&data, relaxed(RAW)).unwrap();
        let real = if linked == "shard" {
            s.path.parent().unwrap().to_path_buf()
        } else {
            support::objects_dir(&store).to_path_buf()
        };
        let moved = d.path().join("moved-away");
        fs::rename(&real, &moved).unwrap();
        std::os::unix::fs::symlink(&moved, &real).unwrap();
        let err = store.read(&s.id, &Selection::All).unwrap_err();
        assert!(matches!(err, StoreError::Symlink { .. }), "{linked}: {err}");
        assert!(store.verify(&s.id).is_err(), "{linked}");
        match linked {
            "objects" => {
                let e = store
                    .verify_all(Duration::ZERO, &mut |_, _| {})
                    .unwrap_err();
                assert!(matches!(e, StoreError::Symlink { .. }), "{e}");
                assert!(store.list().is_err());
            }
            _ => {
                let report = store.verify_all(Duration::ZERO, &mut |_, _| {}).unwrap();
                assert_eq!(report.not_regular.len(), 1, "{report:?}");
                assert_eq!(report.not_regular[0].kind, "symbolic link");
                assert_eq!(report.ok, 0);
            }
        }
        // What the link pointed at is untouched.
        assert!(moved.exists());
    }
}

/// A zstd object whose trailer declares more than any object may hold is
/// refused before anything is decompressed; `max_spill_bytes` has the same
/// ceiling.
#[test]
fn a_trailer_declaring_more_than_any_object_holds_is_refused() {
    let (_d, store) = temp_store();
    let data = b"small\n".repeat(100);
    let z = store.put(&data, relaxed(ZSTD)).unwrap();
    let mut bytes = fs::read(&z.path).unwrap();
    let n = bytes.len();
    bytes[n - 8..].copy_from_slice(&(spillway::MAX_OBJECT_BYTES + 1).to_le_bytes());
    fs::write(&z.path, bytes).unwrap();
    let err = store.read(&z.id, &Selection::All).unwrap_err();
    assert!(
        err.to_string().contains("more than any object holds"),
        "{err}"
    );
    let too_big = Policy::builder()
        .max_spill_bytes(spillway::MAX_OBJECT_BYTES + 1)
        .build()
        .unwrap_err();
    assert!(too_big.to_string().contains("above the limit"), "{too_big}");
}

/// Output zstd cannot shrink (already compressed, random) is stored raw
/// under a zstd policy, so it costs what the raw path costs; text is still
/// compressed, and either reads back exactly.
#[test]
fn incompressible_output_is_stored_raw_under_a_zstd_policy() {
    let (_d, store) = temp_store();
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let random: Vec<u8> = (0..1 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let r = store.put(&random, relaxed(ZSTD)).unwrap();
    assert_eq!(r.encoding, Encoding::Raw);
    assert_eq!(r.stored_bytes, random.len() as u64);
    assert_eq!(store.read(&r.id, &Selection::All).unwrap(), random);
    let text = tool_output(31, 1 << 20);
    let t = store.put(&text, relaxed(ZSTD)).unwrap();
    assert_eq!(t.encoding, Encoding::Zstd);
    assert!(t.stored_bytes * 3 < text.len() as u64);
    // Through the stage too: the outcome says what the object is.
    let p = policy(4096, None, 30, ZSTD);
    let o = Spiller::new(p, store.clone())
        .unwrap()
        .apply(&random[..500_000])
        .unwrap();
    assert_eq!(o.spill.unwrap().encoding, Encoding::Raw);
}

/// `apply` stores a large input whole (hashed first, on a thread of its
/// own) where a stage streams it: the outcome is the stream's, field for
/// field, for every kind of input and policy, and so is the object.
#[test]
fn a_whole_input_is_stored_as_its_stream_would_be() {
    let text = tool_output(31, 3 << 20);
    let mut binary = tool_output(32, 2 << 20);
    binary[1000] = 0;
    let json = {
        let items: Vec<String> = (0..60_000)
            .map(|i| format!("{{\"id\":{i},\"name\":\"item {i}\"}}"))
            .collect();
        format!("{{\"items\":[{}]}}", items.join(",")).into_bytes()
    };
    let base = |c: Compression| {
        let mut b = Policy::builder();
        b.max_inline_bytes(8000)
            .compression(c)
            .durability(Durability::Relaxed);
        b
    };
    let policies: Vec<(&str, Policy)> = vec![
        ("raw render, raw", {
            let mut b = base(Compression::None);
            b.render(Render::Raw);
            b.build().unwrap()
        }),
        (
            "terminal, zstd",
            base(Compression::Zstd { level: 1 }).build().unwrap(),
        ),
        ("json", {
            let mut b = base(Compression::None);
            b.format(spillway::Format::Auto);
            b.build().unwrap()
        }),
        ("cut at 1 MiB", {
            let mut b = base(Compression::None);
            b.max_spill_bytes(1 << 20);
            b.build().unwrap()
        }),
    ];
    for (name, policy) in policies {
        for (kind, input) in [("text", &text), ("binary", &binary), ("json", &json)] {
            let (_a, whole_store) = temp_store();
            let (_b, stream_store) = temp_store();
            let whole = Spiller::new(policy.clone(), whole_store.clone()).unwrap();
            let stream = Spiller::new(policy.clone(), stream_store.clone()).unwrap();
            let normal = |mut o: spillway::Outcome| {
                let s = o.spill.as_mut().expect("stored");
                s.path = std::path::PathBuf::new();
                s.modified = None;
                o
            };
            let a = whole.apply(input).unwrap();
            let b = apply_chunked(&stream, input, &[64 << 10]);
            let what = format!("{name}, {kind}");
            assert_eq!(normal(a.clone()), normal(b), "{what}");
            let s = a.spill.as_ref().unwrap();
            assert!(!s.dedup, "{what}");
            let read = whole_store.read(&s.id, &Selection::All).unwrap();
            assert_eq!(read.len() as u64, s.bytes, "{what}");
            assert_eq!(read, input[..read.len()], "{what}");
            // Again: a hit, found without writing, and the same outcome.
            let again = whole.apply(input).unwrap();
            assert!(again.spill.as_ref().unwrap().dedup, "{what}");
            let mut was = normal(a);
            was.spill.as_mut().unwrap().dedup = true;
            assert_eq!(normal(again), was, "{what}");
            assert_eq!(fs::read_dir(tmp_dir(&whole_store)).unwrap().count(), 0);
        }
    }
}

/// A hit is checked against the content, not taken on its name: a copy
/// whose bytes differ (same length) is set aside and the content stored
/// again, and a copy of the wrong length likewise.
#[test]
fn a_hit_compares_the_copy_with_the_content() {
    let (_d, store) = temp_store();
    let data = tool_output(33, 300_000);
    for damage in [
        |b: &mut Vec<u8>| b[150_000] ^= 1,
        |b: &mut Vec<u8>| b.truncate(b.len() - 1),
        |b: &mut Vec<u8>| b.push(b'\n'),
    ] {
        let first = store.put(&data, relaxed(RAW)).unwrap();
        let mut bytes = fs::read(&first.path).unwrap();
        damage(&mut bytes);
        fs::write(&first.path, &bytes).unwrap();
        let again = store.put(&data, relaxed(RAW)).unwrap();
        assert!(!again.dedup);
        assert_eq!(store.read(&again.id, &Selection::All).unwrap(), data);
    }
    // From 1 MiB the write runs while the hash is made, and stops when a
    // copy is found: a copy that then proves different is set aside and
    // the content written after all.
    let big = tool_output(34, 3 << 20);
    let first = store.put(&big, relaxed(RAW)).unwrap();
    let mut bytes = fs::read(&first.path).unwrap();
    bytes[2 << 20] ^= 1;
    fs::write(&first.path, &bytes).unwrap();
    let again = store.put(&big, relaxed(RAW)).unwrap();
    assert!(!again.dedup);
    assert_eq!(store.read(&again.id, &Selection::All).unwrap(), big);
    let hit = store.put(&big, relaxed(RAW)).unwrap();
    assert!(hit.dedup);
    assert_eq!(fs::read_dir(tmp_dir(&store)).unwrap().count(), 0);
    // A zstd copy: its trailer and its decompressed bytes are compared.
    let z = store.put(&data, relaxed(ZSTD)).unwrap();
    assert!(z.dedup, "the raw copy serves a zstd write");
    fs::remove_file(&z.path).unwrap();
    let z = store.put(&data, relaxed(ZSTD)).unwrap();
    assert_eq!(z.encoding, Encoding::Zstd);
    let hit = store.put(&data, relaxed(ZSTD)).unwrap();
    assert!(hit.dedup && hit.encoding == Encoding::Zstd);
    assert_eq!(store.stats().unwrap().quarantined, 4);
}

/// `verify` hashes a large raw object from a mapping: a damaged one is
/// still found and set aside, and a sound one still passes.
#[test]
fn verify_finds_damage_in_a_large_raw_object() {
    let (_d, store) = temp_store();
    let good = store.put(&tool_output(35, 5 << 20), relaxed(RAW)).unwrap();
    let bad = store.put(&tool_output(36, 3 << 20), relaxed(RAW)).unwrap();
    let mut bytes = fs::read(&bad.path).unwrap();
    bytes[(3 << 20) - 7] ^= 0x40;
    fs::write(&bad.path, &bytes).unwrap();
    let report = store
        .verify_all(Duration::from_secs(900), &mut |_, _| {})
        .unwrap();
    assert_eq!(report.ok, 1);
    assert_eq!(report.ok_bytes, good.bytes);
    assert_eq!(report.corrupt.len(), 1);
    assert_eq!(report.corrupt[0].id, bad.id);
    assert!(!bad.path.exists() && good.path.exists());
}

/// The common case: an output a little over its budget (1.05x to 2x), with
/// a budget large enough that `apply` stores it whole, gives the stream's
/// outcome, terminal render and raw alike, and the stored bytes are the
/// input's.
#[test]
fn a_whole_input_just_over_its_budget_is_stored_as_its_stream_would_be() {
    let budget = 1usize << 20;
    let log = tool_output(37, 2 * budget + 4096);
    for render in [Render::Terminal, Render::Raw] {
        let mut b = Policy::builder();
        b.max_inline_bytes(budget as u64)
            .compression(Compression::None)
            .durability(Durability::Relaxed)
            .render(render);
        let policy = b.build().unwrap();
        for factor in [1.05, 1.2, 1.5, 2.0] {
            let input = &log[..(budget as f64 * factor) as usize];
            let (_a, whole_store) = temp_store();
            let (_b, stream_store) = temp_store();
            let a = Spiller::new(policy.clone(), whole_store.clone())
                .unwrap()
                .apply(input)
                .unwrap();
            let b = apply_chunked(
                &Spiller::new(policy.clone(), stream_store).unwrap(),
                input,
                &[64 << 10],
            );
            let what = format!("{render:?} at {factor}x");
            assert!(a.spilled, "{what}");
            assert!(a.content.len() <= budget, "{what}");
            assert_eq!(a.content, b.content, "{what}");
            assert_eq!(
                a.spill.as_ref().unwrap().id,
                b.spill.as_ref().unwrap().id,
                "{what}"
            );
            let s = a.spill.unwrap();
            assert_eq!(
                whole_store.read(&s.id, &Selection::All).unwrap(),
                input,
                "{what}"
            );
        }
    }
}
