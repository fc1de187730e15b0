//! Writing and publishing one object.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::seam::{FaultPoint, Op, Seam};
use super::{
    same_file, ContentId, Durability, Encoding, Local, StoreError, StoredObject, WriteOptions,
};
use crate::sys;

/// Writes are gathered into blocks of this size before they are hashed and
/// written, so a stream of small writes costs few system calls.
const BLOCK: usize = 1 << 20;

/// Writes at least this large bypass the block buffer.
const DIRECT: usize = 128 << 10;

/// Large writes are hashed and compressed in pieces of this size.
const PIECE: usize = 256 << 10;

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

/// The temp file; removed when dropped unless it was published.
struct TempFile {
    path: PathBuf,
    live: bool,
    seam: Seam,
}

impl TempFile {
    fn remove(&mut self) -> io::Result<()> {
        fs::remove_file(&self.path)?;
        self.seam.record(Op::Remove(&self.path));
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
struct FileSink {
    file: fs::File,
    path: PathBuf,
    written: u64,
    flushed_to: u64,
    early_writeback: bool,
    seam: Seam,
}

impl FileSink {
    /// fsyncs the file's data (and size).
    fn sync(&self) -> io::Result<()> {
        self.seam.check(FaultPoint::Fsync)?;
        self.file.sync_data()?;
        self.seam.record(Op::Fsync(&self.path));
        Ok(())
    }
}

impl Write for FileSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.seam.check(FaultPoint::Write)?;
        let n = self.file.write(buf)?;
        self.seam
            .record(Op::Write(&self.path, self.written, &buf[..n]));
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

/// How much of an object's first data decides whether zstd pays.
const SAMPLE: usize = 64 << 10;

/// Below this, the sample says too little: small objects are compressed.
const MIN_SAMPLE: usize = 4 << 10;

/// Past this many bytes, a zstd object continues in a second frame
/// compressed by worker threads. Starting workers costs a few hundred
/// microseconds, which only pays off on large objects; small ones stay in
/// one single-threaded frame.
const MULTITHREAD_AFTER: u64 = 8 << 20;

/// Where the stored bytes go: a temp file, an upload to S3, or a harness's
/// sink.
enum Out {
    File(FileSink),
    Sink(super::sink::SinkOut),
    Memory(super::memory::MemoryOut),
    #[cfg(feature = "s3")]
    Upload(super::remote::Upload),
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Out::File(f) => f.write(buf),
            Out::Sink(s) => s.write(buf),
            Out::Memory(m) => m.write(buf),
            #[cfg(feature = "s3")]
            Out::Upload(u) => u.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

type ZstdEncoder = zstd::stream::write::Encoder<'static, Out>;

enum Sink {
    Raw(Out),
    /// zstd was asked for; the first data decides whether it pays.
    Undecided(Out),
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
    /// The local store the temp file is published into (`None` for an
    /// upload, which publishes itself).
    local: Option<Local>,
    /// The local temp file (`None` for an upload).
    temp: Option<TempFile>,
    /// The temp file's path or the upload's temporary key, for errors.
    label: PathBuf,
    sink: Option<Sink>,
    hasher: blake3::Hasher,
    /// The object's id when the caller hashes the whole content itself
    /// (it is given before `finish`): the writer then hashes nothing.
    known: Option<Option<ContentId>>,
    block: Vec<u8>,
    bytes: u64,
    opts: WriteOptions,
}

impl std::fmt::Debug for ObjectWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectWriter")
            .field("temp", &self.label)
            .field("bytes", &self.bytes)
            .field("opts", &self.opts)
            .finish()
    }
}

impl ObjectWriter {
    /// A writer whose bytes upload to S3 as they come.
    #[cfg(feature = "s3")]
    pub(crate) fn upload(upload: super::remote::Upload, opts: WriteOptions) -> Self {
        let label = upload.label();
        let out = Out::Upload(upload);
        ObjectWriter {
            local: None,
            temp: None,
            label,
            sink: Some(match opts.encoding() {
                Encoding::Raw => Sink::Raw(out),
                Encoding::Zstd => Sink::Undecided(out),
            }),
            hasher: blake3::Hasher::new(),
            known: None,
            block: Vec::new(),
            bytes: 0,
            opts,
        }
    }

    /// A writer whose bytes go to a harness's sink as they come.
    pub(crate) fn sink(out: super::sink::SinkOut, opts: WriteOptions) -> Self {
        let label = out.label.clone();
        ObjectWriter {
            local: None,
            temp: None,
            label,
            sink: Some(Sink::Raw(Out::Sink(out))),
            hasher: blake3::Hasher::new(),
            known: None,
            block: Vec::new(),
            bytes: 0,
            opts,
        }
    }

    /// A writer into the memory backend.
    pub(crate) fn memory(out: super::memory::MemoryOut, opts: WriteOptions) -> Self {
        ObjectWriter {
            local: None,
            temp: None,
            label: PathBuf::from("memory:"),
            sink: Some(match opts.encoding() {
                Encoding::Raw => Sink::Raw(Out::Memory(out)),
                Encoding::Zstd => Sink::Undecided(Out::Memory(out)),
            }),
            hasher: blake3::Hasher::new(),
            known: None,
            block: Vec::new(),
            bytes: 0,
            opts,
        }
    }

    /// A writer into a private temp file of a local store.
    pub(crate) fn local(store: Local, opts: WriteOptions) -> Result<Self, StoreError> {
        let (path, file) = store.create_temp()?;
        let seam = store.seam().clone();
        let temp = TempFile {
            path: path.clone(),
            live: true,
            seam: seam.clone(),
        };
        let file = Out::File(FileSink {
            file,
            path: path.clone(),
            written: 0,
            flushed_to: 0,
            early_writeback: opts.durability_mode() == Durability::Durable,
            seam,
        });
        let sink = match opts.encoding() {
            Encoding::Raw => Sink::Raw(file),
            Encoding::Zstd => Sink::Undecided(file),
        };
        Ok(ObjectWriter {
            local: Some(store),
            temp: Some(temp),
            label: path,
            sink: Some(sink),
            hasher: blake3::Hasher::new(),
            known: None,
            block: Vec::new(),
            bytes: 0,
            opts,
        })
    }

    /// A writer of content whose id the caller computed from the very
    /// bytes it will write: nothing is hashed again.
    pub(crate) fn with_id(mut self, id: ContentId) -> Self {
        self.known = Some(Some(id));
        self
    }

    /// A writer of content whose id the caller is computing from the very
    /// bytes it will write, and gives with [`with_id`](Self::with_id)
    /// before `finish`: nothing is hashed here.
    pub(crate) fn id_to_come(mut self) -> Self {
        self.known = Some(None);
        self
    }

    fn id(&self) -> ContentId {
        match self.known {
            Some(Some(id)) => id,
            // Never finished without its id: `Store::put_whole` gives it.
            Some(None) => unreachable!("an id to come is given before finish"),
            None => ContentId::from_hash(self.hasher.finalize()),
        }
    }

    /// Bytes written so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Settles a zstd object's encoding on its first data: output that zstd
    /// cannot shrink (already compressed, encrypted, random) is stored raw,
    /// so it costs what the raw path costs. The sample is the first 64 KiB,
    /// compressed once at level 1; under a 10% gain the object is raw.
    fn decide(&mut self, first: &[u8]) -> Result<(), StoreError> {
        if !matches!(self.sink, Some(Sink::Undecided(_))) {
            return Ok(());
        }
        let Some(Sink::Undecided(file)) = self.sink.take() else {
            return Ok(());
        };
        let sample = &first[..first.len().min(SAMPLE)];
        let pays = sample.len() < MIN_SAMPLE
            || zstd::bulk::compress(sample, 1).is_ok_and(|z| z.len() * 10 < sample.len() * 9);
        self.sink = Some(if pays {
            Sink::Zstd {
                encoder: ZstdEncoder::new(file, self.opts.level())
                    .map_err(StoreError::io("start zstd for", &self.label))?,
                level: self.opts.level(),
                frame_in: 0,
                workers: false,
            }
        } else {
            self.opts = WriteOptions::raw().durability(self.opts.durability_mode());
            Sink::Raw(file)
        });
        Ok(())
    }

    /// Hashes, compresses and writes `data`. A large object's second zstd
    /// frame starts at exactly [`MULTITHREAD_AFTER`] bytes, however the
    /// input was split, so the same content gives the same object bytes.
    fn process(&mut self, data: &[u8]) -> Result<(), StoreError> {
        if let Some(Sink::Zstd {
            frame_in,
            workers: false,
            ..
        }) = &self.sink
        {
            let room = MULTITHREAD_AFTER.saturating_sub(*frame_in);
            if room > 0 && (data.len() as u64) > room {
                let (a, b) = data.split_at(room as usize);
                self.process_piece(a)?;
                return self.process_piece(b);
            }
        }
        self.process_piece(data)
    }

    fn process_piece(&mut self, data: &[u8]) -> Result<(), StoreError> {
        self.decide(data)?;
        let path = &self.label;
        match self.sink.as_mut() {
            Some(Sink::Raw(f) | Sink::Undecided(f)) => {
                f.write_all(data).map_err(StoreError::io("write", path))?
            }
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
        let path = &self.label;
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

    /// Appends `data` to the object. Every byte given is hashed, whatever
    /// becomes of its write: a writer that failed still knows the id of
    /// what it was given ([`into_hash`](Self::into_hash)).
    ///
    /// # Errors
    ///
    /// [`StoreError::Io`] when the temp file cannot be written. The writer
    /// should then be dropped, which removes the temp file.
    pub fn write_all(&mut self, data: &[u8]) -> Result<(), StoreError> {
        self.bytes += data.len() as u64;
        if self.block.is_empty() && data.len() >= DIRECT {
            // Large writes skip the block buffer (no copy).
            return self.write_pieces(data);
        }
        if self.block.len() + data.len() <= BLOCK {
            self.hash(data);
            if self.block.capacity() == 0 {
                self.block
                    .reserve_exact(BLOCK.min(data.len().max(64 << 10)));
            }
            self.block.extend_from_slice(data);
            return Ok(());
        }
        if let Err(e) = self.flush_block() {
            self.hash(data);
            return Err(e);
        }
        if data.len() >= BLOCK {
            self.write_pieces(data)
        } else {
            self.hash(data);
            self.block.reserve(BLOCK);
            self.block.extend_from_slice(data);
            Ok(())
        }
    }

    /// Writes `data` in pieces, so that the frame switch can happen and
    /// each piece is hashed and compressed while it is in cache.
    fn write_pieces(&mut self, data: &[u8]) -> Result<(), StoreError> {
        for (i, piece) in data.chunks(PIECE).enumerate() {
            self.hash(piece);
            if let Err(e) = self.process(piece) {
                self.hash(&data[((i + 1) * PIECE).min(data.len())..]);
                return Err(e);
            }
        }
        Ok(())
    }

    fn hash(&mut self, data: &[u8]) {
        if self.known.is_none() {
            self.hasher.update(data);
        }
    }

    /// The id and the length of everything given so far, when the writer
    /// hashes it (not when the caller gives the id).
    pub(crate) fn content(&self) -> Option<(ContentId, u64)> {
        self.known
            .is_none()
            .then(|| (ContentId::from_hash(self.hasher.finalize()), self.bytes))
    }

    /// Gives the write up (its temp file is removed, as when the writer is
    /// dropped) and hands back the hash of everything given and its length,
    /// for a caller that goes on hashing what the object would have held.
    pub(crate) fn into_hash(mut self) -> Option<(blake3::Hasher, u64)> {
        self.known
            .is_none()
            .then(|| (std::mem::take(&mut self.hasher), self.bytes))
    }

    /// Finishes the object: flushes, fsyncs (durable mode) and publishes it.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when any step fails. The temp file is removed, and an
    /// fsync error is final: the object is not published.
    pub fn finish(mut self) -> Result<StoredObject, StoreError> {
        self.flush_block()?;
        // An empty object is a zstd frame like any small one.
        self.decide(&[])?;
        let path = self.label.clone();
        let out = match self.sink.take() {
            // `decide` above leaves no writer undecided.
            Some(Sink::Raw(f) | Sink::Undecided(f)) => f,
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
        let file = match out {
            Out::File(file) => file,
            Out::Sink(sink) => {
                let id = self.id();
                return sink.publish(id, self.bytes);
            }
            Out::Memory(m) => {
                let id = self.id();
                return m
                    .memory
                    .publish(id, self.opts.encoding(), m.buf, self.bytes);
            }
            #[cfg(feature = "s3")]
            Out::Upload(upload) => {
                let id = self.id();
                return upload.publish(id, self.opts.encoding(), self.bytes);
            }
        };
        let id = self.id();
        // A copy already stored is the object: decided before the fsync,
        // which it spares, and whatever the fsync would meet.
        if let Some(store) = &self.local {
            if let Some(hit) = store.dedup_hit(&id)? {
                return Ok(hit);
            }
        }
        if self.opts.durability_mode() == Durability::Durable {
            // An fsync error is final: the object is not published, and the
            // write is never retried as if it had succeeded.
            file.sync().map_err(StoreError::io("fsync", &path))?;
        }
        let stored_bytes = file.written;
        self.publish(id, stored_bytes, file.file)
    }

    fn publish(
        mut self,
        id: ContentId,
        stored_bytes: u64,
        file: fs::File,
    ) -> Result<StoredObject, StoreError> {
        let (Some(mut temp), Some(store)) = (self.temp.take(), self.local.clone()) else {
            return Err(after_failure(&self.label));
        };
        let dest = store.object_path(&id, self.opts.encoding());
        let shard = dest.parent().unwrap_or(store.objects_dir()).to_path_buf();
        store.ensure_dir(&shard)?;
        let stored = StoredObject {
            id,
            path: dest.clone(),
            bytes: self.bytes,
            stored_bytes,
            encoding: self.opts.encoding(),
            truncated: false,
            dedup: false,
            modified: None,
        };
        let seam = store.seam().clone();
        let link = |from: &Path, to: &Path| {
            seam.check(FaultPoint::Publish)?;
            publish_no_clobber(from, to, &seam)
        };
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
                seam.check(FaultPoint::Publish)
                    .and_then(|()| fs::rename(&temp.path, &dest))
                    .map_err(StoreError::io("replace corrupt object", &dest))?;
                seam.record(Op::Rename(&temp.path, &dest));
                temp.live = false;
            }
            Err(e) => return Err(StoreError::io("publish", &dest)(e)),
        }
        if temp.live {
            let path = temp.path.clone();
            temp.remove()
                .map_err(StoreError::io("remove temp file", &path))?;
        }
        if self.opts.durability_mode() == Durability::Durable {
            store.sync_dir(&shard)?;
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
/// without hard links a rename that never replaces.
fn publish_no_clobber(from: &Path, to: &Path, seam: &Seam) -> io::Result<()> {
    match fs::hard_link(from, to) {
        Ok(()) => {
            seam.record(Op::Link(from, to));
            Ok(())
        }
        Err(e) if sys::link_unsupported(&e) => {
            sys::rename_noreplace(from, to)?;
            seam.record(Op::Rename(from, to));
            Ok(())
        }
        Err(e) => Err(e),
    }
}
