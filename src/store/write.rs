//! The object encoder: block buffering, BLAKE3, the zstd decision and the
//! trailer, writing into an [`ObjectOut`] that each backend provides and
//! that publishes the object once its id is known. The encoder knows no
//! backend: format ← encoder ← backends ← `Store`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::format::trailer;
use super::{ContentId, Durability, Encoding, StoreError, StoredObject, WriteOptions};

/// Writes are gathered into blocks of this size before they are hashed and
/// written, so a stream of small writes costs few system calls.
const BLOCK: usize = 1 << 20;

/// Writes at least this large bypass the block buffer.
const DIRECT: usize = 128 << 10;

/// Large writes are hashed and compressed in pieces of this size.
const PIECE: usize = 256 << 10;

/// How much of an object's first data decides whether zstd pays.
const SAMPLE: usize = 64 << 10;

/// Below this, the sample says too little: small objects are compressed.
const MIN_SAMPLE: usize = 4 << 10;

/// Past this many bytes, a zstd object continues in a second frame
/// compressed by worker threads. Starting workers costs a few hundred
/// microseconds, which only pays off on large objects; small ones stay in
/// one single-threaded frame.
const MULTITHREAD_AFTER: u64 = 8 << 20;

/// Where an encoder's stored bytes go, and how they become an object: a
/// private temp file published by a link (the local directory), a buffer
/// (memory), an upload (S3), a harness's sink. Each backend provides its
/// own, and owns its publishing.
pub(crate) trait ObjectOut: Write + Send {
    /// The temp file's path or the upload's key, for errors.
    fn label(&self) -> PathBuf;

    /// Makes the bytes written the object `commit.id`, or finds that an
    /// object of that id is there already (a dedup hit, checked against
    /// its id as every backend checks it).
    fn commit(self: Box<Self>, commit: Commit) -> Result<StoredObject, StoreError>;
}

/// What an [`ObjectOut`] is told when its bytes are complete.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Commit {
    /// The content's id.
    pub id: ContentId,
    /// The encoding of the bytes written.
    pub encoding: Encoding,
    /// The content's length (the bytes written, once decompressed).
    pub bytes: u64,
    /// Whether the object must be durable when `commit` returns.
    pub durability: Durability,
}

type Out = Box<dyn ObjectOut>;

type ZstdEncoder = zstd::stream::write::Encoder<'static, Out>;

enum Coding {
    Raw(Out),
    /// zstd was asked for; the first data decides whether it pays.
    Undecided(Out),
    Zstd {
        encoder: ZstdEncoder,
        level: i32,
        /// Bytes fed to the current frame.
        frame_in: u64,
        /// The threads the current frame's workers hold, if it has any.
        workers: Option<crate::threads::Permit>,
    },
}

/// How many zstd workers large objects ask for: one per core, at most 4
/// (and no more than the store's thread budget gives).
fn zstd_workers() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4) as u32)
}

/// Streams one object into the store: hashes and (optionally) compresses as
/// it goes, and publishes it on [`finish`](ObjectWriter::finish).
///
/// Dropping a writer without finishing removes its temp file.
pub struct ObjectWriter {
    /// The temp file's path or the upload's key, for errors.
    label: PathBuf,
    coding: Option<Coding>,
    /// The budget zstd workers are taken from; none until the store gives it.
    budget: Option<crate::Parallelism>,
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
    /// A writer into `out`.
    pub(crate) fn new(out: Out, opts: WriteOptions) -> Self {
        let label = out.label();
        ObjectWriter {
            label,
            budget: None,
            coding: Some(match opts.encoding() {
                Encoding::Raw => Coding::Raw(out),
                Encoding::Zstd => Coding::Undecided(out),
            }),
            hasher: blake3::Hasher::new(),
            known: None,
            block: Vec::new(),
            bytes: 0,
            opts,
        }
    }

    /// This writer's zstd workers taken from `budget`.
    pub(crate) fn on_budget(mut self, budget: &crate::Parallelism) -> Self {
        self.budget = Some(budget.clone());
        self
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
        if !matches!(self.coding, Some(Coding::Undecided(_))) {
            return Ok(());
        }
        let Some(Coding::Undecided(file)) = self.coding.take() else {
            return Ok(());
        };
        let sample = &first[..first.len().min(SAMPLE)];
        let pays = sample.len() < MIN_SAMPLE
            || zstd::bulk::compress(sample, 1).is_ok_and(|z| z.len() * 10 < sample.len() * 9);
        self.coding = Some(if pays {
            Coding::Zstd {
                encoder: ZstdEncoder::new(file, self.opts.level())
                    .map_err(StoreError::io("start zstd for", &self.label))?,
                level: self.opts.level(),
                frame_in: 0,
                workers: None,
            }
        } else {
            self.opts = WriteOptions::raw().durability(self.opts.durability_mode());
            Coding::Raw(file)
        });
        Ok(())
    }

    /// Hashes, compresses and writes `data`. A large object's second zstd
    /// frame starts at exactly [`MULTITHREAD_AFTER`] bytes, however the
    /// input was split, so the same content gives the same object bytes.
    fn process(&mut self, data: &[u8]) -> Result<(), StoreError> {
        if let Some(Coding::Zstd {
            frame_in,
            workers: None,
            ..
        }) = &self.coding
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
        match self.coding.as_mut() {
            Some(Coding::Raw(f) | Coding::Undecided(f)) => {
                f.write_all(data).map_err(StoreError::io("write", path))?
            }
            Some(Coding::Zstd {
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
            self.coding,
            Some(Coding::Zstd { frame_in, workers: None, .. }) if frame_in >= MULTITHREAD_AFTER
        );
        if !due {
            return Ok(());
        }
        // Workers only with threads from the budget; without two, the
        // frame goes on single-threaded (and asks again on the next write).
        let Some(permit) = self
            .budget
            .as_ref()
            .map(|b| b.take(zstd_workers() as usize))
            .filter(|p| p.count() >= 2)
        else {
            return Ok(());
        };
        let n = permit.count() as u32;
        let Some(Coding::Zstd { encoder, level, .. }) = self.coding.take() else {
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
        self.coding = Some(Coding::Zstd {
            encoder,
            level,
            frame_in: 0,
            workers: Some(permit),
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
        let out = match self.coding.take() {
            // `decide` above leaves no writer undecided.
            Some(Coding::Raw(f) | Coding::Undecided(f)) => f,
            Some(Coding::Zstd { encoder, .. }) => {
                let mut f = encoder
                    .finish()
                    .map_err(StoreError::io("finish zstd for", &path))?;
                f.write_all(&trailer(self.bytes))
                    .map_err(StoreError::io("write", &path))?;
                f
            }
            None => return Err(after_failure(&path)),
        };
        let commit = Commit {
            id: self.id(),
            encoding: self.opts.encoding(),
            bytes: self.bytes,
            durability: self.opts.durability_mode(),
        };
        out.commit(commit)
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
