//! The object format, at the bottom of the store: what every backend
//! writes and reads, and nothing of where objects live.
//!
//! A raw object is exactly the stored bytes. A zstd object is zstd frames
//! followed by a 24-byte trailer, a skippable frame that decoders pass
//! over:
//!
//! ```text
//! offset  size  content
//! 0       F     zstd frames (RFC 8878) whose decompressed contents, in order, are the
//!               stored bytes
//! F       4     5E 2A 4D 18: the magic of a skippable frame (0x184D2A5E, little-endian)
//! F+4     4     10 00 00 00: the skippable frame's payload size, 16 (u32, little-endian)
//! F+8     8     73 70 69 6C 6C 77 79 31: "spillwy1", the trailer's tag and version
//! F+16    8     the number of decompressed bytes (u64, little-endian)
//! ```
//!
//! Every backend's reads and dedup checks go through [`check_stored`]: the
//! one function that checks stored bytes against their id.

use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use super::{ContentId, Encoding, IdPrefix, StoreError, StoredObject};

/// The length of a zstd object's trailer.
pub(crate) const TRAILER_LEN: usize = 24;
const TRAILER_MAGIC: [u8; 4] = [0x5E, 0x2A, 0x4D, 0x18];
const TRAILER_PAYLOAD: [u8; 4] = [16, 0, 0, 0];
const TRAILER_TAG: &[u8; 8] = b"spillwy1";

/// The trailer of a zstd object of `bytes` decompressed bytes.
pub(crate) fn trailer(bytes: u64) -> [u8; TRAILER_LEN] {
    let mut t = [0u8; TRAILER_LEN];
    t[..4].copy_from_slice(&TRAILER_MAGIC);
    t[4..8].copy_from_slice(&TRAILER_PAYLOAD);
    t[8..16].copy_from_slice(TRAILER_TAG);
    t[16..].copy_from_slice(&bytes.to_le_bytes());
    t
}

/// The decompressed size a trailer records, if `t` is a valid trailer.
pub(crate) fn parse_trailer(t: &[u8]) -> Option<u64> {
    if t.len() != TRAILER_LEN
        || t[..4] != TRAILER_MAGIC
        || t[4..8] != TRAILER_PAYLOAD
        || &t[8..16] != TRAILER_TAG
    {
        return None;
    }
    Some(u64::from_le_bytes(t[16..].try_into().ok()?))
}

/// Objects are read in chunks of this size.
const READ_CHUNK: usize = 1 << 20;

/// The largest zstd window a read accepts: 2^27 bytes, what level 22 uses.
const MAX_WINDOW_LOG: u32 = 27;

/// Streams the copy of one encoding through the callback it is given:
/// `Ok(None)` when there is no copy in that encoding.
pub(crate) type ScanCopy<'a> =
    dyn FnMut(Encoding, &mut dyn FnMut(&[u8])) -> Result<Option<StoredObject>, StoreError> + 'a;

/// Streams the one good copy of `id` through `f`: each encoding's copy in
/// turn (`scan` gives `None` when there is none), so a bad copy under one
/// name never hides a good copy under the other; `f(None)` says that what
/// it was given so far came from a bad copy and must be forgotten.
pub(crate) fn first_good(
    id: &ContentId,
    f: &mut dyn FnMut(Option<&[u8]>),
    scan: &mut ScanCopy<'_>,
) -> Result<StoredObject, StoreError> {
    let mut first_error = None;
    for encoding in Encoding::ALL {
        match scan(encoding, &mut |chunk| f(Some(chunk))) {
            Ok(Some(info)) => return Ok(info),
            Ok(None) => {}
            Err(e) => {
                f(None);
                first_error.get_or_insert(e);
            }
        }
    }
    Err(first_error.unwrap_or_else(|| StoreError::NotFound { id: id.to_string() }))
}

/// Streams an object's stored bytes (`stored_bytes` long, in `encoding`)
/// through `f` as content, then checks the hash against `id` (and for zstd
/// the size its trailer records): the one check every backend's reads go
/// through. `path` names the object in errors.
pub(crate) fn scan_stored<R: Read + Seek>(
    file: R,
    stored_bytes: u64,
    modified: Option<std::time::SystemTime>,
    id: &ContentId,
    path: &Path,
    encoding: Encoding,
    f: &mut dyn FnMut(&[u8]),
) -> Result<StoredObject, StoreError> {
    check_stored(file, stored_bytes, modified, id, path, encoding, None, f)
}

/// [`scan_stored`], or, with the content `against` at hand (whose hash is
/// `id`), a comparison with it instead of a hash: as sure, and cheaper.
#[allow(clippy::too_many_arguments)]
pub(crate) fn check_stored<R: Read + Seek>(
    mut file: R,
    stored_bytes: u64,
    modified: Option<std::time::SystemTime>,
    id: &ContentId,
    path: &Path,
    encoding: Encoding,
    against: Option<&[u8]>,
    f: &mut dyn FnMut(&[u8]),
) -> Result<StoredObject, StoreError> {
    let corrupt = |reason: String| StoreError::Corrupt {
        id: *id,
        path: path.to_path_buf(),
        reason,
    };
    let expected = match encoding {
        // A raw copy of the content has its length.
        Encoding::Raw => match against {
            Some(c) if stored_bytes != c.len() as u64 => {
                return Err(corrupt(format!(
                    "it holds {stored_bytes} bytes, but its content has {}",
                    c.len()
                )))
            }
            _ => None,
        },
        Encoding::Zstd => {
            if stored_bytes < TRAILER_LEN as u64 {
                return Err(corrupt("too short for a zstd object".into()));
            }
            let mut t = [0u8; TRAILER_LEN];
            file.seek(SeekFrom::End(-(TRAILER_LEN as i64)))
                .and_then(|_| file.read_exact(&mut t))
                .and_then(|_| file.rewind())
                .map_err(StoreError::io("read", path))?;
            let declared =
                parse_trailer(&t).ok_or_else(|| corrupt("missing size trailer".into()))?;
            if declared > super::MAX_OBJECT_BYTES {
                return Err(corrupt(format!(
                    "its trailer declares {declared} bytes, more than any object holds"
                )));
            }
            if let Some(c) = against.filter(|c| c.len() as u64 != declared) {
                return Err(corrupt(format!(
                    "its trailer records {declared} bytes, but its content has {}",
                    c.len()
                )));
            }
            Some(declared)
        }
    };
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; READ_CHUNK];
    let mut total: u64 = 0;
    let mut reader: Box<dyn Read + '_> = match encoding {
        Encoding::Raw => Box::new(file),
        Encoding::Zstd => {
            let mut d = zstd::stream::read::Decoder::new(file)
                .map_err(|e| corrupt(format!("zstd: {e}")))?;
            // A frame may ask for a window as large as its content (a
            // foreign "single segment" frame of hundreds of MiB): refuse
            // more than the largest window any zstd level writes, 128 MiB.
            d.window_log_max(MAX_WINDOW_LOG)
                .map_err(|e| corrupt(format!("zstd: {e}")))?;
            Box::new(d)
        }
    };
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if encoding != Encoding::Raw => return Err(corrupt(format!("zstd: {e}"))),
            Err(e) => return Err(StoreError::io("read", path)(e)),
        };
        let from = total as usize;
        total += n as u64;
        if expected.is_some_and(|want| total > want) {
            return Err(corrupt("more data than its trailer records".into()));
        }
        match against {
            Some(c) => {
                if c.get(from..from + n) != Some(&buf[..n]) {
                    return Err(corrupt(
                        "its bytes differ from the content whose id it has".into(),
                    ));
                }
            }
            None => {
                hasher.update(&buf[..n]);
            }
        }
        f(&buf[..n]);
    }
    if let Some(want) = expected {
        if total != want {
            return Err(corrupt(format!(
                "decompressed to {total} bytes, but its trailer records {want}"
            )));
        }
    }
    match against {
        Some(c) if total != c.len() as u64 => {
            return Err(corrupt(
                "its bytes differ from the content whose id it has".into(),
            ))
        }
        Some(_) => {}
        None => {
            if ContentId::from_hash(hasher.finalize()) != *id {
                return Err(corrupt("its bytes do not hash to its id".into()));
            }
        }
    }
    Ok(StoredObject {
        id: *id,
        path: path.to_path_buf(),
        bytes: total,
        stored_bytes,
        encoding,
        truncated: false,
        dedup: false,
        modified,
    })
}

/// The one id among `ids` (each listed once per encoding) that `prefix`
/// matches: [`StoreError::NotFound`] when none does,
/// [`StoreError::Ambiguous`] when several do.
pub(crate) fn one_match(
    prefix: &IdPrefix,
    ids: impl Iterator<Item = ContentId>,
) -> Result<ContentId, StoreError> {
    let mut found: Vec<ContentId> = Vec::new();
    for id in ids {
        if prefix.matches(&id) && !found.contains(&id) {
            found.push(id);
        }
    }
    match found.len() {
        0 => Err(StoreError::NotFound {
            id: prefix.to_string(),
        }),
        1 => Ok(found[0]),
        n => Err(StoreError::Ambiguous {
            prefix: prefix.to_string(),
            matches: n,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trailer_reads_back_and_nothing_else_does() {
        for n in [0, 1, 24, u64::MAX] {
            assert_eq!(parse_trailer(&trailer(n)), Some(n));
        }
        let mut t = trailer(7);
        t[9] ^= 1;
        assert_eq!(parse_trailer(&t), None);
        assert_eq!(parse_trailer(&trailer(7)[1..]), None);
    }
}
