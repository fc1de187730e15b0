//! Reading, verifying and listing objects.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::str::FromStr;

use super::{ContentId, Encoding, IdPrefix, Store, StoreError, StoredObject};

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
