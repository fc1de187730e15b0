//! Stores that users already have keep working: small raw and zstd objects
//! written in the v1 format are committed under `tests/fixtures/store-v1`,
//! and every change must still read, list and verify them.
//!
//! Regenerate nothing here: a failure means the format changed, which needs
//! a new layout version, not new fixtures.
// Tests damage stores on purpose and drive them from threads of their
// own; the rules of clippy.toml are the library's.
#![allow(clippy::disallowed_methods)]

mod support;

use std::path::Path;
use std::time::Duration;

use spillway::{ContentId, Encoding, Selection, Store};

const RAW_TEXT: &[u8] = b"spillway v1 fixture: a raw object\nsecond line\n";
const ZSTD_TEXT: &str = "spillway v1 fixture: a zstd object\n";

fn zstd_text() -> Vec<u8> {
    ZSTD_TEXT.repeat(40).into_bytes()
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

fn fixture() -> (tempfile::TempDir, Store) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/store-v1");
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&src, &dir.path().join("store"));
    let store = Store::open(dir.path().join("store")).unwrap();
    (dir, store)
}

#[test]
fn v1_objects_written_by_earlier_versions_still_read_and_verify() {
    let (_dir, store) = fixture();
    let raw = ContentId::of(RAW_TEXT);
    let zstd = ContentId::of(&zstd_text());
    assert_eq!(store.read(&raw, &Selection::All).unwrap(), RAW_TEXT);
    assert_eq!(store.read(&zstd, &Selection::All).unwrap(), zstd_text());
    assert_eq!(
        store
            .read(&zstd, &Selection::Lines("2:3".parse().unwrap()))
            .unwrap(),
        ZSTD_TEXT.repeat(2).as_bytes()
    );
    let listed = store.list().unwrap();
    assert_eq!(listed.len(), 2);
    for o in &listed {
        let want = if o.id == raw {
            (Encoding::Raw, RAW_TEXT.len() as u64)
        } else {
            (Encoding::Zstd, zstd_text().len() as u64)
        };
        assert_eq!((o.encoding, o.bytes), want, "{}", o.id);
    }
    let report = store.verify_all(Duration::ZERO, &mut |_, _| {}).unwrap();
    assert_eq!((report.ok, report.corrupt.len()), (2, 0));
}

/// The zstd trailer, byte by byte, as `src/store/mod.rs` documents it.
#[test]
fn the_v1_zstd_trailer_is_unchanged() {
    let (_dir, store) = fixture();
    let id = ContentId::of(&zstd_text());
    let bytes = std::fs::read(support::object_file(&store, &id, Encoding::Zstd)).unwrap();
    let t = &bytes[bytes.len() - 24..];
    assert_eq!(&t[..4], &[0x5E, 0x2A, 0x4D, 0x18]);
    assert_eq!(&t[4..8], &[16, 0, 0, 0]);
    assert_eq!(&t[8..16], b"spillwy1");
    assert_eq!(&t[16..], &(zstd_text().len() as u64).to_le_bytes());
    // The rest is standard zstd: any decoder reads it.
    let plain = zstd::decode_all(&bytes[..bytes.len() - 24]).unwrap();
    assert_eq!(plain, zstd_text());
}
