//! The middle's scan on a thread of its own, once a stream is long enough
//! for it to pay: the stage's thread hashes, counts and stores while the
//! scan finds, ranks and shapes the salient lines.
//!
//! The scan sees exactly the bytes and the head's end it would see on the
//! stage's thread, in the same order (they travel on one channel), so its
//! result is the same. Memory stays bounded as for any consumer on a
//! thread of its own ([`crate::offload`]): a few chunks of 1 MiB wait for
//! it, and their buffers come back to be reused. It moves to its thread
//! with the bytes that bring the stream to its first MiB, before it scans
//! them: those are scanned while its memory of lines and its searches are
//! new, the slowest of a stream's, and on its thread that runs beside the
//! stage's own work.
//!
//! When the scan falls behind (its queue is full), the stage's thread does
//! the part of the scan that needs no state for the chunk it hands over:
//! finding, ranking and shaping its lines ([`Finder`]), a piece of
//! [`PIECE`] bytes at a time, until the scan has taken a chunk from its
//! queue. Both threads then work instead of one waiting, and neither waits
//! for the other for long: the scan records what was found and finds the
//! rest of the chunk's lines itself. Chunks are cut after a line end for
//! this (a chunk without one is handed over as it is and scanned on the
//! thread).

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::Arc;

use super::middle::{Finder, Finds, RawScan};
use crate::offload::{Chunks, CHUNK, QUEUED, THREAD_AFTER};
use crate::threads::{self, Joined, Parallelism};

enum Msg {
    /// Bytes to scan (a range of a buffer), and the matched lines of
    /// their first bytes (whole lines) if those were found already.
    Data(Vec<u8>, Range<usize>, Option<Finds>),
    HeadEnd(u64),
}

/// The bytes the stage's thread finds the lines of before it looks
/// whether the scan has taken a chunk from its queue: a few hundred
/// microseconds of work, small beside a chunk's.
const PIECE: usize = 64 << 10;

/// The scan, where it runs.
pub(crate) enum Scan {
    Here(Box<RawScan>),
    Worker(Box<Worker>),
}

impl Scan {
    pub(crate) fn set_head_end(&mut self, raw: u64) {
        match self {
            Scan::Here(s) => s.set_head_end(raw),
            Scan::Worker(w) => w.set_head_end(raw),
        }
    }

    pub(crate) fn feed(&mut self, data: &[u8]) {
        match self {
            Scan::Here(s) => s.feed(data),
            Scan::Worker(w) => w.feed(data),
        }
    }

    /// Feeds the bytes of `buf`, and gives back a buffer to read the next
    /// bytes into (its bytes stale): on a thread, `buf` itself is handed
    /// over instead of a copy of its bytes.
    pub(crate) fn feed_buf(&mut self, buf: Vec<u8>) -> Vec<u8> {
        match self {
            Scan::Here(s) => {
                s.feed(&buf);
                buf
            }
            Scan::Worker(w) => w.feed_buf(buf),
        }
    }

    /// The scan moved to a thread of its own from `budget`, once the
    /// stream, `through` the bytes it is about to be given, is that long
    /// (it stays here if it gets no thread).
    pub(crate) fn maybe_move(self, through: u64, budget: &Parallelism) -> Scan {
        match self {
            Scan::Here(s) if through >= THREAD_AFTER => match Worker::start(s, budget) {
                Ok(w) => Scan::Worker(w),
                Err(s) => Scan::Here(s),
            },
            other => other,
        }
    }

    /// The scan, with every byte fed to it scanned.
    pub(crate) fn into_scan(self) -> Box<RawScan> {
        match self {
            Scan::Here(s) => s,
            Scan::Worker(w) => w.finish(),
        }
    }
}

/// The stage's end of a scan on a thread.
pub(crate) struct Worker {
    tx: SyncSender<Msg>,
    /// Bytes not yet handed over.
    chunks: Chunks,
    /// Whether `chunks` starts a line.
    starts_line: bool,
    /// For finding a chunk's lines here when the scan is behind.
    finder: Finder,
    /// Messages sent and not yet taken by the scan (or about to be sent):
    /// at least as many as wait in the channel.
    queued: Arc<AtomicUsize>,
    /// Whether every chunk's lines are found here, as when the scan is
    /// always behind, and in how many pieces at most (for tests).
    always_here: Option<usize>,
    thread: Joined<Box<RawScan>>,
}

impl Worker {
    /// Starts a thread for `scan`; hands it back if it gets none.
    fn start(scan: Box<RawScan>, budget: &Parallelism) -> Result<Box<Worker>, Box<RawScan>> {
        let Some(permit) = budget.permit() else {
            return Err(scan);
        };
        let (tx, rx) = mpsc::sync_channel::<Msg>(QUEUED);
        let (back_tx, back) = mpsc::channel::<Vec<u8>>();
        let (starts_line, finder) = (scan.at_line_start(), scan.finder());
        let queued = Arc::new(AtomicUsize::new(0));
        let taken = Arc::clone(&queued);
        let work = move |mut scan: Box<RawScan>| {
            for msg in rx {
                taken.fetch_sub(1, Ordering::Relaxed);
                match msg {
                    Msg::Data(buf, range, found) => {
                        let mut rest = range;
                        if let Some(finds) = found {
                            let first = rest.start..rest.start + finds.bytes();
                            scan.feed_found(&buf[first], &finds);
                            rest.start += finds.bytes();
                        }
                        scan.feed(&buf[rest]);
                        // The stage may be gone: the buffer is then freed.
                        let _ = back_tx.send(buf);
                    }
                    Msg::HeadEnd(raw) => scan.set_head_end(raw),
                }
            }
            scan
        };
        let thread = threads::start(permit, "spillway-scan", scan, work)?;
        Ok(Box::new(Worker {
            tx,
            chunks: Chunks::new(back),
            starts_line,
            finder,
            queued,
            always_here: None,
            thread,
        }))
    }

    fn send(&mut self, msg: Msg) {
        self.queued.fetch_add(1, Ordering::Relaxed);
        // Fails only when the thread has died, which `finish` reports.
        let _ = self.tx.send(msg);
    }

    /// Sends `buf[range]` to be scanned unless the scan's queue is full;
    /// gives them back if it is.
    fn try_hand(&mut self, buf: Vec<u8>, range: Range<usize>) -> Option<(Vec<u8>, Range<usize>)> {
        if self.always_here.is_some() {
            return Some((buf, range));
        }
        self.queued.fetch_add(1, Ordering::Relaxed);
        match self.tx.try_send(Msg::Data(buf, range, None)) {
            Err(TrySendError::Full(Msg::Data(buf, range, _))) => {
                self.queued.fetch_sub(1, Ordering::Relaxed);
                Some((buf, range))
            }
            // The thread is gone, which `finish` reports.
            _ => None,
        }
    }

    /// Whether the scan has room in its queue (it took a chunk since the
    /// queue was full). The count only chooses which thread finds the
    /// next lines; what is found is the same either way.
    fn has_room(&self) -> bool {
        self.queued.load(Ordering::Relaxed) < QUEUED
    }

    /// Hands over the buffered bytes: up to their last line end, or all of
    /// them if `all` (or if they hold none).
    fn hand_over(&mut self, all: bool) {
        let gathered = self.chunks.gathered();
        if gathered.is_empty() {
            return;
        }
        let cut = match memchr::memrchr(b'\n', gathered) {
            Some(i) if !all => i + 1,
            _ => gathered.len(),
        };
        let chunk = self.chunks.take(cut);
        let all = 0..chunk.len();
        self.hand(chunk, all);
    }

    /// Hands `buf[range]`, the next bytes, to the thread; when the thread
    /// is behind and they are whole lines, finds the lines of their first
    /// pieces here until it is not.
    fn hand(&mut self, buf: Vec<u8>, range: Range<usize>) {
        let ends_line = buf[range.clone()].ends_with(b"\n");
        let whole = self.starts_line && ends_line;
        self.starts_line = ends_line;
        let Some((buf, range)) = self.try_hand(buf, range) else {
            return;
        };
        if !whole {
            return self.send(Msg::Data(buf, range, None));
        }
        // The scan is behind: lines are found here, a piece at a time.
        let bulk = &buf[range.clone()];
        let mut found = Finds::default();
        let mut pieces = 0;
        while found.bytes() < bulk.len() {
            self.finder.find_piece(bulk, PIECE, &mut found);
            pieces += 1;
            let enough = match self.always_here {
                Some(most) => pieces >= most,
                None => self.has_room(),
            };
            if enough {
                break;
            }
        }
        self.send(Msg::Data(buf, range, Some(found)));
    }

    /// Feeds the bytes of `buf`, handing over `buf` itself (its whole
    /// lines; the line the last bytes cut is finished first, and the one
    /// `buf` ends inside is kept for the next, both copied), and gives
    /// back a buffer the thread is done with, or a new one.
    fn feed_buf(&mut self, buf: Vec<u8>) -> Vec<u8> {
        let lines = match (memchr::memchr(b'\n', &buf), memchr::memrchr(b'\n', &buf)) {
            (Some(first), Some(last)) if buf.len() >= CHUNK / 2 => (first + 1)..(last + 1),
            // A small buffer is gathered, as bytes fed are.
            _ => {
                self.feed(&buf);
                return buf;
            }
        };
        let len = buf.len();
        let owned = if self.chunks.gathered().is_empty() && self.starts_line {
            0..lines.end
        } else {
            self.feed(&buf[..lines.start]);
            self.hand_over(true);
            lines.clone()
        };
        // The start of the line `buf` ends inside, copied: it goes after
        // `buf`'s lines.
        let rest = buf[lines.end..].to_vec();
        if !owned.is_empty() {
            self.hand(buf, owned);
        }
        self.feed(&rest);
        self.chunks.spare().unwrap_or_else(|| vec![0; len])
    }

    fn set_head_end(&mut self, raw: u64) {
        // After every byte before it, as the scan here would see it.
        self.hand_over(true);
        self.send(Msg::HeadEnd(raw));
    }

    fn feed(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            data = self.chunks.fill(data);
            if self.chunks.is_full() {
                self.hand_over(false);
            }
        }
    }

    fn finish(mut self: Box<Self>) -> Box<RawScan> {
        self.hand_over(true);
        let Worker { tx, thread, .. } = *self;
        // Closing the channel ends the thread's loop.
        drop(tx);
        thread.join()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::salient::{Candidate, SalientPatterns};

    /// A log of `lines` lines where salient lines of a few shapes, some
    /// coloured, some long, fall throughout, and the middle's matches.
    fn log(lines: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for i in 0..lines {
            let line = match i % 13 {
                0 => format!("error[E0{}]: cannot find value `v{i}`\n", 400 + i % 3),
                3 => format!("\x1b[33mwarning\x1b[0m: unused `x{i}` at src/lib.rs:{i}\n"),
                5 if i % 1000 == 5 => format!("ERROR {}\n", "y".repeat(20 << 10)),
                7 => format!("2026-12-05 WARN retrying after error = reset {i}\r\n"),
                _ => format!("ok step {i} of the build\n"),
            };
            out.extend_from_slice(line.as_bytes());
        }
        out
    }

    /// Scans `input` in pieces, borrowed or (`owned`) in buffers of their
    /// own, telling the scan the head's end before the piece it is in.
    fn scan(scan: Scan, input: &[u8], piece: usize, head_end: u64, owned: bool) -> MiddleLinesOf {
        let mut scan = scan;
        let mut fed = 0u64;
        for p in input.chunks(piece) {
            if fed <= head_end && head_end < fed + p.len() as u64 {
                scan.set_head_end(head_end);
            }
            if owned {
                let back = scan.feed_buf(p.to_vec());
                // What comes back is a buffer to read into: any length.
                assert!(back.capacity() > 0);
            } else {
                scan.feed(p);
            }
            fed += p.len() as u64;
        }
        let tail_start = input.len() as u64 - 70_000;
        scan.into_scan()
            .finish(head_end, tail_start, |h, rank, shape| {
                let text = String::from_utf8_lossy(&h.bytes);
                Candidate::new(&text, h.line, (h.raw, h.raw_end), rank, shape)
            })
    }

    type MiddleLinesOf = crate::render::MiddleLines;

    #[test]
    fn a_scan_on_a_thread_finds_what_it_finds_here() {
        let matcher = SalientPatterns::default().matcher().unwrap();
        let input = log(100_000);
        assert!(input.len() as u64 > 2 * THREAD_AFTER);
        let head_end = 40_000;
        let here = scan(
            Scan::Here(Box::new(RawScan::new(matcher.clone(), 70_000))),
            &input,
            input.len(),
            head_end,
            false,
        );
        assert!(here.matched > 10_000, "{}", here.matched);
        assert!(here.groups.len() >= 4, "{:?}", here.groups.len());
        // Against a line-by-line count, and each shown line where it is.
        let (mut naive, mut raw, mut caches) = (0, 0u64, matcher.caches());
        let tail_start = input.len() as u64 - 70_000;
        for line in input.split_inclusive(|&b| b == b'\n') {
            let end = raw + line.len() as u64;
            if raw >= head_end && end <= tail_start {
                let mut text = Vec::new();
                let cut = &line[..line.len().min(crate::render::middle::LINE_CAP)];
                crate::render::strip::strip(cut, &mut text);
                let text = text.strip_suffix(b"\n").unwrap_or(&text);
                naive += u64::from(matcher.line_rank(text, &mut caches).is_some());
            }
            raw = end;
        }
        assert_eq!(here.matched, naive);
        for g in &here.groups {
            for c in std::iter::once(&g.first).chain(g.last.as_ref()) {
                let before = &input[..c.raw as usize];
                assert_eq!(c.line, 1 + bytecount::count(before, b'\n') as u64);
                assert!(before.is_empty() || before.ends_with(b"\n"));
                assert_eq!(input[c.raw_end as usize - 1], b'\n');
            }
        }
        // Found here: `None` when the scan's queue is full, else every
        // chunk, its whole or its first pieces of `PIECE` bytes.
        let whole = Some(usize::MAX);
        for (piece, always_here, owned) in [
            (4096, None, false),
            (4096, whole, false),
            (4096, Some(1), false),
            (256 << 10, whole, false),
            (256 << 10, Some(5), false),
            (3 << 20, None, false),
            (1 << 20, None, true),
            (1 << 20, whole, true),
            (1 << 20, Some(2), true),
            ((700 << 10) + 1, whole, true),
            ((700 << 10) + 1, Some(3), true),
            ((2 << 20) + 3, None, true),
            (64 << 10, None, true),
        ] {
            let moved = match Worker::start(
                Box::new(RawScan::new(matcher.clone(), 70_000)),
                &Parallelism::new(1),
            ) {
                Ok(mut w) => {
                    w.always_here = always_here;
                    Scan::Worker(w)
                }
                Err(_) => panic!("no thread"),
            };
            let there = scan(moved, &input, piece, head_end, owned);
            assert_eq!(
                there, here,
                "pieces of {piece}, found here: {always_here:?}, owned: {owned}"
            );
        }
    }

    #[test]
    fn a_scan_moves_only_past_its_threshold() {
        let matcher = SalientPatterns::default().matcher().unwrap();
        let budget = Parallelism::new(1);
        let s =
            Scan::Here(Box::new(RawScan::new(matcher, 1000))).maybe_move(THREAD_AFTER - 1, &budget);
        assert!(matches!(s, Scan::Here(_)));
        // Without a thread in the budget it stays.
        let s = s.maybe_move(THREAD_AFTER, &Parallelism::new(0));
        assert!(matches!(s, Scan::Here(_)));
        let s = s.maybe_move(THREAD_AFTER, &budget);
        assert!(matches!(s, Scan::Worker(_)));
        assert_eq!(budget.free(), 0);
        // Nothing fed: nothing found, and the thread gives its scan back.
        let m = s
            .into_scan()
            .finish(0, 0, |_, _, _| unreachable!("no lines"));
        assert_eq!(m.matched, 0);
    }
}
