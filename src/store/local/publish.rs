//! The local directory's object out: a private temp file in `v1/tmp/`,
//! fsynced (durable mode), then linked in under the object's name, which
//! never replaces an existing one; a copy already there is a dedup hit,
//! checked by hashing it.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::super::fs::link_no_clobber;
use super::super::write::{Commit, ObjectOut, ObjectWriter};
use super::super::{Durability, StoreError, StoredObject, WriteOptions};
use super::{same_file, Local};
use crate::sys;

/// In durable mode, writeback of the temp file is started every this many
/// bytes, so the final fsync has little left to do.
const WRITEBACK_EVERY: u64 = 8 << 20;

/// The temp file; removed when dropped unless it was published.
struct TempFile {
    path: PathBuf,
    live: bool,
    store: Local,
}

impl TempFile {
    fn remove(&mut self) -> io::Result<()> {
        self.store.fs().remove_file(&self.path)?;
        self.live = false;
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if self.live {
            let _ = self.remove();
        }
    }
}

/// The file, counting what is written and starting early writeback.
struct TempWriter {
    file: fs::File,
    path: PathBuf,
    written: u64,
    flushed_to: u64,
    early_writeback: bool,
    store: Local,
}

impl TempWriter {
    /// fsyncs the file's data (and size).
    fn sync(&self) -> io::Result<()> {
        self.store.fs().sync(&self.file, &self.path)
    }
}

impl Write for TempWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self
            .store
            .fs()
            .write(&mut self.file, &self.path, self.written, buf)?;
        self.written += n as u64;
        if self.early_writeback && self.written - self.flushed_to >= WRITEBACK_EVERY {
            sys::start_writeback(&self.file, self.flushed_to, self.written - self.flushed_to);
            self.flushed_to = self.written;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A local writer's temp file and the store it publishes into.
pub(crate) struct LocalOut {
    store: Local,
    temp: TempFile,
    file: TempWriter,
}

impl LocalOut {
    /// A writer into a private temp file of `store`.
    pub(crate) fn writer(store: Local, opts: WriteOptions) -> Result<ObjectWriter, StoreError> {
        let (path, file) = store.create_temp()?;
        let temp = TempFile {
            path: path.clone(),
            live: true,
            store: store.clone(),
        };
        let file = TempWriter {
            file,
            path,
            written: 0,
            flushed_to: 0,
            early_writeback: opts.durability_mode() == Durability::Durable,
            store: store.clone(),
        };
        let out = LocalOut { store, temp, file };
        Ok(ObjectWriter::new(Box::new(out), opts))
    }
}

impl Write for LocalOut {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl ObjectOut for LocalOut {
    fn label(&self) -> PathBuf {
        self.temp.path.clone()
    }

    fn commit(self: Box<Self>, c: Commit) -> Result<StoredObject, StoreError> {
        let LocalOut { store, temp, file } = *self;
        // A copy already stored is the object: decided before the fsync,
        // which it spares, and whatever the fsync would meet. (Dropping the
        // temp file removes it.)
        if let Some(hit) = store.dedup_hit(&c.id)? {
            return Ok(hit);
        }
        if c.durability == Durability::Durable {
            // An fsync error is final: the object is not published, and the
            // write is never retried as if it had succeeded.
            file.sync().map_err(StoreError::io("fsync", &temp.path))?;
        }
        publish(&store, temp, c, file.written, file.file)
    }
}

/// Links the temp file in as the object (never over an existing
/// name), keeping a sound copy another writer published first.
fn publish(
    store: &Local,
    mut temp: TempFile,
    c: Commit,
    stored_bytes: u64,
    file: fs::File,
) -> Result<StoredObject, StoreError> {
    let id = c.id;
    let dest = store.object_path(&id, c.encoding);
    let shard = dest.parent().unwrap_or(store.objects_dir()).to_path_buf();
    store.ensure_dir(&shard)?;
    let stored = StoredObject {
        id,
        path: dest.clone(),
        bytes: c.bytes,
        stored_bytes,
        encoding: c.encoding,
        truncated: false,
        dedup: false,
        modified: None,
    };
    let link = |from: &Path, to: &Path| link_no_clobber(store.fs(), from, to);
    match link(&temp.path, &dest) {
        Ok(()) => {
            // Mark it used now, through our own inode, then make sure the
            // name still holds it: a gc that listed it before we linked
            // puts back what was touched after it started, and if it
            // already removed it we publish again.
            for _ in 0..8 {
                let _ = file.set_modified(std::time::SystemTime::now());
                if same_file(&file, &dest) {
                    break;
                }
                match link(&temp.path, &dest) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                        if let Some(hit) = store.dedup_hit(&id)? {
                            return Ok(hit);
                        }
                    }
                    Err(e) => return Err(StoreError::io("publish", &dest)(e)),
                }
            }
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            // Another writer published the same content first; keep
            // theirs if it is sound, replace it if not.
            if let Some(hit) = store.dedup_hit(&id)? {
                return Ok(hit);
            }
            store
                .fs()
                .rename(&temp.path, &dest)
                .map_err(StoreError::io("replace corrupt object", &dest))?;
            temp.live = false;
        }
        Err(e) => return Err(StoreError::io("publish", &dest)(e)),
    }
    if temp.live {
        let path = temp.path.clone();
        temp.remove()
            .map_err(StoreError::io("remove temp file", &path))?;
    }
    if c.durability == Durability::Durable {
        store.sync_dir(&shard)?;
    }
    Ok(stored)
}
