//! The local directory's reads: finding an object's file (never through a
//! link), scanning it through the one check of stored bytes against their
//! id, listing the store.

use std::fs;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::super::format::{check_stored, first_good, one_match, parse_trailer, TRAILER_LEN};
use super::super::{ContentId, Encoding, IdPrefix, StoreError, StoredObject, ZSTD_SUFFIX};
use super::{open_regular, Local};

impl Local {
    /// [`Store::locate`] in the directory: a link at an object's name is an
    /// error, never followed.
    pub(crate) fn locate(&self, id: &ContentId) -> Result<(PathBuf, Encoding), StoreError> {
        for encoding in Encoding::ALL {
            let path = self.object_path(id, encoding);
            match fs::symlink_metadata(&path) {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(StoreError::Symlink { path });
                }
                Ok(_) => return Ok((path, encoding)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(StoreError::io("inspect", &path)(e)),
            }
        }
        Err(StoreError::NotFound { id: id.to_string() })
    }

    /// [`Store::resolve`] for a prefix shorter than an id: its shard listed.
    pub(crate) fn resolve_prefix(&self, prefix: &IdPrefix) -> Result<ContentId, StoreError> {
        let hex = prefix.hex();
        let shard = self.objects_dir().join(&hex[..2]);
        let entries = match fs::read_dir(&shard) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(StoreError::NotFound {
                    id: prefix.to_string(),
                })
            }
            Err(e) => return Err(StoreError::io("list", &shard)(e)),
        };
        let mut ids = Vec::new();
        for entry in entries {
            let entry = entry.map_err(StoreError::io("list", &shard))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let rest = name.strip_suffix(ZSTD_SUFFIX).unwrap_or(name);
            if let Ok(id) = ContentId::from_hex(&format!("{}{rest}", &hex[..2])) {
                ids.push(id);
            }
        }
        one_match(prefix, ids.into_iter())
    }

    pub(crate) fn scan_good(
        &self,
        id: &ContentId,
        f: &mut dyn FnMut(Option<&[u8]>),
    ) -> Result<StoredObject, StoreError> {
        first_good(id, f, &mut |encoding, each| {
            let path = self.object_path(id, encoding);
            match self.scan(id, &path, encoding, each) {
                Err(StoreError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                    Ok(None)
                }
                Err(e @ StoreError::Corrupt { .. }) => {
                    self.set_aside_corrupt(id, &path, encoding);
                    Err(e)
                }
                r => r.map(Some),
            }
        })
    }

    /// A read found the object at `path` corrupt: it is quarantined, not
    /// left to be served, once a second look finds it still corrupt (a
    /// writer may have put a good copy in its place meanwhile). A store
    /// the reader cannot change keeps it; the read is refused all the same.
    fn set_aside_corrupt(&self, id: &ContentId, path: &Path, encoding: Encoding) {
        if let Err(StoreError::Corrupt { .. }) = self.verify_path(id, path, encoding) {
            let _ = self.quarantine(path);
        }
    }

    /// Re-hashes one object file and checks it against `id`.
    pub(crate) fn verify_path(
        &self,
        id: &ContentId,
        path: &Path,
        encoding: Encoding,
    ) -> Result<StoredObject, StoreError> {
        if encoding == Encoding::Raw {
            let file = open_regular(self.root(), path)?;
            // Reads (`show`, `grep`, `spill_read`) measured no faster from
            // a mapping (0.93x to 1.00x, BENCHMARKS "Whole inputs"): they
            // copy what they select anyway. A whole-object hash did.
            if let Some(checked) = hash_mapped(&file, id, path) {
                return checked;
            }
            return self.scan_file(file, id, path, encoding, &mut |_| {});
        }
        self.scan(id, path, encoding, &mut |_| {})
    }

    /// Streams an object's bytes through `f`, then checks the hash (and for
    /// zstd objects the recorded size).
    pub(crate) fn scan(
        &self,
        id: &ContentId,
        path: &Path,
        encoding: Encoding,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<StoredObject, StoreError> {
        self.scan_file(open_regular(self.root(), path)?, id, path, encoding, f)
    }

    /// [`Store::scan`] over a file already open.
    pub(crate) fn scan_file(
        &self,
        file: fs::File,
        id: &ContentId,
        path: &Path,
        encoding: Encoding,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<StoredObject, StoreError> {
        self.check_file(file, id, path, encoding, None, f)
    }

    /// [`scan_file`](Self::scan_file), compared with the content when it
    /// is at hand ([`check_stored`]).
    pub(crate) fn check_file(
        &self,
        file: fs::File,
        id: &ContentId,
        path: &Path,
        encoding: Encoding,
        against: Option<&[u8]>,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<StoredObject, StoreError> {
        let meta = file.metadata().map_err(StoreError::io("inspect", path))?;
        check_stored(
            file,
            meta.len(),
            meta.modified().ok(),
            id,
            path,
            encoding,
            against,
            f,
        )
    }

    /// [`Store::list`] of the directory.
    pub(crate) fn list(&self) -> Result<Vec<StoredObject>, StoreError> {
        let mut out = Vec::new();
        if !self.real_dirs_exist()? {
            return Ok(out);
        }
        let objects = self.objects_dir();
        let shards = fs::read_dir(objects).map_err(StoreError::io("list", objects))?;
        for shard in shards {
            let shard = shard.map_err(StoreError::io("list", objects))?;
            let Some(prefix) = shard.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if !shard.file_type().is_ok_and(|t| t.is_dir()) || prefix.len() != 2 {
                continue;
            }
            let dir = shard.path();
            for entry in fs::read_dir(&dir).map_err(StoreError::io("list", &dir))? {
                let entry = entry.map_err(StoreError::io("list", &dir))?;
                let name = entry.file_name();
                let Some(name) = name.to_str() else { continue };
                let (rest, encoding) = match name.strip_suffix(ZSTD_SUFFIX) {
                    Some(r) => (r, Encoding::Zstd),
                    None => (name, Encoding::Raw),
                };
                let Ok(id) = ContentId::from_hex(&format!("{prefix}{rest}")) else {
                    continue;
                };
                let Ok(meta) = entry.metadata() else { continue };
                if !meta.is_file() {
                    continue;
                }
                let path = entry.path();
                let bytes = match encoding {
                    Encoding::Raw => meta.len(),
                    Encoding::Zstd => read_trailer(self.root(), &path).unwrap_or(0),
                };
                out.push(StoredObject {
                    id,
                    path,
                    bytes,
                    stored_bytes: meta.len(),
                    encoding,
                    truncated: false,
                    dedup: false,
                    modified: meta.modified().ok(),
                });
            }
        }
        out.sort_by(|a, b| a.id.cmp(&b.id).then(a.path.cmp(&b.path)));
        Ok(out)
    }
}

/// [`Local::verify_path`] of a raw object of
/// [`THREAD_AFTER`](crate::offload::THREAD_AFTER) bytes or more,
/// hashed on two threads from a mapping of the file when it can be leased
/// (see `sys::with_leased_map`; the store's objects are private and never
/// truncated in place, and the lease guards against whoever else might).
/// `None` when the file is smaller or cannot be mapped: it is read instead.
fn hash_mapped(
    file: &fs::File,
    id: &ContentId,
    path: &Path,
) -> Option<Result<StoredObject, StoreError>> {
    let meta = file.metadata().ok()?;
    if meta.len() < crate::offload::THREAD_AFTER {
        return None;
    }
    crate::sys::with_leased_map(file, meta.len(), |map| {
        if ContentId::of_parallel(map, &crate::Parallelism::process()) != *id {
            return Err(StoreError::Corrupt {
                id: *id,
                path: path.to_path_buf(),
                reason: "its bytes do not hash to its id".into(),
            });
        }
        Ok(StoredObject {
            id: *id,
            path: path.to_path_buf(),
            bytes: meta.len(),
            stored_bytes: meta.len(),
            encoding: Encoding::Raw,
            truncated: false,
            dedup: false,
            modified: meta.modified().ok(),
        })
    })
}

impl Local {
    /// Whether the root, `v1` and `v1/objects` exist, each a real directory.
    /// A store that does not exist yet is empty.
    ///
    /// # Errors
    ///
    /// [`StoreError::Symlink`] or [`StoreError::WrongKind`] when one of them
    /// is a link or not a directory: the store never lists through a link.
    pub(crate) fn real_dirs_exist(&self) -> Result<bool, StoreError> {
        for dir in [self.root(), &self.0.base, self.objects_dir()] {
            match fs::symlink_metadata(dir) {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(StoreError::Symlink {
                        path: dir.to_path_buf(),
                    })
                }
                Ok(m) if !m.is_dir() => {
                    return Err(StoreError::WrongKind {
                        path: dir.to_path_buf(),
                        expected: "directory",
                    })
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
                Err(e) => return Err(StoreError::io("inspect", dir)(e)),
            }
        }
        Ok(true)
    }
}

fn read_trailer(root: &Path, path: &Path) -> Option<u64> {
    let mut f = open_regular(root, path).ok()?;
    let mut t = [0u8; TRAILER_LEN];
    f.seek(SeekFrom::End(-(TRAILER_LEN as i64))).ok()?;
    f.read_exact(&mut t).ok()?;
    parse_trailer(&t)
}
