//! One conformance suite, run against every store backend, in the manner of
//! `object_store`'s integration tests: a local directory, and (with the
//! `s3` feature) the S3 backend over `object_store`'s in-memory store, so
//! the S3 code paths (create-only puts, multipart uploads published by a
//! create-only copy, the verified cache, listings, gc's marks) run in
//! `cargo test` with no server. The S3 tests against a real server
//! (moto) stay in the slower tier (`tests/s3`).
//!
//! Each check takes a fresh store of one backend and a way to corrupt an
//! object where that backend keeps it, and runs as a test of its own per
//! backend (`local::…`, `memory::…`, `s3::…`). The crash model applies to the local
//! backend only and has its own suite (`tests/crash.rs`).
// Tests start threads of their own to drive the library; the rule that
// threads come from its thread budget is the library's.
#![allow(clippy::disallowed_methods)]

mod support;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use spillway::{
    ContentId, Durability, Encoding, GcOptions, GrepOptions, GrepPattern, IdPrefix, JsonPointer,
    Location, Policy, Selection, Spiller, Store, StoreError, StoreErrorKind, WriteOptions,
};

/// Replaces the stored bytes of an object of this id and encoding.
type Corrupt = Box<dyn Fn(&ContentId, Encoding, &[u8])>;

/// A store of one backend, what keeps it alive, and how to damage an
/// object in it.
struct Backend {
    name: &'static str,
    store: Store,
    corrupt: Corrupt,
    _dir: tempfile::TempDir,
}

fn local() -> Backend {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("store")).unwrap();
    let at = store.clone();
    Backend {
        name: "local",
        corrupt: Box::new(move |id, encoding, bytes| {
            let path = support::object_file(&at, id, encoding);
            // Objects are 0400-ish private files; replace, keeping the name.
            let tmp = path.with_extension("damaged");
            std::fs::write(&tmp, bytes).unwrap();
            std::fs::rename(&tmp, &path).unwrap();
        }),
        store,
        _dir: dir,
    }
}

#[cfg(feature = "s3")]
fn s3_in_memory() -> Backend {
    use object_store::memory::InMemory;
    use object_store::path::Path as Key;
    use object_store::ObjectStoreExt;

    let dir = tempfile::tempdir().unwrap();
    let memory = Arc::new(InMemory::new());
    let mut opts = spillway::S3Options::new("s3://conformance/some/prefix").unwrap();
    opts.client(memory.clone())
        .cache_dir(dir.path().join("cache"));
    let store = Store::open_s3(&opts).unwrap();
    Backend {
        name: "s3 over object_store's in-memory store",
        corrupt: Box::new(move |id, encoding, bytes| {
            let hex = id.to_hex();
            let suffix = if encoding == Encoding::Zstd {
                ".zst"
            } else {
                ""
            };
            let key = Key::from(format!(
                "some/prefix/v1/objects/{}/{}{suffix}",
                &hex[..2],
                &hex[2..]
            ));
            // A runtime of its own, made here: the backend may be dropped
            // inside another runtime, where no runtime may be dropped.
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            rt.block_on(memory.put(&key, bytes.to_vec().into()))
                .unwrap();
        }),
        store,
        _dir: dir,
    }
}

#[cfg(feature = "test-seams")]
fn memory() -> Backend {
    let store = Store::in_memory();
    let at = store.clone();
    Backend {
        name: "memory",
        corrupt: Box::new(move |id, encoding, bytes| {
            assert!(at.damage_in_memory(id, encoding, bytes), "no such object");
        }),
        store,
        _dir: tempfile::tempdir().unwrap(),
    }
}

/// Every backend this build has.
fn backends() -> Vec<Backend> {
    #[allow(unused_mut)]
    let mut all = vec![local()];
    #[cfg(feature = "test-seams")]
    all.push(memory());
    #[cfg(feature = "s3")]
    all.push(s3_in_memory());
    all
}

const RELAXED_RAW: WriteOptions = WriteOptions::raw().durability(Durability::Relaxed);
const RELAXED_ZSTD: WriteOptions = WriteOptions::zstd(1).durability(Durability::Relaxed);

fn numbered(lines: usize) -> Vec<u8> {
    (1..=lines)
        .map(|i| format!("line {i}\n"))
        .collect::<String>()
        .into_bytes()
}

#[test]
fn the_suite_runs_every_backend_this_build_has() {
    let expected =
        1 + usize::from(cfg!(feature = "s3")) + usize::from(cfg!(feature = "test-seams"));
    assert_eq!(backends().len(), expected);
}

fn its_location_is_named(b: Backend) {
    let loc = b.store.location();
    match loc {
        Location::Dir(d) => assert!(d.is_absolute(), "{}", b.name),
        Location::Memory => assert_eq!(loc.to_string(), "memory:"),
        Location::S3 { bucket, prefix } => {
            assert_eq!(
                (bucket.as_str(), prefix.as_str()),
                ("conformance", "some/prefix")
            );
            assert_eq!(loc.to_string(), "s3://conformance/some/prefix");
        }
        other => panic!("{}: {other:?}", b.name),
    }
    assert_eq!(b.store.is_remote(), loc.is_remote());
}

fn put_reads_back_whole_and_by_ranges_raw_and_zstd(b: Backend) {
    let s = &b.store;
    let content = numbered(5000);
    for opts in [RELAXED_RAW, RELAXED_ZSTD] {
        let stored = s.put(&content, opts).unwrap();
        assert_eq!(stored.id, ContentId::of(&content), "{}", b.name);
        assert_eq!(stored.bytes, content.len() as u64);
        assert!(!stored.truncated);
        assert_eq!(s.read(&stored.id, &Selection::All).unwrap(), content);
        let lines = s
            .read(&stored.id, &Selection::Lines("100:102".parse().unwrap()))
            .unwrap();
        assert_eq!(lines, b"line 100\nline 101\nline 102\n", "{}", b.name);
        let bytes = s
            .read(&stored.id, &Selection::Bytes("0:7".parse().unwrap()))
            .unwrap();
        assert_eq!(bytes, b"line 1\n");
        let past = s
            .read(&stored.id, &Selection::Lines("9000:9001".parse().unwrap()))
            .unwrap_err();
        assert_eq!(past.kind(), StoreErrorKind::OutOfRange, "{}", b.name);
        let mut out = Vec::new();
        let report = s.read_into(&stored.id, &Selection::All, &mut out).unwrap();
        assert_eq!(out, content);
        assert_eq!(report.bytes, content.len() as u64);
        // Only one encoding of an id is ever stored: the second put is a hit.
        if opts.encoding() == Encoding::Zstd {
            assert!(stored.dedup, "{}: the raw copy is reused", b.name);
        }
    }
    let missing = s.read(&ContentId::of(b"never stored"), &Selection::All);
    assert_eq!(
        missing.unwrap_err().kind(),
        StoreErrorKind::NotFound,
        "{}",
        b.name
    );
}

fn the_same_content_is_stored_once_whatever_the_path_to_it(b: Backend) {
    let s = &b.store;
    let content = numbered(2000);
    let first = s.put(&content, RELAXED_ZSTD).unwrap();
    assert!(!first.dedup, "{}", b.name);
    let again = s.put(&content, RELAXED_ZSTD).unwrap();
    assert!(again.dedup, "{}", b.name);
    assert_eq!(again.id, first.id);
    let mut w = s.writer(RELAXED_ZSTD).unwrap();
    for chunk in content.chunks(333) {
        w.write_all(chunk).unwrap();
    }
    let streamed = w.finish().unwrap();
    assert!(
        streamed.dedup,
        "{}: a streamed write of stored content is a hit",
        b.name
    );
    assert_eq!(s.list().unwrap().len(), 1, "{}", b.name);
    assert_eq!(s.stats().unwrap().objects, 1);
}

/// A large object: for S3, a multipart upload to a temporary key published
/// by a create-only copy; locally, a multi-frame zstd object.
fn a_large_streamed_object_reads_back_exactly(b: Backend) {
    let s = &b.store;
    let content = support::tool_output(5, 20 << 20);
    let mut w = s.writer(RELAXED_ZSTD).unwrap();
    for chunk in content.chunks(1 << 20) {
        w.write_all(chunk).unwrap();
    }
    let stored = w.finish().unwrap();
    assert_eq!(stored.bytes, content.len() as u64, "{}", b.name);
    assert_eq!(s.verify(&stored.id).unwrap().bytes, content.len() as u64);
    let tail = s
        .read(
            &stored.id,
            &Selection::Bytes(
                format!("{}:{}", content.len() - 100, content.len())
                    .parse()
                    .unwrap(),
            ),
        )
        .unwrap();
    assert_eq!(tail, &content[content.len() - 100..], "{}", b.name);
}

fn prefixes_resolve_to_one_object_or_say_why_not(b: Backend) {
    let s = &b.store;
    let stored = s.put(b"resolve me\n", RELAXED_RAW).unwrap();
    let short: IdPrefix = stored.id.to_string()[..23].parse().unwrap();
    assert_eq!(s.resolve(&short).unwrap(), stored.id, "{}", b.name);
    let full: IdPrefix = stored.id.to_string().parse().unwrap();
    assert_eq!(s.resolve(&full).unwrap(), stored.id);
    let other = ContentId::of(b"absent");
    let absent: IdPrefix = other.to_string()[..23].parse().unwrap();
    if !absent.matches(&stored.id) {
        assert_eq!(
            s.resolve(&absent).unwrap_err().kind(),
            StoreErrorKind::NotFound,
            "{}",
            b.name
        );
    }
}

fn grep_and_pointer_reads_work(b: Backend) {
    let s = &b.store;
    let mut log = numbered(3000);
    log.extend_from_slice(b"error: the one failure\n");
    log.extend_from_slice(&numbered(10));
    let stored = s.put(&log, RELAXED_ZSTD).unwrap();
    let pattern = GrepPattern::new("^error:", false).unwrap();
    let found = s
        .grep(&stored.id, &pattern, &GrepOptions::default())
        .unwrap();
    assert_eq!(found.matches, 1, "{}", b.name);
    assert_eq!(found.lines[0].line, 3001);

    let doc = br#"{"results":[{"ok":true},{"ok":false,"why":"bad input"}]}"#;
    let stored = s.put(doc, RELAXED_RAW).unwrap();
    let pointer: JsonPointer = "/results/1/why".parse().unwrap();
    let mut out = Vec::new();
    s.read_pointer(&stored.id, &pointer, &mut out).unwrap();
    assert_eq!(out, br#""bad input""#, "{}", b.name);
}

fn a_corrupt_object_is_an_error_never_wrong_bytes_and_the_read_sets_it_aside(b: Backend) {
    let s = &b.store;
    let content = numbered(1000);
    let stored = s.put(&content, RELAXED_RAW).unwrap();
    let mut damaged = content.clone();
    damaged[10] ^= 1;
    (b.corrupt)(&stored.id, Encoding::Raw, &damaged);
    let err = s.read(&stored.id, &Selection::All).unwrap_err();
    assert_eq!(err.kind(), StoreErrorKind::Corrupt, "{}: {err}", b.name);
    let mut out = Vec::new();
    assert!(s.read_into(&stored.id, &Selection::All, &mut out).is_err());
    assert!(
        out.is_empty(),
        "{}: no byte of a corrupt object goes out",
        b.name
    );
    // The read that found it damaged set it aside: it is served to no
    // one, and verify has nothing left to find.
    assert!(s.list().unwrap().is_empty(), "{}: quarantined", b.name);
    let again = s.read(&stored.id, &Selection::All).unwrap_err();
    assert_eq!(
        again.kind(),
        StoreErrorKind::NotFound,
        "{}: {again}",
        b.name
    );
    let report = s
        .verify_all(Duration::from_secs(900), &mut |_, _| {})
        .unwrap();
    assert_eq!(report.corrupt.len(), 0, "{}", b.name);
    // Stored again, it is whole again.
    let again = s.put(&content, RELAXED_RAW).unwrap();
    assert!(!again.dedup, "{}", b.name);
    assert_eq!(s.read(&again.id, &Selection::All).unwrap(), content);
}

fn gc_keeps_the_store_under_its_quota_and_spares_what_is_referenced(b: Backend) {
    let s = &b.store;
    let ids: Vec<ContentId> = (0..6)
        .map(|i| s.put(&numbered(500 + i), RELAXED_RAW).unwrap().id)
        .collect();
    let total = s.stats().unwrap().stored_bytes;
    let mut keep = spillway::References::default();
    keep.insert(ids[0]);
    let mut opts = GcOptions::default();
    opts.max_bytes = Some(total / 2);
    opts.keep = keep;
    opts.temp_grace = Duration::from_secs(900);
    let report = s.gc(&opts, &mut |_, _| {}).unwrap();
    assert!(!report.removed.is_empty(), "{}", b.name);
    assert!(report.remaining_bytes <= total / 2 || report.kept_referenced > 0);
    assert!(
        s.read(&ids[0], &Selection::All).is_ok(),
        "{}: referenced",
        b.name
    );
    for gone in &report.removed {
        assert_eq!(
            s.read(&gone.id, &Selection::All).unwrap_err().kind(),
            StoreErrorKind::NotFound,
            "{}",
            b.name
        );
    }
}

/// gc beside a writer that keeps storing and reusing content: whatever gc
/// removed, the store stays consistent, and every object the writer stored
/// after gc finished reads back.
fn gc_beside_a_concurrent_writer_leaves_a_consistent_store(b: Backend) {
    let s = b.store.clone();
    let reused = numbered(700);
    s.put(&reused, RELAXED_ZSTD).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let writer = {
        let (s, stop, done, reused) = (s.clone(), stop.clone(), done.clone(), reused.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let n = done.load(Ordering::Relaxed);
                s.put(&reused, RELAXED_ZSTD).unwrap();
                s.put(&numbered(100 + n % 50), RELAXED_RAW).unwrap();
                done.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let mut opts = GcOptions::default();
    opts.max_bytes = Some(0);
    opts.temp_grace = Duration::from_secs(900);
    // gc runs over and over while the writer makes at least 20 rounds.
    let mut runs = 0;
    while runs < 3 || done.load(Ordering::Relaxed) < 20 {
        s.gc(&opts, &mut |_, _| {}).unwrap();
        runs += 1;
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let after = s.put(&reused, RELAXED_ZSTD).unwrap();
    assert_eq!(
        s.read(&after.id, &Selection::All).unwrap(),
        reused,
        "{}",
        b.name
    );
    for obj in s.list().unwrap() {
        s.verify(&obj.id)
            .unwrap_or_else(|e| panic!("{}: {e}", b.name));
    }
    let report = s
        .verify_all(Duration::from_secs(900), &mut |_, _| {})
        .unwrap();
    assert!(
        report.corrupt.is_empty(),
        "{}: {:?}",
        b.name,
        report.corrupt
    );
}

/// The stage spills into every backend: the notice names the object where
/// the backend keeps it, and the omitted lines read back.
fn a_spill_through_the_stage_reads_back(b: Backend) {
    let all = numbered(20_000);
    // Just over the budget (the common case), half again, twice, and far over.
    let sizes = [4096 * 102 / 100, 4096 * 3 / 2, 4096 * 2, all.len()];
    let policy = Policy::builder().max_inline_bytes(4096).build().unwrap();
    let spiller = Spiller::new(policy, b.store.clone()).unwrap();
    for len in sizes {
        let input = &all[..len];
        let what = format!("{}, {len} bytes", b.name);
        let outcome = spiller.apply(input).unwrap();
        assert!(outcome.spilled && outcome.content.len() <= 4096, "{what}");
        let spill = outcome.spill.as_ref().expect("stored");
        assert_eq!(spill.bytes, len as u64, "{what}");
        let [first, last] = outcome.omitted_range.unwrap();
        let middle = b
            .store
            .read(
                &spill.id,
                &Selection::Lines(format!("{first}:{last}").parse().unwrap()),
            )
            .unwrap();
        assert_eq!(middle.len() as u64, outcome.omitted_bytes, "{what}");
        let shown: PathBuf = spill.path.clone();
        match b.store.location() {
            Location::S3 { .. } => assert!(shown
                .to_string_lossy()
                .starts_with("s3://conformance/some/prefix/v1/objects/")),
            Location::Memory => {
                assert!(shown.to_string_lossy().starts_with("memory:blake3:"))
            }
            _ => assert!(shown.starts_with(support::store_dir(&b.store))),
        }
    }
}

#[test]
fn a_backend_error_names_its_kind() {
    // A local store whose root is a file: every write fails, and says so.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("file"), b"x").unwrap();
    let s = Store::open(dir.path().join("file")).unwrap();
    let err: StoreError = s.put(b"x", RELAXED_RAW).unwrap_err();
    assert_eq!(err.kind(), StoreErrorKind::NotRegularFile);
}

/// A remote store used from inside async code, as a tokio harness uses it:
/// opened, written, read and dropped inside a task of a multi-threaded
/// runtime and of a current-thread one.
#[cfg(feature = "s3")]
#[test]
fn the_s3_backend_works_inside_an_async_runtime() {
    let runtimes = [
        tokio::runtime::Builder::new_multi_thread().build().unwrap(),
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap(),
    ];
    for rt in runtimes {
        let read = rt.block_on(async {
            let b = s3_in_memory();
            let stored = b.store.put(&numbered(3000), RELAXED_ZSTD).unwrap();
            let part = b
                .store
                .read(&stored.id, &Selection::Lines("2:3".parse().unwrap()))
                .unwrap();
            drop(b);
            part
        });
        assert_eq!(read, b"line 2\nline 3\n");
    }
}

/// A harness's own sink: what the stage spills arrives whole under the id
/// spillway computed, its failures give a bounded preview that says so, and
/// the store's reads say the sink is the harness's to read.
mod harness_sink {
    use std::sync::{Arc, Mutex};

    use spillway::{
        ContentId, Encoding, Policy, Selection, SpillSink, SpillWriter, Spiller, Store, StoreError,
        StoreErrorKind,
    };

    type Kept = Arc<Mutex<Vec<(ContentId, Vec<u8>)>>>;

    #[derive(Debug, Clone, Default)]
    struct Blobs {
        kept: Kept,
        /// Fail `begin`, fail the Nth write, or name a location too long.
        fail_begin: bool,
        fail_write_at: Option<usize>,
        overlong: bool,
    }

    struct Blob {
        blobs: Blobs,
        bytes: Vec<u8>,
        writes: usize,
    }

    impl SpillSink for Blobs {
        fn name(&self) -> String {
            "blobs".into()
        }
        fn begin(&self) -> Result<Box<dyn SpillWriter>, StoreError> {
            if self.fail_begin {
                return Err(StoreError::Config {
                    reason: "the blob service is down".into(),
                });
            }
            Ok(Box::new(Blob {
                blobs: self.clone(),
                bytes: Vec::new(),
                writes: 0,
            }))
        }
        fn max_location_len(&self) -> usize {
            "blobs/".len() + 71
        }
    }

    impl SpillWriter for Blob {
        fn write(&mut self, data: &[u8]) -> std::io::Result<()> {
            self.writes += 1;
            if self.blobs.fail_write_at == Some(self.writes) {
                return Err(std::io::Error::other("connection reset"));
            }
            self.bytes.extend_from_slice(data);
            Ok(())
        }
        fn publish(self: Box<Self>, id: &ContentId) -> Result<String, StoreError> {
            let location = if self.blobs.overlong {
                format!("blobs/{id}/and/much/more")
            } else {
                format!("blobs/{id}")
            };
            self.blobs.kept.lock().unwrap().push((*id, self.bytes));
            Ok(location)
        }
    }

    fn spiller(blobs: Blobs) -> Spiller {
        let policy = Policy::builder().max_inline_bytes(2048).build().unwrap();
        Spiller::new(policy, Store::from_sink(blobs)).unwrap()
    }

    fn input() -> Vec<u8> {
        super::numbered(50_000)
    }

    #[test]
    fn a_spill_arrives_whole_under_its_id() {
        let blobs = Blobs::default();
        let kept = blobs.kept.clone();
        let sp = spiller(blobs);
        assert_eq!(sp.store().location().to_string(), "blobs");
        let mut stage = sp.stage();
        for chunk in input().chunks(7777) {
            std::io::Write::write_all(&mut stage, chunk).unwrap();
        }
        let outcome = stage.finish().unwrap();
        assert!(outcome.spilled && outcome.content.len() <= 2048);
        let spill = outcome.spill.unwrap();
        assert_eq!(spill.id, ContentId::of(&input()));
        assert_eq!(spill.path.to_str().unwrap(), format!("blobs/{}", spill.id));
        assert_eq!(spill.encoding, Encoding::Raw);
        assert_eq!(spill.bytes, input().len() as u64);
        let kept = kept.lock().unwrap();
        assert_eq!(kept.len(), 1);
        assert_eq!((kept[0].0, &kept[0].1), (spill.id, &input()));
        // Reading back is the harness's business, and the store says so.
        let err = sp.store().read(&spill.id, &Selection::All).unwrap_err();
        assert_eq!(err.kind(), StoreErrorKind::Config, "{err}");
    }

    #[test]
    fn a_failing_sink_still_gives_a_bounded_preview_that_says_so() {
        for blobs in [
            Blobs {
                fail_begin: true,
                ..Blobs::default()
            },
            Blobs {
                fail_write_at: Some(1),
                ..Blobs::default()
            },
            Blobs {
                overlong: true,
                ..Blobs::default()
            },
        ] {
            let what = format!("{blobs:?}");
            let outcome = spiller(blobs).apply(&input()).unwrap();
            assert!(outcome.spilled && outcome.content.len() <= 2048, "{what}");
            assert!(outcome.spill.is_none(), "{what}");
            let error = outcome
                .store_error
                .as_ref()
                .map(|f| f.message.as_str())
                .unwrap();
            assert!(
                outcome.content.contains("could not be saved"),
                "{what}: {}",
                outcome.content
            );
            assert!(!error.is_empty());
        }
    }
}

/// One test per check and backend, as `object_store`'s suite runs them, so
/// that a backend that fails a check does not hide how the others do.
macro_rules! suite {
    ($($check:ident),* $(,)?) => {
        mod local {
            $(#[test] fn $check() { super::$check(super::local()) })*
        }
        #[cfg(feature = "test-seams")]
        mod memory {
            $(#[test] fn $check() { super::$check(super::memory()) })*
        }
        #[cfg(feature = "s3")]
        mod s3 {
            $(#[test] fn $check() { super::$check(super::s3_in_memory()) })*
        }
    };
}

suite!(
    its_location_is_named,
    put_reads_back_whole_and_by_ranges_raw_and_zstd,
    the_same_content_is_stored_once_whatever_the_path_to_it,
    a_large_streamed_object_reads_back_exactly,
    prefixes_resolve_to_one_object_or_say_why_not,
    grep_and_pointer_reads_work,
    a_corrupt_object_is_an_error_never_wrong_bytes_and_the_read_sets_it_aside,
    gc_keeps_the_store_under_its_quota_and_spares_what_is_referenced,
    gc_beside_a_concurrent_writer_leaves_a_consistent_store,
    a_spill_through_the_stage_reads_back,
);
