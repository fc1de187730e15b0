//! The salient lines of the part a preview will omit, found in the raw
//! stream as it passes: only the head and the last bytes are ever rendered,
//! so the middle costs one regex scan, not a render.

use std::collections::VecDeque;
use std::hash::{BuildHasherDefault, Hasher};

use super::collect::MiddleLines;
use super::strip::strip;
use crate::salient::{Caches, Candidate, Group, LinesAt, Matcher, SalientRank};

/// Appends where each `\n` of `text` is to `ends`, in order: 64 bytes at
/// a time where the processor can.
fn line_ends(text: &[u8], ends: &mut Vec<usize>) {
    #[cfg(target_arch = "x86_64")]
    if super::vector::available() {
        return super::vector::line_ends(text, ends);
    }
    ends.extend(memchr::memchr_iter(b'\n', text));
}

/// The line ends in `gap`, the bytes between two matched lines: most
/// often the one between two lines that follow each other.
#[inline]
fn newlines(gap: &[u8]) -> u64 {
    if gap == b"\n" {
        1
    } else {
        bytecount::count(gap, b'\n') as u64
    }
}

/// A raw line is judged by at most its first this many bytes.
pub(crate) const LINE_CAP: usize = 16 << 10;

/// The most shapes the middle keeps lines of. Past it, a new shape takes
/// the place of the latest shape of a lower rank, if there is one; the
/// lines of a shape not kept are still counted.
pub(crate) const MAX_SHAPES: usize = 512;

/// The most shapes counted exactly; past it the count is a lower bound.
const MAX_COUNTED: usize = 1 << 16;

/// A kept line's raw bytes are at most this many: its text is shown cut to
/// [`MAX_SALIENT_LINE`](crate::salient::MAX_SALIENT_LINE) bytes anyway.
const KEEP_BYTES: usize = 4 << 10;

/// A raw line that matched.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RawHit {
    pub raw: u64,
    pub raw_end: u64,
    pub line: u64,
    /// The line's raw bytes, at most [`KEEP_BYTES`], without its `\n`.
    pub bytes: Vec<u8>,
}

impl RawHit {
    fn set(&mut self, h: &Matched, bytes: &[u8]) {
        self.raw = h.raw;
        self.raw_end = h.raw_end;
        self.line = h.line;
        self.bytes.clear();
        self.bytes
            .extend_from_slice(&bytes[..bytes.len().min(KEEP_BYTES)]);
    }
}

/// A matched line: where its raw bytes are, its 1-based line, its rank
/// and its shape.
#[derive(Clone, Copy, Debug)]
struct Matched {
    raw: u64,
    raw_end: u64,
    line: u64,
    rank: SalientRank,
    shape: u64,
}

/// A hit still within the window: its bytes are in the arena.
#[derive(Clone, Copy, Debug)]
struct Pending {
    hit: Matched,
    /// Where its bytes start in the arena, counted from the arena's first
    /// byte ever, and how many.
    at: usize,
    len: usize,
}

/// The hits still within the window of the end, oldest first, and their
/// bytes: `arena[0]` is byte `arena_base` of all the bytes ever put in it.
#[derive(Default)]
struct Window {
    pending: VecDeque<Pending>,
    arena: Vec<u8>,
    arena_base: usize,
}

impl Window {
    /// Records a hit: `bytes` are its raw bytes.
    fn push(&mut self, hit: Matched, bytes: &[u8]) {
        let bytes = &bytes[..bytes.len().min(KEEP_BYTES)];
        let at = self.arena_base + self.arena.len();
        self.arena.extend_from_slice(bytes);
        self.pending.push_back(Pending {
            hit,
            at,
            len: bytes.len(),
        });
    }

    /// Hands over the hits that start before `raw`, oldest first, with
    /// their bytes, and reclaims the arena once most of it is behind the
    /// hits left.
    fn drain_before(&mut self, raw: u64, mut take: impl FnMut(&Matched, &[u8])) {
        while let Some(h) = self.pending.front().filter(|h| h.hit.raw < raw).copied() {
            self.pending.pop_front();
            let from = h.at - self.arena_base;
            take(&h.hit, &self.arena[from..from + h.len]);
        }
        let live = self
            .pending
            .front()
            .map_or(self.arena_base + self.arena.len(), |h| h.at);
        let dead = live - self.arena_base;
        if dead > 0 && dead >= self.arena.len() / 2 {
            self.arena.drain(..dead);
            self.arena_base = live;
        }
    }
}

/// A `HashMap` keyed by shape keys, which are hashes already.
type ByShape<V> = std::collections::HashMap<u64, V, BuildHasherDefault<KeyHasher>>;

#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// The shapes of the middle's matched lines, in bounded memory.
#[derive(Default)]
struct Shapes {
    index: ByShape<usize>,
    /// The kept shapes' keys and lines, in the order of their first lines.
    groups: Vec<(u64, Group<RawHit>)>,
    /// Shapes seen but not kept (counted up to [`MAX_COUNTED`]).
    dropped: ByShape<()>,
    exact: bool,
    matched: u64,
}

impl Shapes {
    fn new() -> Shapes {
        Shapes {
            exact: true,
            ..Shapes::default()
        }
    }

    fn add(&mut self, h: &Matched, bytes: &[u8]) {
        self.matched += 1;
        if let Some(&i) = self.index.get(&h.shape) {
            // In place, as `Group::then` would join a group of one: the
            // last line's buffer is reused.
            let g = &mut self.groups[i].1;
            g.count += 1;
            g.rank = g.rank.max(h.rank);
            if g.second.is_none() {
                g.second = Some(h.line);
            }
            let last = g.last.get_or_insert_with(RawHit::default);
            g.before_last = Some(if g.count == 2 {
                g.first.line
            } else {
                last.line
            });
            last.set(h, bytes);
            return;
        }
        if self.dropped.contains_key(&h.shape) {
            return;
        }
        if self.groups.len() == MAX_SHAPES && !self.make_room(h.rank) {
            self.drop_shape(h.shape);
            return;
        }
        let mut first = RawHit::default();
        first.set(h, bytes);
        self.index.insert(h.shape, self.groups.len());
        self.groups.push((
            h.shape,
            Group {
                rank: h.rank,
                count: 1,
                first,
                second: None,
                before_last: None,
                last: None,
            },
        ));
    }

    /// Makes room in a full table for a new shape of `rank`: drops the
    /// latest kept shape of the lowest rank, if it ranks below `rank`; or,
    /// when every kept shape has `rank` (the highest), the latest of them
    /// but the first, so that the first and the last line of the highest
    /// rank are always kept, as the preview promises.
    fn make_room(&mut self, rank: SalientRank) -> bool {
        let Some(lowest) = self.groups.iter().map(|(_, g)| g.rank).min() else {
            return true;
        };
        let i = if lowest < rank {
            self.groups.iter().rposition(|(_, g)| g.rank == lowest)
        } else if lowest == rank && self.groups.iter().all(|(_, g)| g.rank == rank) {
            // Never the first: it holds the first line of the rank.
            Some(self.groups.len() - 1).filter(|&i| i > 0)
        } else {
            None
        };
        let Some(i) = i else {
            return false;
        };
        let (shape, _) = self.groups.remove(i);
        self.drop_shape(shape);
        self.index.remove(&shape);
        if i < self.groups.len() {
            // Removed from the middle: the later shapes moved.
            for (j, (shape, _)) in self.groups.iter().enumerate().skip(i) {
                self.index.insert(*shape, j);
            }
        }
        true
    }

    fn drop_shape(&mut self, shape: u64) {
        if self.dropped.len() < MAX_COUNTED {
            self.dropped.insert(shape, ());
        } else {
            self.exact = false;
        }
    }
}

/// A matched line of a run of whole lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Found {
    /// Where its raw bytes start and end (before the `\n`) in the run.
    start: usize,
    end: usize,
    /// How many of its raw bytes it was judged by (at most [`LINE_CAP`]).
    judged: usize,
    /// The run's lines before it.
    line: u64,
    rank: SalientRank,
    shape: u64,
}

/// The matched lines of a run of whole lines, how many lines it has, and
/// how many bytes.
#[derive(Debug, Default)]
pub(crate) struct Finds {
    hits: Vec<Found>,
    newlines: u64,
    bytes: usize,
}

impl Finds {
    /// The bytes of the run: the lines found so far.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Empty, its memory kept.
    fn clear(&mut self) {
        self.hits.clear();
        self.newlines = 0;
        self.bytes = 0;
    }
}

/// Finds the matched lines of runs of whole lines: the part of the scan
/// that needs no state of the stream, so any thread can do it.
pub(crate) struct Finder {
    matcher: Matcher,
    /// Taken when the first line is judged, given back when done.
    caches: Option<Caches>,
    /// For judging a long line again while `caches` is in use.
    caches_long: Option<Caches>,
    /// The lines' text without escape sequences.
    stripped: Vec<u8>,
    /// Where the raw lines of escaped text end.
    ends: Vec<usize>,
}

impl Drop for Finder {
    fn drop(&mut self) {
        for c in [self.caches.take(), self.caches_long.take()]
            .into_iter()
            .flatten()
        {
            self.matcher.give_back(c);
        }
    }
}

impl Finder {
    pub(crate) fn new(matcher: Matcher) -> Finder {
        Finder {
            caches: None,
            caches_long: None,
            matcher,
            stripped: Vec::new(),
            ends: Vec::new(),
        }
    }

    /// A finder of its own, for another thread.
    pub(crate) fn fork(&self) -> Finder {
        Finder::new(self.matcher.clone())
    }

    /// The rank and shape of one line (raw, without its `\n`), if it
    /// matches.
    fn judge(&mut self, line: &[u8]) -> Option<(SalientRank, u64)> {
        let text = if memchr::memchr(0x1B, line).is_none() {
            line
        } else {
            strip(line, &mut self.stripped);
            &self.stripped
        };
        let caches = self.caches.get_or_insert_with(|| self.matcher.caches());
        let rank = self.matcher.line_rank(text, caches)?;
        Some((rank, self.matcher.shape(text, rank, caches)))
    }

    /// The matched lines of `bulk`, whole lines from a line's start.
    #[cfg(test)]
    pub(crate) fn find(&mut self, bulk: &[u8]) -> Finds {
        let mut out = Finds::default();
        self.find_more(bulk, &mut out);
        out
    }

    /// Adds the matched lines of the next piece of the run `bulk` (whole
    /// lines from a line's start), after the bytes `out` holds the finds
    /// of: up to the first line end at least `piece` bytes on, or to the
    /// run's end.
    pub(crate) fn find_piece(&mut self, bulk: &[u8], piece: usize, out: &mut Finds) {
        let rest = &bulk[out.bytes..];
        let end = rest
            .get(piece..)
            .and_then(|r| memchr::memchr(b'\n', r))
            .map_or(rest.len(), |i| piece + i + 1);
        self.find_more(&rest[..end], out);
    }

    /// Adds the matched lines of `bulk`, whole lines from a line's start,
    /// to `out` as those of the run's next bytes.
    fn find_more(&mut self, bulk: &[u8], out: &mut Finds) {
        let (base, lines) = (out.bytes, out.newlines);
        if memchr::memchr(0x1B, bulk).is_none() {
            self.find_plain(bulk, base, lines, out);
        } else {
            self.find_escaped(bulk, base, lines, out);
        }
        out.bytes += bulk.len();
    }

    /// Lines without an escape sequence, found as if `bulk` started
    /// `base` bytes and `line` lines into the run.
    fn find_plain(&mut self, bulk: &[u8], base: usize, mut line: u64, out: &mut Finds) {
        let mut counted = 0;
        let (matcher, long) = (&self.matcher, &mut self.caches_long);
        let caches = self.caches.get_or_insert_with(|| matcher.caches());
        let mut at = LinesAt::default();
        while let Some((r, rank)) = matcher.next_line(bulk, &mut at, caches) {
            line += newlines(&bulk[counted..r.start]);
            // A line holds no line end: counted from its end next.
            counted = r.end;
            let text = &bulk[r.clone()];
            // A long line is judged by its first LINE_CAP bytes, as when a
            // chunk cuts it.
            let (text, rank, shape) = if text.len() > LINE_CAP {
                let long = long.get_or_insert_with(|| matcher.caches());
                match matcher.line_rank(&text[..LINE_CAP], long) {
                    Some(rank) => {
                        let cut = &text[..LINE_CAP];
                        (cut, rank, matcher.shape(cut, rank, long))
                    }
                    None => continue,
                }
            } else {
                (text, rank, matcher.shape(text, rank, caches))
            };
            out.hits.push(Found {
                start: base + r.start,
                end: base + r.end,
                judged: text.len(),
                line,
                rank,
                shape,
            });
        }
        out.newlines = line + bytecount::count(&bulk[counted..], b'\n') as u64;
    }

    /// Lines with escape sequences: matched without them, found again in
    /// the raw bytes by their line numbers.
    fn find_escaped(&mut self, bulk: &[u8], base: usize, lines: u64, out: &mut Finds) {
        let mut buf = std::mem::take(&mut self.stripped);
        strip(bulk, &mut buf);
        let mut counted = 0;
        let mut line = 0;
        // The raw lines' ends, found once a line matches.
        let mut ends = std::mem::take(&mut self.ends);
        ends.clear();
        let mut found_ends = false;
        let (matcher, long) = (&self.matcher, &mut self.caches_long);
        let caches = self.caches.get_or_insert_with(|| matcher.caches());
        let mut at = LinesAt::default();
        while let Some((r, rank)) = matcher.next_line(&buf, &mut at, caches) {
            line += newlines(&buf[counted..r.start]);
            counted = r.end;
            if !found_ends {
                line_ends(bulk, &mut ends);
                found_ends = true;
            }
            // The text's lines are the raw bytes' lines.
            let raw_line = usize::try_from(line).map_or(ends.len(), |l| l.min(ends.len()));
            let raw_pos = raw_line.checked_sub(1).map_or(0, |k| ends[k] + 1);
            let end = ends.get(raw_line).copied().unwrap_or(bulk.len());
            let text = &bulk[raw_pos..end];
            let (judged, rank, shape) = if text.len() > LINE_CAP {
                let mut cut = Vec::new();
                strip(&text[..LINE_CAP], &mut cut);
                let long = long.get_or_insert_with(|| matcher.caches());
                match matcher.line_rank(&cut, long) {
                    Some(rank) => (LINE_CAP, rank, matcher.shape(&cut, rank, long)),
                    None => continue,
                }
            } else {
                (text.len(), rank, matcher.shape(&buf[r], rank, caches))
            };
            out.hits.push(Found {
                start: base + raw_pos,
                end: base + end,
                judged,
                line: lines + line,
                rank,
                shape,
            });
        }
        // Raw lines: an escape string may hold a line end the text has not.
        out.newlines = lines
            + if found_ends {
                ends.len() as u64
            } else {
                bytecount::count(bulk, b'\n') as u64
            };
        self.stripped = buf;
        self.ends = ends;
    }
}

/// Where a hit goes once the head's end is known: to the middle's shapes
/// if it lies between the head and `tail_start`, kept aside if the head's
/// last byte cuts it.
fn take(
    h: &Matched,
    bytes: &[u8],
    head_end: u64,
    tail_start: u64,
    shapes: &mut Shapes,
    across: &mut Option<(RawHit, SalientRank, u64)>,
) {
    if h.raw >= head_end {
        if h.raw_end <= tail_start {
            shapes.add(h, bytes);
        }
    } else if h.raw_end > head_end {
        let mut hit = RawHit::default();
        hit.set(h, bytes);
        *across = Some((hit, h.rank, h.shape));
    }
}

/// Scans whole raw lines as they stream.
pub(crate) struct RawScan {
    finder: Finder,
    /// The last bytes' finds, their memory kept for the next.
    finds: Finds,
    /// The start of a line the last chunk cut (at most [`LINE_CAP`] bytes).
    carry: Vec<u8>,
    carry_start: u64,
    carry_line: u64,
    /// Raw bytes fed so far, and the 1-based line of the next byte.
    at: u64,
    line: u64,
    /// Hits still within `window` bytes of the end: they may lie in the
    /// rendered tail, which is scanned on its own.
    window: u64,
    pending: Window,
    shapes: Shapes,
    /// Hits before this raw offset are in the head: passed over.
    head_end: Option<u64>,
    /// The hit that starts in the head and ends after it: the line the
    /// head's last byte cuts.
    across: Option<(RawHit, SalientRank, u64)>,
}

impl RawScan {
    pub(crate) fn new(matcher: Matcher, window: u64) -> RawScan {
        RawScan {
            finder: Finder::new(matcher),
            finds: Finds::default(),
            carry: Vec::new(),
            carry_start: 0,
            carry_line: 1,
            at: 0,
            line: 1,
            window,
            pending: Window::default(),
            shapes: Shapes::new(),
            head_end: None,
            across: None,
        }
    }

    /// A finder for another thread to find lines with.
    pub(crate) fn finder(&self) -> Finder {
        self.finder.fork()
    }

    /// The head's raw end, once known.
    pub(crate) fn set_head_end(&mut self, raw: u64) {
        self.head_end = Some(raw);
    }

    /// Whether the next byte starts a line (nothing is carried).
    pub(crate) fn at_line_start(&self) -> bool {
        self.carry.is_empty() && self.at == self.carry_start
    }

    pub(crate) fn feed(&mut self, mut data: &[u8]) {
        if data.is_empty() {
            return;
        }
        if !self.at_line_start() {
            // Finish the line the last chunk cut.
            let room = LINE_CAP.saturating_sub(self.carry.len());
            match memchr::memchr(b'\n', data) {
                None => {
                    self.carry.extend_from_slice(&data[..room.min(data.len())]);
                    self.at += data.len() as u64;
                    return;
                }
                Some(nl) => {
                    self.carry.extend_from_slice(&data[..room.min(nl)]);
                    let end = self.at + nl as u64 + 1;
                    self.judge_carry(end);
                    self.carry.clear();
                    self.at = end;
                    self.line += 1;
                    data = &data[nl + 1..];
                    self.carry_start = self.at;
                    self.carry_line = self.line;
                }
            }
        }
        // Whole lines, scanned in one pass.
        let whole = memchr::memrchr(b'\n', data).map_or(0, |i| i + 1);
        let bulk = &data[..whole];
        let mut finds = std::mem::take(&mut self.finds);
        finds.clear();
        self.finder.find_more(bulk, &mut finds);
        self.record(bulk, &finds);
        self.finds = finds;
        let rest = &data[whole..];
        self.carry
            .extend_from_slice(&rest[..rest.len().min(LINE_CAP)]);
        self.at += rest.len() as u64;
        self.evict();
    }

    /// Feeds `bulk`, whole lines from the next byte (which must start a
    /// line), whose matched lines another thread found.
    pub(crate) fn feed_found(&mut self, bulk: &[u8], finds: &Finds) {
        if !self.at_line_start() || !bulk.ends_with(b"\n") {
            // Not what the finder was given: scanned here instead.
            return self.feed(bulk);
        }
        self.record(bulk, finds);
        self.evict();
    }

    /// Judges the carried line, which ends at raw offset `end`, and keeps
    /// it in the window if it matches.
    fn judge_carry(&mut self, end: u64) {
        if let Some((rank, shape)) = self.finder.judge(&self.carry) {
            let hit = Matched {
                raw: self.carry_start,
                raw_end: end,
                line: self.carry_line,
                rank,
                shape,
            };
            self.pending.push(hit, &self.carry);
        }
    }

    /// Records the matched lines of `bulk`, whole lines from the next byte.
    fn record(&mut self, bulk: &[u8], finds: &Finds) {
        // A hit that will be past the window once `bulk` is in can no
        // longer lie in the rendered tail: it is grouped now, from `bulk`,
        // after the hits before it, instead of being copied into the
        // window first (most of a long chunk's hits).
        let keep_from = (self.at + bulk.len() as u64).saturating_sub(self.window);
        if keep_from > self.at {
            self.evict_before(keep_from);
        }
        for f in &finds.hits {
            let hit = Matched {
                raw: self.at + f.start as u64,
                raw_end: self.at + f.end as u64 + 1,
                line: self.line + f.line,
                rank: f.rank,
                shape: f.shape,
            };
            let bytes = &bulk[f.start..f.start + f.judged];
            if hit.raw >= keep_from {
                self.pending.push(hit, bytes);
            } else if let Some(head_end) = self.head_end {
                take(
                    &hit,
                    bytes,
                    head_end,
                    u64::MAX,
                    &mut self.shapes,
                    &mut self.across,
                );
            }
        }
        self.at += bulk.len() as u64;
        self.line += finds.newlines;
        self.carry_start = self.at;
        self.carry_line = self.line;
    }

    /// Groups the hits that can no longer lie in the rendered tail. (Until
    /// the head's end is known, every byte fed went to the head: its hits
    /// are the head's.)
    fn evict(&mut self) {
        self.evict_before(self.at.saturating_sub(self.window));
    }

    /// Groups the hits that start before `keep_from`.
    fn evict_before(&mut self, keep_from: u64) {
        let Some(head_end) = self.head_end else {
            self.pending.drain_before(keep_from, |_, _| {});
            return;
        };
        let (shapes, across) = (&mut self.shapes, &mut self.across);
        self.pending.drain_before(keep_from, |h, bytes| {
            take(h, bytes, head_end, u64::MAX, shapes, across);
        });
    }

    /// The hits between the head (`head_end`) and the rendered tail
    /// (`tail_start`), by shape, their lines made [`Candidate`]s by `show`.
    pub(crate) fn finish(
        mut self,
        head_end: u64,
        tail_start: u64,
        show: impl Fn(&RawHit, SalientRank, u64) -> Candidate,
    ) -> MiddleLines {
        self.head_end = Some(head_end);
        if !self.carry.is_empty() {
            self.judge_carry(self.at);
        }
        let (shapes, across) = (&mut self.shapes, &mut self.across);
        self.pending.drain_before(u64::MAX, |h, bytes| {
            take(h, bytes, head_end, tail_start, shapes, across);
        });
        let shapes = self.shapes;
        let across = self
            .across
            .filter(|(h, _, _)| h.raw_end <= tail_start)
            .map(|(h, rank, shape)| show(&h, rank, shape));
        MiddleLines {
            across,
            groups: shapes
                .groups
                .iter()
                .map(|(shape, g)| g.map(|h| show(h, g.rank, *shape)))
                .collect(),
            matched: shapes.matched,
            dropped: shapes.dropped.into_keys().collect(),
            exact: shapes.exact,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::salient::SalientPatterns;

    /// A flood of matched lines, of the sizes a tool prints just over its
    /// budget and larger, is found as a search of each line alone with no
    /// memory finds it: the same lines, numbers, ranks and shapes, whether
    /// its matched lines come one after another (looked up in the memory
    /// before the gate) or between others (a JSON log's lines of their
    /// skeleton with another level among them), coloured or not, and again
    /// with the memory warm.
    #[test]
    fn a_flood_is_found_as_a_search_of_each_line_alone_finds_it() {
        let matcher = SalientPatterns::default().matcher().unwrap();
        // A JSON log's lines between matched ones: of the skeleton of one
        // of them, with another level.
        let json = |i: u64, level: u32| {
            format!(
                r#"{{"ts":"10:{:02}","level":{level},"msg":"request {} failed"}}"#,
                i % 60,
                i * 977
            )
        };
        for (size, every, colour, json_between) in [
            (4_500, 1, false, false),
            (6_000, 1, true, false),
            (8_192, 2, false, false),
            (8_192, 2, false, true),
            (200_000, 1, false, false),
            (200_000, 3, true, false),
            (200_000, 3, false, true),
        ] {
            let mut bulk = Vec::new();
            let mut i = 0u64;
            while bulk.len() < size {
                let k = i * 977;
                let line = if !i.is_multiple_of(every) {
                    if json_between {
                        json(i, 30)
                    } else {
                        format!("   Compiling crate-{i} v0.1.{}", i % 9)
                    }
                } else {
                    match (i / every) % 6 {
                        0 => format!("src/lib.rs:{}:9: error[E0308]: mismatched types", k % 1000),
                        1 => format!("src/a.rs:{i}:1: error[E0{}]: cannot find `v`", 400 + i % 3),
                        2 if colour => format!("\x1b[33mwarning\x1b[0m: unused `x{i}`"),
                        2 => format!("warning: unused variable: `x{i}`"),
                        3 => format!("2026-12-06T10:{:02}:00Z ERROR request {k} failed", i % 60),
                        4 => json(i, 50),
                        _ => format!("FAILED tests/t_{}.py::case_{k:x} - AssertionError", i % 300),
                    }
                };
                bulk.extend_from_slice(line.as_bytes());
                bulk.push(b'\n');
                i += 1;
            }
            let mut want = Vec::new();
            let mut start = 0;
            for (n, raw) in bulk.split(|&b| b == b'\n').enumerate() {
                let mut text = Vec::new();
                strip(raw, &mut text);
                if let Some(rank) = matcher.line_rank(&text, &mut Caches::default()) {
                    let shape = crate::salient::shape::ranked(&text, rank);
                    want.push((start, start + raw.len(), n as u64, rank, shape));
                }
                start += raw.len() + 1;
            }
            assert!(
                want.len() as u64 * every >= i - 1,
                "{size}: {} of {i}",
                want.len()
            );
            let mut finder = Finder::new(matcher.clone());
            // Whole, cold then warm; then in pieces of whole lines, as one
            // run.
            for (warm, piece) in [
                (false, None),
                (true, None),
                (true, Some(1)),
                (true, Some(777)),
                (true, Some(64 << 10)),
            ] {
                let found = match piece {
                    None => finder.find(&bulk),
                    Some(piece) => {
                        let mut found = Finds::default();
                        while found.bytes() < bulk.len() {
                            finder.find_piece(&bulk, piece, &mut found);
                            // Whole lines: what the scan records as found.
                            assert!(bulk[..found.bytes()].ends_with(b"\n"));
                        }
                        found
                    }
                };
                let got: Vec<_> = found
                    .hits
                    .iter()
                    .map(|f| (f.start, f.end, f.line, f.rank, f.shape))
                    .collect();
                assert_eq!(
                    got, want,
                    "{size} bytes, one line in {every} matched, JSON {json_between}, warm {warm}, pieces {piece:?}"
                );
                assert_eq!(found.newlines, i, "{size}, pieces {piece:?}");
                assert_eq!(found.bytes(), bulk.len(), "{size}, pieces {piece:?}");
            }
        }
    }

    /// Every line end of a text is found, in order, 64 bytes at a time as
    /// a byte at a time: at every place of a block, in texts of every
    /// length around a block's, and in random bytes.
    #[test]
    fn line_ends_are_every_line_end_in_order() {
        let naive = |t: &[u8]| -> Vec<usize> {
            t.iter()
                .enumerate()
                .filter(|(_, &b)| b == b'\n')
                .map(|(i, _)| i)
                .collect()
        };
        let mut texts: Vec<Vec<u8>> = Vec::new();
        for len in [0, 1, 63, 64, 65, 127, 128, 129, 200] {
            for at in [0, 1, 31, 62, 63, 64, 65, 127, 128, 199] {
                let mut t = vec![b'x'; len];
                if let Some(b) = t.get_mut(at) {
                    *b = b'\n';
                }
                texts.push(t);
            }
        }
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for len in 0..400 {
            texts.push(
                (0..len)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        if x.is_multiple_of(5) {
                            b'\n'
                        } else {
                            x as u8
                        }
                    })
                    .collect(),
            );
        }
        for t in &texts {
            let mut got = vec![7];
            line_ends(t, &mut got);
            assert_eq!(got[1..], naive(t)[..], "{t:?}");
            #[cfg(target_arch = "x86_64")]
            if crate::render::vector::available() {
                let mut got = Vec::new();
                crate::render::vector::line_ends(t, &mut got);
                assert_eq!(got, naive(t), "{t:?}");
            }
        }
    }

    /// A search state costs far more to make than a small output's scan:
    /// each finder takes one when it first judges a line and gives it back,
    /// so a stream of small outputs makes one.
    #[test]
    fn finders_reuse_their_matchers_search_states() {
        let matcher = SalientPatterns::default().matcher().unwrap();
        let line = b"error: one\nok\n";
        for _ in 0..3 {
            let mut f = Finder::new(matcher.clone());
            assert_eq!(f.find(line).hits.len(), 1);
            assert!(f.caches.is_some());
        }
        assert_eq!(matcher.spare_len(), 1, "one state, reused");
        // A finder that judges nothing takes nothing.
        drop(Finder::new(matcher.clone()));
        assert_eq!(matcher.spare_len(), 1);
    }
}
