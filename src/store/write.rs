//! Writing and publishing one object.

use std::fs;
use std::io::{self, Write};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::faults::{self, FaultPlan, FaultPoint};
use super::{same_file, ContentId, Store, StoreError};
use crate::policy::{Compression, Durability};

/// Writes are gathered into blocks of this size before they are hashed and
/// written, so a stream of small writes costs few system calls.
const BLOCK: usize = 1 << 20;

/// Writes at least this large bypass the block buffer.
const DIRECT: usize = 128 << 10;

/// Large writes are hashed and compressed in pieces of this size.
pub(crate) const PIECE: usize = 256 << 10;

/// In durable mode, writeback of the temp file is started every this many
/// bytes, so the final fsync has little left to do.
const WRITEBACK_EVERY: u64 = 8 << 20;

/// The zstd object trailer: a skippable frame (see the module docs of
/// [`store`](crate::store)).
pub(crate) const TRAILER_LEN: usize = 24;
const TRAILER_MAGIC: [u8; 4] = [0x5E, 0x2A, 0x4D, 0x18];
const TRAILER_PAYLOAD: [u8; 4] = [16, 0, 0, 0];
const TRAILER_TAG: &[u8; 8] = b"spillwy1";

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

/// An object that is stored, or was already.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Stored {
    /// Its id.
    pub id: ContentId,
    /// Its file.
    pub path: PathBuf,
    /// Its uncompressed size.
    pub bytes: u64,
    /// Its size on disk.
    pub stored_bytes: u64,
    /// How it is compressed (`"none"` or `"zstd"` in JSON).
    pub compression: Compression,
    /// Whether the object already existed, so nothing new was stored.
    pub dedup: bool,
}

/// The temp file; removed when dropped unless it was published.
struct TempFile {
    path: PathBuf,
    live: bool,
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if self.live {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// The file, counting what is written and starting early writeback.
struct FileSink {
    file: fs::File,
    written: u64,
    flushed_to: u64,
    early_writeback: bool,
    faults: Option<FaultPlan>,
}

impl Write for FileSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        faults::check(self.faults.as_ref(), FaultPoint::Write)?;
        let n = self.file.write(buf)?;
        self.written += n as u64;
        if self.early_writeback && self.written - self.flushed_to >= WRITEBACK_EVERY {
            start_writeback(&self.file, self.flushed_to, self.written - self.flushed_to);
            self.flushed_to = self.written;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Asks the kernel to start writing a range back now (Linux), so that the
/// fsync at the end waits for less. Errors surface at that fsync.
#[cfg(target_os = "linux")]
fn start_writeback(file: &fs::File, offset: u64, len: u64) {
    // SAFETY: sync_file_range only reads its integer arguments; the file
    // descriptor is owned by `file` and open for the duration of the call.
    unsafe {
        libc::sync_file_range(
            file.as_raw_fd(),
            offset as libc::off64_t,
            len as libc::off64_t,
            libc::SYNC_FILE_RANGE_WRITE,
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn start_writeback(_file: &fs::File, _offset: u64, _len: u64) {}

/// Past this many bytes, a zstd object continues in a second frame
/// compressed by worker threads. Starting workers costs a few hundred
/// microseconds, which only pays off on large objects; small ones stay in
/// one single-threaded frame.
const MULTITHREAD_AFTER: u64 = 8 << 20;

type ZstdEncoder = zstd::stream::write::Encoder<'static, FileSink>;

enum Sink {
    Raw(FileSink),
    Zstd {
        encoder: ZstdEncoder,
        level: i32,
        /// Bytes fed to the current frame.
        frame_in: u64,
        /// Whether the current frame uses worker threads.
        workers: bool,
    },
}

/// How many zstd workers large objects get: one per core, at most 4.
fn zstd_workers() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4) as u32)
}

/// Streams one object into the store: hashes and (optionally) compresses as
/// it goes, and publishes it on [`finish`](ObjectWriter::finish).
///
/// Dropping a writer without finishing removes its temp file.
pub struct ObjectWriter {
    store: Store,
    temp: TempFile,
    sink: Option<Sink>,
    hasher: blake3::Hasher,
    block: Vec<u8>,
    bytes: u64,
    compression: Compression,
    durability: Durability,
}

impl std::fmt::Debug for ObjectWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectWriter")
            .field("temp", &self.temp.path)
            .field("bytes", &self.bytes)
            .field("compression", &self.compression)
            .finish()
    }
}

impl ObjectWriter {
    pub(crate) fn new(
        store: Store,
        compression: Compression,
        durability: Durability,
    ) -> Result<Self, StoreError> {
        let (path, file) = store.create_temp()?;
        let temp = TempFile { path, live: true };
        let file = FileSink {
            file,
            written: 0,
            flushed_to: 0,
            early_writeback: durability == Durability::Durable,
            faults: store.faults().cloned(),
        };
        let sink = match compression {
            Compression::None => Sink::Raw(file),
            Compression::Zstd { level } => Sink::Zstd {
                encoder: ZstdEncoder::new(file, level)
                    .map_err(StoreError::io("start zstd for", &temp.path))?,
                level,
                frame_in: 0,
                workers: false,
            },
        };
        Ok(ObjectWriter {
            store,
            temp,
            sink: Some(sink),
            hasher: blake3::Hasher::new(),
            block: Vec::new(),
            bytes: 0,
            compression,
            durability,
        })
    }

    /// Bytes written so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    fn process(&mut self, data: &[u8]) -> Result<(), StoreError> {
        self.hasher.update(data);
        let path = &self.temp.path;
        match self.sink.as_mut() {
            Some(Sink::Raw(f)) => f.write_all(data).map_err(StoreError::io("write", path))?,
            Some(Sink::Zstd {
                encoder, frame_in, ..
            }) => {
                encoder
                    .write_all(data)
                    .map_err(StoreError::io("write", path))?;
                *frame_in += data.len() as u64;
            }
            None => {}
        }
        self.maybe_start_workers()
    }

    /// Ends a large object's single-threaded zstd frame and continues in a
    /// frame compressed by worker threads. The object is then two frames,
    /// which every zstd decoder reads as one stream.
    fn maybe_start_workers(&mut self) -> Result<(), StoreError> {
        let due = matches!(
            self.sink,
            Some(Sink::Zstd { frame_in, workers: false, .. }) if frame_in >= MULTITHREAD_AFTER
        );
        let n = zstd_workers();
        if !due || n < 2 {
            return Ok(());
        }
        let Some(Sink::Zstd { encoder, level, .. }) = self.sink.take() else {
            return Ok(());
        };
        let path = &self.temp.path;
        let file = encoder
            .finish()
            .map_err(StoreError::io("finish zstd frame for", path))?;
        let mut encoder =
            ZstdEncoder::new(file, level).map_err(StoreError::io("start zstd for", path))?;
        encoder
            .multithread(n)
            .map_err(StoreError::io("start zstd workers for", path))?;
        self.sink = Some(Sink::Zstd {
            encoder,
            level,
            frame_in: 0,
            workers: true,
        });
        Ok(())
    }

    fn flush_block(&mut self) -> Result<(), StoreError> {
        if self.block.is_empty() {
            return Ok(());
        }
        let block = std::mem::take(&mut self.block);
        let res = self.process(&block);
        self.block = block;
        self.block.clear();
        res
    }

    /// Appends `data` to the object.
    ///
    /// # Errors
    ///
    /// [`StoreError::Io`] when the temp file cannot be written. The writer
    /// should then be dropped, which removes the temp file.
    pub fn write_all(&mut self, data: &[u8]) -> Result<(), StoreError> {
        if self.block.is_empty() && data.len() >= DIRECT {
            // Large writes skip the block buffer (no copy), in pieces so the
            // frame switch can happen and each piece is hashed and
            // compressed while it is in cache.
            self.bytes += data.len() as u64;
            for piece in data.chunks(PIECE) {
                self.process(piece)?;
            }
            return Ok(());
        }
        self.bytes += data.len() as u64;
        if self.block.len() + data.len() <= BLOCK {
            if self.block.capacity() == 0 {
                self.block
                    .reserve_exact(BLOCK.min(data.len().max(64 << 10)));
            }
            self.block.extend_from_slice(data);
            return Ok(());
        }
        self.flush_block()?;
        if data.len() >= BLOCK {
            for piece in data.chunks(PIECE) {
                self.process(piece)?;
            }
            Ok(())
        } else {
            self.block.reserve(BLOCK);
            self.block.extend_from_slice(data);
            Ok(())
        }
    }

    /// Finishes the object: flushes, fsyncs (durable mode) and publishes it.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when any step fails. The temp file is removed, and an
    /// fsync error is final: the object is not published.
    pub fn finish(mut self) -> Result<Stored, StoreError> {
        self.flush_block()?;
        let path = self.temp.path.clone();
        let file = match self.sink.take() {
            Some(Sink::Raw(f)) => f,
            Some(Sink::Zstd { encoder, .. }) => {
                let mut f = encoder
                    .finish()
                    .map_err(StoreError::io("finish zstd for", &path))?;
                f.write_all(&trailer(self.bytes))
                    .map_err(StoreError::io("write", &path))?;
                f
            }
            None => return Err(after_failure(&path)),
        };
        if self.durability == Durability::Durable {
            // An fsync error is final: the object is not published, and the
            // write is never retried as if it had succeeded.
            faults::check(file.faults.as_ref(), FaultPoint::Fsync)
                .and_then(|()| file.file.sync_data())
                .map_err(StoreError::io("fsync", &path))?;
        }
        let stored_bytes = file.written;
        let id = ContentId::from_hash(self.hasher.finalize());
        self.publish(id, stored_bytes, file.file)
    }

    fn publish(
        mut self,
        id: ContentId,
        stored_bytes: u64,
        file: fs::File,
    ) -> Result<Stored, StoreError> {
        if let Some(hit) = self.store.dedup_hit(&id)? {
            return Ok(hit);
        }
        let dest = self.store.object_path(&id, self.compression);
        let shard = dest
            .parent()
            .unwrap_or(self.store.objects_dir())
            .to_path_buf();
        Store::ensure_dir(&shard)?;
        let stored = Stored {
            id,
            path: dest.clone(),
            bytes: self.bytes,
            stored_bytes,
            compression: self.compression,
            dedup: false,
        };
        let plan = self.store.faults().cloned();
        let link = |from: &Path, to: &Path| {
            faults::check(plan.as_ref(), FaultPoint::Publish)?;
            publish_no_clobber(from, to)
        };
        match link(&self.temp.path, &dest) {
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
                    match link(&self.temp.path, &dest) {
                        Ok(()) => {}
                        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                            if let Some(hit) = self.store.dedup_hit(&id)? {
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
                if let Some(hit) = self.store.dedup_hit(&id)? {
                    return Ok(hit);
                }
                faults::check(self.store.faults(), FaultPoint::Publish)
                    .and_then(|()| fs::rename(&self.temp.path, &dest))
                    .map_err(StoreError::io("replace corrupt object", &dest))?;
                self.temp.live = false;
            }
            Err(e) => return Err(StoreError::io("publish", &dest)(e)),
        }
        if self.temp.live {
            fs::remove_file(&self.temp.path)
                .map_err(StoreError::io("remove temp file", &self.temp.path))?;
            self.temp.live = false;
        }
        if self.durability == Durability::Durable {
            faults::check(self.store.faults(), FaultPoint::DirFsync)
                .map_err(StoreError::io("fsync directory", &shard))?;
            sync_dir(&shard)?;
        }
        Ok(stored)
    }
}

/// Finishing a writer whose compressor was lost to an earlier error.
fn after_failure(path: &Path) -> StoreError {
    StoreError::Io {
        op: "finish",
        path: path.to_path_buf(),
        source: io::Error::other("an earlier write to this object failed"),
    }
}

/// Publishes `from` as `to` unless `to` exists: `link(2)`, or on filesystems
/// without hard links `renameat2(RENAME_NOREPLACE)`.
fn publish_no_clobber(from: &Path, to: &Path) -> io::Result<()> {
    match fs::hard_link(from, to) {
        Ok(()) => Ok(()),
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EPERM | libc::EOPNOTSUPP | libc::ENOSYS | libc::EMLINK)
            ) =>
        {
            rename_noreplace(from, to)
        }
        Err(e) => Err(e),
    }
}

#[cfg(target_os = "linux")]
fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let from_c = CString::new(from.as_os_str().as_bytes()).map_err(io::Error::other)?;
    let to_c = CString::new(to.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // SAFETY: both pointers are valid NUL-terminated strings that outlive the
    // call; AT_FDCWD makes the paths relative to the current directory as
    // usual (they are absolute here).
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from_c.as_ptr(),
            libc::AT_FDCWD,
            to_c.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn rename_noreplace(_from: &Path, _to: &Path) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// fsyncs a directory, making the names in it durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    let d = fs::File::open(dir).map_err(StoreError::io("open directory", dir))?;
    d.sync_all().map_err(StoreError::io("fsync directory", dir))
}
