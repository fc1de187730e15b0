//! Corrupted, truncated, oversized and garbage object files, including wrong
//! zstd frames: a read gives the right bytes or a clear error, never wrong
//! bytes, never a panic.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use spillway::{ByteRange, ContentId, Durability, LineRange, Selection};

mod common;

#[derive(Arbitrary, Debug)]
struct Case {
    zstd: bool,
    mode: u8,
    at: u32,
    content: Vec<u8>,
    junk: Vec<u8>,
}

fuzz_target!(|c: Case| {
    let store = common::store();
    let compression = if c.zstd {
        spillway::Compression::Zstd { level: 1 }
    } else {
        spillway::Compression::None
    };
    let stored = store
        .put(&c.content, compression.write_options(Durability::Relaxed))
        .expect("put");
    let good = std::fs::read(&stored.path).expect("object file");
    let at = if good.is_empty() {
        0
    } else {
        c.at as usize % good.len()
    };
    let damaged: Vec<u8> = match c.mode % 6 {
        0 => good.clone(),
        1 => {
            let mut b = good.clone();
            if !b.is_empty() {
                b[at] ^= 1 << (c.at % 8);
            }
            b
        }
        2 => good[..at].to_vec(),
        3 => c.junk.clone(),
        4 => [good.clone(), c.junk.clone()].concat(),
        // A well-formed object of other bytes under this id: a real zstd
        // frame with a valid size trailer, or raw bytes.
        _ if c.zstd => {
            let mut b = zstd::bulk::compress(&c.junk, 1).expect("compress");
            b.extend_from_slice(&[0x5E, 0x2A, 0x4D, 0x18, 16, 0, 0, 0]);
            b.extend_from_slice(b"spillwy1");
            b.extend_from_slice(&(c.junk.len() as u64).to_le_bytes());
            b
        }
        _ => c.junk.clone(),
    };
    std::fs::write(&stored.path, &damaged).expect("write");
    let id: ContentId = stored.id;
    let sels = [
        Selection::All,
        Selection::Bytes(ByteRange::from(u64::from(c.at % 64))),
        Selection::Lines(
            LineRange::new(1 + u64::from(c.at % 4), Some(2 + u64::from(c.at % 4)))
                .expect("a valid range"),
        ),
    ];
    for sel in sels {
        if let Ok(bytes) = store.read(&id, &sel) {
            // Only the true content can pass verification.
            let full = store
                .read(&id, &Selection::All)
                .expect("a partial read passed, so a whole one must");
            assert_eq!(full, c.content, "wrong bytes returned");
            if sel == Selection::All {
                assert_eq!(bytes, c.content);
            }
        }
    }
    common::clean(store);
});
