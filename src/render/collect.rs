//! What a preview can use of the rendered stream, in memory bounded by the
//! budget: the head (folded), a window of the last rendered bytes, and the
//! salient lines of the part in between.

use std::collections::VecDeque;

use super::side::{Folder, Side};
use super::terminal::{Sink, Span};
use crate::salient::{Candidate, Matcher};

/// The rendered bytes the tail window keeps beyond the budget.
const TAIL_SLACK: usize = 4 << 10;

/// Salient lines of the middle are scanned in batches of about this many
/// bytes (lines that took the slow path are copied into a batch).
const BATCH: usize = 64 << 10;

/// The last rendered bytes, with their anchors: (offset counted from the
/// start of the window's stream, span, raw line of the last byte).
struct Ring {
    buf: Vec<u8>,
    cap: usize,
    /// Where the oldest byte is, once `buf` is full.
    oldest: usize,
    /// Bytes pushed so far.
    total: u64,
    anchors: VecDeque<(u64, Span, u64)>,
}

impl Ring {
    fn start(&self) -> u64 {
        self.total - self.buf.len() as u64
    }

    fn push(&mut self, text: &[u8], newline: bool, span: Span, last_line: u64) {
        self.anchors.push_back((self.total, span, last_line));
        self.bytes(text);
        if newline {
            self.bytes(b"\n");
        }
        let start = self.start();
        while self.anchors.len() >= 2 && self.anchors[1].0 <= start {
            self.anchors.pop_front();
        }
    }

    fn bytes(&mut self, data: &[u8]) {
        self.total += data.len() as u64;
        let data = if data.len() >= self.cap {
            self.buf.clear();
            self.oldest = 0;
            &data[data.len() - self.cap..]
        } else {
            data
        };
        let n = (self.cap - self.buf.len()).min(data.len());
        self.buf.extend_from_slice(&data[..n]);
        let mut rest = &data[n..];
        while !rest.is_empty() {
            let k = (self.cap - self.oldest).min(rest.len());
            self.buf[self.oldest..self.oldest + k].copy_from_slice(&rest[..k]);
            self.oldest = (self.oldest + k) % self.cap;
            rest = &rest[k..];
        }
    }

    /// The window as one run of bytes, oldest first.
    fn contents(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.buf.len());
        v.extend_from_slice(&self.buf[self.oldest..]);
        v.extend_from_slice(&self.buf[..self.oldest]);
        v
    }
}

/// Salient lines of the middle: matched as they enter the window, counted
/// as middle ones once they leave it.
struct Middle {
    matcher: Matcher,
    /// Lines matched that are still in the window: (window offset, line).
    pending: VecDeque<(u64, Candidate)>,
    first: Vec<Candidate>,
    last: VecDeque<Candidate>,
    count: u64,
    /// Slow-path lines waiting to be scanned: text, and per line its window
    /// offset, text offset and span.
    batch: String,
    batch_lines: Vec<(u64, usize, Span)>,
}

/// How many salient lines of the middle are kept from each end.
pub(crate) const KEEP_EACH_END: usize = 16;

impl Middle {
    fn scan_batch(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let batch = std::mem::take(&mut self.batch);
        let lines = std::mem::take(&mut self.batch_lines);
        for m in self.matcher.lines(&batch) {
            let i = lines.partition_point(|l| l.1 <= m.start).saturating_sub(1);
            let (at, off, span) = lines[i];
            let text = &batch[m.start..m.end];
            self.pending.push_back((
                at + (m.start - off) as u64,
                Candidate::new(text, span.line, span.raw, span.raw_end),
            ));
        }
        self.batch = batch;
        self.batch.clear();
        self.batch_lines = lines;
        self.batch_lines.clear();
    }

    fn scan_block(&mut self, text: &str, at: u64, raw: u64, line: u64) {
        let mut counted = 0;
        let mut nl = 0;
        for m in self.matcher.lines(text) {
            nl += bytecount::count(&text.as_bytes()[counted..m.start], b'\n') as u64;
            counted = m.start;
            let end = (m.end + 1).min(text.len());
            self.pending.push_back((
                at + m.start as u64,
                Candidate::new(
                    &text[m.start..m.end],
                    line + nl,
                    raw + m.start as u64,
                    raw + end as u64,
                ),
            ));
        }
    }

    /// Moves the matched lines that left the window to the middle.
    fn evict(&mut self, start: u64) {
        while self.pending.front().is_some_and(|p| p.0 < start) {
            let Some((_, c)) = self.pending.pop_front() else {
                break;
            };
            self.count += 1;
            if self.first.len() < KEEP_EACH_END {
                self.first.push(c);
            } else {
                if self.last.len() == KEEP_EACH_END {
                    self.last.pop_front();
                }
                self.last.push_back(c);
            }
        }
    }
}

/// The collected parts, at the end.
pub(crate) struct Parts {
    /// The rendered head (folded); the whole rendered text when `whole`.
    pub head: Side,
    /// The window of the last rendered text, folded; `None` when `whole`.
    pub tail: Option<Side>,
    pub whole: bool,
    /// Salient lines of the part between the head buffer and the window:
    /// the first and last ones, and how many there were.
    pub middle: Vec<Candidate>,
    pub middle_count: u64,
    /// Whether a repeat was folded.
    pub folded: bool,
}

/// Takes rendered lines; keeps what a preview can use.
pub(crate) struct Collector {
    cap: usize,
    head: Side,
    folder: Folder,
    head_full: bool,
    in_ring: bool,
    ring: Ring,
    middle: Option<Middle>,
}

impl Collector {
    /// A collector for a budget of `cap` bytes, matching salient lines with
    /// `matcher` when there is one.
    pub(crate) fn new(cap: usize, matcher: Option<Matcher>) -> Collector {
        Collector {
            cap,
            head: Side::default(),
            folder: Folder::default(),
            head_full: false,
            in_ring: false,
            ring: Ring {
                buf: Vec::new(),
                cap: cap + TAIL_SLACK,
                oldest: 0,
                total: 0,
                anchors: VecDeque::new(),
            },
            middle: matcher.map(|matcher| Middle {
                matcher,
                pending: VecDeque::new(),
                first: Vec::new(),
                last: VecDeque::new(),
                count: 0,
                batch: String::new(),
                batch_lines: Vec::new(),
            }),
        }
    }

    fn enter_ring(&mut self) {
        if !self.in_ring {
            self.folder.flush(&mut self.head);
            self.in_ring = true;
        }
    }

    fn evict(&mut self) {
        let start = self.ring.start();
        if let Some(m) = self.middle.as_mut() {
            m.evict(start);
        }
    }

    /// Ends the collection. `end` and `end_line` are the raw input's length
    /// and the raw line of its last byte.
    pub(crate) fn finish(mut self) -> Parts {
        self.folder.flush(&mut self.head);
        let mut middle = Vec::new();
        let mut middle_count = 0;
        if let Some(mut m) = self.middle.take() {
            m.scan_batch();
            m.evict(self.ring.start());
            middle_count = m.count;
            middle.extend(m.first);
            middle.extend(m.last);
        }
        let mut folded = self.folder.folded;
        let tail = if self.in_ring {
            let (side, f) = self.window();
            folded |= f;
            Some(side)
        } else {
            None
        };
        Parts {
            whole: !self.in_ring,
            head: self.head,
            tail,
            middle,
            middle_count,
            folded,
        }
    }

    /// The window as rendered text with one anchor a line, repeats folded.
    fn window(&self) -> (Side, bool) {
        let bytes = self.ring.contents();
        // The window may start inside a character: skip to the first whole
        // one (the window's first line is partial then, never shown whole).
        let skip = bytes
            .iter()
            .take(3)
            .take_while(|&&b| (0x80..0xC0).contains(&b))
            .count();
        let start = self.ring.start() + skip as u64;
        let text = std::str::from_utf8(&bytes[skip..]).unwrap_or_default();
        let mut side = Side::default();
        let mut folder = Folder::default();
        for (k, &(at, span, last_line)) in self.ring.anchors.iter().enumerate() {
            let s_raw = at.max(start);
            let e_raw = self
                .ring
                .anchors
                .get(k + 1)
                .map_or(self.ring.total, |a| a.0);
            if e_raw <= start {
                continue;
            }
            let clipped = at < start;
            let (s, e) = (
                (s_raw - start) as usize,
                ((e_raw - start) as usize).min(text.len()),
            );
            if s >= e {
                continue;
            }
            let piece = &text[s..e];
            if span.exact {
                // Lines of an exact piece, numbered back from its end.
                let mut pos = s;
                for l in piece.split_inclusive('\n') {
                    let after = &text.as_bytes()[pos..e];
                    let below = bytecount::count(after, b'\n') as u64;
                    let ends_nl = text.as_bytes()[e - 1] == b'\n';
                    let line = (last_line + u64::from(ends_nl))
                        .saturating_sub(below)
                        .max(span.line);
                    let raw = span.raw_end.saturating_sub((e - pos) as u64);
                    let newline = l.ends_with('\n');
                    let body = l.strip_suffix('\n').unwrap_or(l);
                    let whole_line = !(clipped && pos == s);
                    let lspan = Span {
                        raw,
                        raw_end: raw + l.len() as u64,
                        line,
                        starts_line: whole_line && (pos > s || span.starts_line),
                        exact: whole_line,
                    };
                    if whole_line {
                        folder.push(&mut side, body, newline, lspan, line);
                    } else {
                        folder.reset(&mut side);
                        side.push(
                            body,
                            newline,
                            Span {
                                starts_line: false,
                                ..lspan
                            },
                            line,
                        );
                    }
                    pos += l.len();
                }
            } else {
                let newline = piece.ends_with('\n');
                let body = piece.strip_suffix('\n').unwrap_or(piece);
                if clipped || !newline {
                    folder.reset(&mut side);
                    side.push(
                        body,
                        newline,
                        Span {
                            starts_line: span.starts_line && !clipped,
                            ..span
                        },
                        last_line,
                    );
                } else {
                    folder.push(&mut side, body, newline, span, last_line);
                }
            }
        }
        folder.flush(&mut side);
        (side, folder.folded)
    }
}

impl Sink for Collector {
    fn line(&mut self, text: &str, newline: bool, span: Span) {
        let last_line = span.line;
        if !self.head_full {
            self.folder
                .push(&mut self.head, text, newline, span, last_line);
            if self.head.text.len() >= self.cap {
                self.head_full = true;
            }
            return;
        }
        self.enter_ring();
        let at = self.ring.total;
        if let Some(m) = self.middle.as_mut() {
            if newline {
                m.batch_lines.push((at, m.batch.len(), span));
                m.batch.push_str(text);
                m.batch.push('\n');
                if m.batch.len() >= BATCH {
                    m.scan_batch();
                }
            }
        }
        self.ring.push(text.as_bytes(), newline, span, last_line);
        self.evict();
    }

    fn block(&mut self, text: &str, raw: u64, line: u64) {
        let mut rest = text;
        let mut raw = raw;
        let mut line = line;
        while !self.head_full && !rest.is_empty() {
            let end = memchr::memchr(b'\n', rest.as_bytes()).map_or(rest.len(), |i| i + 1);
            let l = &rest[..end];
            let span = Span {
                raw,
                raw_end: raw + l.len() as u64,
                line,
                starts_line: true,
                exact: true,
            };
            self.line(l.strip_suffix('\n').unwrap_or(l), true, span);
            raw += l.len() as u64;
            line += 1;
            rest = &rest[end..];
        }
        if rest.is_empty() {
            return;
        }
        self.enter_ring();
        let nl = bytecount::count(rest.as_bytes(), b'\n') as u64;
        let at = self.ring.total;
        if let Some(m) = self.middle.as_mut() {
            m.scan_batch();
            m.scan_block(rest, at, raw, line);
        }
        let span = Span {
            raw,
            raw_end: raw + rest.len() as u64,
            line,
            starts_line: true,
            exact: true,
        };
        self.ring
            .push(rest.as_bytes(), false, span, line + nl.saturating_sub(1));
        self.evict();
    }
}
