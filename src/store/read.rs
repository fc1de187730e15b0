//! Reading, verifying and listing objects.

use std::fmt;
use std::fs;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use super::format::{check_stored, first_good, one_match, parse_trailer, TRAILER_LEN};
use super::{
    open_regular, ContentId, Encoding, IdPrefix, Local, Store, StoreError, StoredObject,
    ZSTD_SUFFIX,
};

/// Lines `first` to `last`, 1-based and inclusive, as written `A:B`. Either
/// end may be left out: `A:` reads to the end, `:B` from the start.
///
/// # Examples
///
/// ```
/// use spillway::LineRange;
/// let r: LineRange = "10:20".parse().unwrap();
/// assert_eq!((r.first(), r.last()), (10, Some(20)));
/// assert_eq!(LineRange::new(10, Some(20)), Ok(r));
/// assert!("20:10".parse::<LineRange>().is_err());
/// assert!(LineRange::new(0, Some(5)).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineRange {
    first: u64,
    last: Option<u64>,
}

impl LineRange {
    /// Lines `first` to `last` inclusive (`None`: to the end).
    ///
    /// # Errors
    ///
    /// [`RangeError`] when `first` or `last` is 0 (lines are numbered from
    /// 1) or `last` comes before `first`.
    pub fn new(first: u64, last: Option<u64>) -> Result<LineRange, RangeError> {
        let shown = || {
            format!(
                "{first}:{}",
                last.map(|l| l.to_string()).unwrap_or_default()
            )
        };
        if first == 0 || last == Some(0) {
            return Err(RangeError(format!(
                "invalid line range {:?}: lines are numbered from 1",
                shown()
            )));
        }
        if last.is_some_and(|l| l < first) {
            return Err(RangeError(format!(
                "invalid line range {:?}: the end comes before the start",
                shown()
            )));
        }
        Ok(LineRange { first, last })
    }

    /// The first line, from 1.
    pub fn first(&self) -> u64 {
        self.first
    }

    /// The last line, inclusive; `None` for the end.
    pub fn last(&self) -> Option<u64> {
        self.last
    }
}

/// Bytes `start` to `end`, 0-based and half-open, as written `A:B`. Either
/// end may be left out.
///
/// # Examples
///
/// ```
/// use spillway::ByteRange;
/// let r: ByteRange = "0:100".parse().unwrap();
/// assert_eq!((r.start(), r.end()), (0, Some(100)));
/// assert!("100:0".parse::<ByteRange>().is_err());
/// assert!(ByteRange::new(100, Some(0)).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteRange {
    start: u64,
    end: Option<u64>,
}

impl ByteRange {
    /// Bytes `start` up to `end`, half-open (`None`: to the end).
    ///
    /// # Errors
    ///
    /// [`RangeError`] when `end` comes before `start`.
    pub fn new(start: u64, end: Option<u64>) -> Result<ByteRange, RangeError> {
        if end.is_some_and(|e| e < start) {
            return Err(RangeError(format!(
                "invalid byte range \"{start}:{}\": the end comes before the start",
                end.map(|e| e.to_string()).unwrap_or_default()
            )));
        }
        Ok(ByteRange { start, end })
    }

    /// Everything from byte `start` to the end.
    pub fn from(start: u64) -> ByteRange {
        ByteRange { start, end: None }
    }

    /// The `len` bytes from `start` (fewer where they would pass `u64::MAX`).
    pub fn with_len(start: u64, len: u64) -> ByteRange {
        ByteRange {
            start,
            end: Some(start.saturating_add(len)),
        }
    }

    /// The first byte, from 0.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// One past the last byte; `None` for the end.
    pub fn end(&self) -> Option<u64> {
        self.end
    }
}

/// A malformed range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeError(String);

impl fmt::Display for RangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RangeError {}

fn split_range(s: &str, what: &str) -> Result<(Option<u64>, Option<u64>), RangeError> {
    let bad = |why: &str| RangeError(format!("invalid {what} range {s:?}: {why}"));
    let (a, b) = s
        .split_once(':')
        .ok_or_else(|| bad("expected A:B, A: or :B"))?;
    let num = |t: &str| -> Result<Option<u64>, RangeError> {
        let t = t.trim();
        if t.is_empty() {
            return Ok(None);
        }
        if !t.bytes().all(|c| c.is_ascii_digit()) {
            return Err(bad("ends must be whole numbers, 0 or more"));
        }
        t.parse().map(Some).map_err(|_| bad("number too large"))
    };
    Ok((num(a)?, num(b)?))
}

impl FromStr for LineRange {
    type Err = RangeError;

    fn from_str(s: &str) -> Result<Self, RangeError> {
        let (a, b) = split_range(s, "line")?;
        let first = a.unwrap_or(1);
        if first == 0 || b == Some(0) {
            return Err(RangeError(format!(
                "invalid line range {s:?}: lines are numbered from 1"
            )));
        }
        if b.is_some_and(|b| b < first) {
            return Err(RangeError(format!(
                "invalid line range {s:?}: the end comes before the start"
            )));
        }
        Ok(LineRange { first, last: b })
    }
}

impl FromStr for ByteRange {
    type Err = RangeError;

    fn from_str(s: &str) -> Result<Self, RangeError> {
        let (a, b) = split_range(s, "byte")?;
        let start = a.unwrap_or(0);
        if b.is_some_and(|b| b < start) {
            return Err(RangeError(format!(
                "invalid byte range {s:?}: the end comes before the start"
            )));
        }
        Ok(ByteRange { start, end: b })
    }
}

/// What part of an object to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Selection {
    /// Every byte.
    All,
    /// A byte range.
    Bytes(ByteRange),
    /// A line range (lines as [`count_lines`](crate::Outcome::total_lines) counts them).
    Lines(LineRange),
}

/// Copies the selected part of each chunk into `out`.
struct Selector {
    sel: Selection,
    pos: u64,
    line: u64,
    out: Vec<u8>,
    /// Where the selected lines begin in the object.
    line_start: u64,
    /// Every byte of the selection seen so far, kept or not.
    selected: u64,
}

impl Selector {
    fn new(sel: Selection) -> Self {
        Selector {
            sel,
            pos: 0,
            line: 1,
            out: Vec::new(),
            line_start: 0,
            selected: 0,
        }
    }

    fn feed(&mut self, chunk: &[u8]) {
        let before = self.out.len();
        self.select(chunk);
        self.selected += (self.out.len() - before) as u64;
    }

    fn select(&mut self, chunk: &[u8]) {
        let start = self.pos;
        self.pos += chunk.len() as u64;
        match self.sel {
            Selection::All => self.out.extend_from_slice(chunk),
            Selection::Bytes(r) => {
                let end = r.end.unwrap_or(u64::MAX);
                let lo = r.start.max(start);
                let hi = end.min(self.pos);
                if lo < hi {
                    self.out
                        .extend_from_slice(&chunk[(lo - start) as usize..(hi - start) as usize]);
                }
            }
            Selection::Lines(r) => self.feed_lines(chunk, start, r),
        }
    }

    /// Where the selection begins in the object, once it has been fed.
    fn begins(&self) -> u64 {
        match self.sel {
            Selection::All => 0,
            Selection::Bytes(r) => r.start.min(self.pos),
            Selection::Lines(_) => self.line_start,
        }
    }

    fn feed_lines(&mut self, chunk: &[u8], at: u64, r: LineRange) {
        let last = r.last.unwrap_or(u64::MAX);
        let mut i = 0;
        while i < chunk.len() && self.line <= last {
            let rest = &chunk[i..];
            if self.line < r.first {
                let need = r.first - self.line;
                let newlines = bytecount::count(rest, b'\n') as u64;
                if newlines < need {
                    self.line += newlines;
                    return;
                }
                let j = memchr::memchr_iter(b'\n', rest)
                    .nth((need - 1) as usize)
                    .unwrap_or(rest.len() - 1);
                self.line = r.first;
                i += j + 1;
                self.line_start = at + i as u64;
                continue;
            }
            let need = last - self.line + 1;
            let stop = usize::try_from(need - 1)
                .ok()
                .and_then(|n| memchr::memchr_iter(b'\n', rest).nth(n));
            match stop {
                Some(j) => {
                    self.out.extend_from_slice(&rest[..=j]);
                    self.line = last.saturating_add(1);
                    return;
                }
                None => {
                    self.line += bytecount::count(rest, b'\n') as u64;
                    self.out.extend_from_slice(rest);
                    return;
                }
            }
        }
    }
}

impl Store {
    /// Finds the file of an object.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`], or [`StoreError::Symlink`] /
    /// [`StoreError::WrongKind`] for a hostile object path.
    pub fn locate(&self, id: &ContentId) -> Result<(PathBuf, Encoding), StoreError> {
        self.backend().reads()?.locate(id)
    }

    /// The one object whose id starts with `prefix`.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`] or [`StoreError::Ambiguous`].
    pub fn resolve(&self, prefix: &IdPrefix) -> Result<ContentId, StoreError> {
        if let Some(id) = prefix.full() {
            return self.locate(&id).map(|_| id);
        }
        self.backend().reads()?.resolve_prefix(prefix)
    }

    /// Reads part or all of an object. The whole object is always hashed and
    /// checked against its id before any byte is returned, so a corrupt or
    /// truncated object is an error, never wrong bytes. Memory: the selected
    /// bytes plus a 1 MiB buffer.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`], [`StoreError::Corrupt`],
    /// [`StoreError::OutOfRange`] when the selection starts past the end, or
    /// an I/O error.
    pub fn read(&self, id: &ContentId, sel: &Selection) -> Result<Vec<u8>, StoreError> {
        let first = self.first_pass(id, sel, Hold::All(usize::MAX))?;
        Ok(first.held.unwrap_or_default())
    }

    /// One verifying pass over the object: its size, and what `hold` keeps
    /// of the selection.
    pub(super) fn first_pass(
        &self,
        id: &ContentId,
        sel: &Selection,
        hold: Hold,
    ) -> Result<FirstPass, StoreError> {
        let mut selector = Selector::new(*sel);
        let mut newlines = 0u64;
        let mut last = None;
        let mut overflow = false;
        let info = self.scan_good(id, &mut |chunk| match chunk {
            Some(chunk) => {
                newlines += bytecount::count(chunk, b'\n') as u64;
                last = chunk.last().copied().or(last);
                if !overflow {
                    selector.feed(chunk);
                    match hold {
                        Hold::All(most) if selector.out.len() > most => {
                            overflow = true;
                            selector.out = Vec::new();
                        }
                        Hold::First(most) => selector.out.truncate(most),
                        _ => {}
                    }
                }
            }
            None => {
                (newlines, last, overflow) = (0, None, false);
                selector = Selector::new(*sel);
            }
        })?;
        let report = ReadReport {
            bytes: info.bytes,
            lines: newlines + u64::from(last.is_some_and(|b| b != b'\n')),
            written: if overflow {
                0
            } else {
                selector.out.len() as u64
            },
            start: selector.begins(),
        };
        check_range(id, sel, &report)?;
        Ok(FirstPass {
            held: (!overflow).then_some(selector.out),
            selected: selector.selected,
            report,
            info,
        })
    }

    /// Writes part or all of an object to `out`, in bounded memory, and
    /// says how large the object is, so that a caller can tell a range that
    /// runs past its end. As with [`Store::read`], no byte is written before
    /// the whole object has been checked against its id: a selection of up
    /// to 8 MiB is held while the object is hashed; a larger one is written
    /// in a second pass over the verified object (which is checked again).
    ///
    /// # Errors
    ///
    /// Those of [`Store::read`], and an I/O error writing to `out`
    /// ([`StoreError::Io`] with the op `"write output"`).
    pub fn read_into(
        &self,
        id: &ContentId,
        sel: &Selection,
        out: &mut dyn io::Write,
    ) -> Result<ReadReport, StoreError> {
        const HOLD: usize = 8 << 20;
        let FirstPass {
            held, report, info, ..
        } = self.first_pass(id, sel, Hold::All(HOLD))?;
        let write_err = |e: io::Error| StoreError::Io {
            op: "write output",
            path: PathBuf::from("-"),
            source: e,
        };
        if let Some(held) = held {
            out.write_all(&held).map_err(write_err)?;
            return Ok(report);
        }
        // Second pass: stream the selection straight out of the verified
        // object, a block at a time.
        let mut streamer = Selector::new(*sel);
        let mut written = 0u64;
        let mut failed = None;
        self.backend().reads()?.rescan(id, &info, &mut |chunk| {
            if failed.is_some() {
                return;
            }
            streamer.feed(chunk);
            if let Err(e) = out.write_all(&streamer.out) {
                failed = Some(e);
            }
            written += streamer.out.len() as u64;
            streamer.out.clear();
        })?;
        if let Some(e) = failed {
            return Err(write_err(e));
        }
        Ok(ReadReport { written, ..report })
    }

    /// Streams the one good object of this id through `f`: each encoding's
    /// file in turn, so a bad copy under one name never hides a good copy
    /// under the other. `f(None)` says that what it was given so far came
    /// from a bad copy and must be forgotten.
    pub(super) fn scan_good(
        &self,
        id: &ContentId,
        f: &mut dyn FnMut(Option<&[u8]>),
    ) -> Result<StoredObject, StoreError> {
        self.backend().reads()?.scan_good(id, f)
    }

    /// Re-hashes an object and checks it against its id.
    ///
    /// # Errors
    ///
    /// [`StoreError::Corrupt`] and the errors of [`Store::locate`].
    pub fn verify(&self, id: &ContentId) -> Result<StoredObject, StoreError> {
        self.scan_good(id, &mut |_| {})
    }

    /// Every object in the store, without reading their contents. Files
    /// that are not objects are skipped.
    ///
    /// # Errors
    ///
    /// An I/O error listing a directory. A store that does not exist yet is
    /// empty, not an error.
    pub fn list(&self) -> Result<Vec<StoredObject>, StoreError> {
        self.backend().reads()?.list()
    }
}

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

/// What a verifying pass keeps of the selection.
#[derive(Clone, Copy)]
pub(super) enum Hold {
    /// All of it when it is at most this many bytes, else none of it.
    All(usize),
    /// Its first bytes, at most this many.
    First(usize),
}

/// What the verifying pass found.
pub(super) struct FirstPass {
    /// What [`Hold`] kept of the selection (`None`: it was too long).
    pub(super) held: Option<Vec<u8>>,
    /// The selection's length in bytes, kept or not.
    pub(super) selected: u64,
    pub(super) report: ReadReport,
    info: StoredObject,
}

/// What [`Store::read_into`] read: the object's size, and how much of the
/// selection it wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadReport {
    /// The object's bytes.
    pub bytes: u64,
    /// The object's lines (a last line without `\n` counts).
    pub lines: u64,
    /// Bytes written.
    pub written: u64,
    /// Where the selection begins in the object, in bytes from its start.
    pub start: u64,
}

impl ReadReport {
    /// The part of `sel` that lies past the object's end, as text for a
    /// message (`"lines 91-120"`), or `None` when all of it is inside.
    pub fn missing(&self, sel: &Selection) -> Option<String> {
        match *sel {
            Selection::Lines(r) => match r.last {
                Some(last) if last > self.lines => {
                    Some(format!("lines {}-{last}", self.lines.max(r.first - 1) + 1))
                }
                _ => None,
            },
            Selection::Bytes(r) => match r.end {
                Some(end) if end > self.bytes => {
                    Some(format!("bytes {}:{end}", self.bytes.max(r.start)))
                }
                _ => None,
            },
            _ => None,
        }
    }
}

/// A range that starts past the object's end is an error.
fn check_range(id: &ContentId, sel: &Selection, size: &ReadReport) -> Result<(), StoreError> {
    let (bytes, lines) = (size.bytes, size.lines);
    match *sel {
        Selection::Bytes(r) if r.start > bytes => Err(StoreError::OutOfRange {
            detail: format!(
                "byte range starts at byte {}, but {id} has {bytes} bytes",
                r.start
            ),
        }),
        Selection::Lines(r) if r.first > lines.max(1) => Err(StoreError::OutOfRange {
            detail: format!(
                "line range starts at line {}, but {id} has {lines} lines",
                r.first
            ),
        }),
        _ => Ok(()),
    }
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
