//! The salient lines of the part a preview will omit, found in the raw
//! stream as it passes: only the head and the last bytes are ever rendered,
//! so the middle costs one regex scan, not a render.

use std::collections::VecDeque;

use crate::preview::escape_len;
use crate::salient::Matcher;

/// `src` without its escape sequences (as the preview's cut rules read
/// them), so that a colour code does not glue itself to a word the
/// patterns look for. Line ends are kept.
fn strip(src: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut i = 0;
    while let Some(e) = memchr::memchr(0x1B, &src[i..]) {
        out.extend_from_slice(&src[i..i + e]);
        let j = i + e;
        let len = escape_len(&src[j..]).unwrap_or(src.len() - j);
        i = j + len.max(1);
    }
    out.extend_from_slice(&src[i..]);
}

/// A raw line is judged by at most its first this many bytes.
pub(crate) const LINE_CAP: usize = 16 << 10;

/// How many salient lines of the middle are kept from each end.
pub(crate) const KEEP_EACH_END: usize = 16;

/// A raw line that matched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RawHit {
    pub raw: u64,
    pub raw_end: u64,
    pub line: u64,
    /// The line's raw bytes, at most [`LINE_CAP`], without its `\n`.
    pub bytes: Vec<u8>,
}

/// Scans whole raw lines as they stream.
pub(crate) struct RawScan {
    matcher: Matcher,
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
    pending: VecDeque<RawHit>,
    first: Vec<RawHit>,
    last: VecDeque<RawHit>,
    count: u64,
    /// Hits before this raw offset are in the head: passed over.
    head_end: Option<u64>,
    /// The stripped text of the lines being scanned.
    stripped: Vec<u8>,
}

impl RawScan {
    pub(crate) fn new(matcher: Matcher, window: u64) -> RawScan {
        RawScan {
            matcher,
            carry: Vec::new(),
            carry_start: 0,
            carry_line: 1,
            at: 0,
            line: 1,
            window,
            pending: VecDeque::new(),
            first: Vec::new(),
            last: VecDeque::new(),
            count: 0,
            head_end: None,
            stripped: Vec::new(),
        }
    }

    /// The head's raw end, once known.
    pub(crate) fn set_head_end(&mut self, raw: u64) {
        self.head_end = Some(raw);
    }

    pub(crate) fn feed(&mut self, mut data: &[u8]) {
        if data.is_empty() {
            return;
        }
        if !self.carry.is_empty() || self.at > self.carry_start {
            // Finish the line the last chunk cut.
            match memchr::memchr(b'\n', data) {
                None => {
                    let room = LINE_CAP.saturating_sub(self.carry.len());
                    self.carry.extend_from_slice(&data[..room.min(data.len())]);
                    self.advance(data, 0);
                    return;
                }
                Some(nl) => {
                    let room = LINE_CAP.saturating_sub(self.carry.len());
                    self.carry.extend_from_slice(&data[..room.min(nl)]);
                    let end = self.at + nl as u64 + 1;
                    if self.line_matches(&self.carry.clone()) {
                        let hit = RawHit {
                            raw: self.carry_start,
                            raw_end: end,
                            line: self.carry_line,
                            bytes: std::mem::take(&mut self.carry),
                        };
                        self.pending.push_back(hit);
                    }
                    self.carry.clear();
                    self.advance(&data[..nl + 1], 1);
                    data = &data[nl + 1..];
                    self.carry_start = self.at;
                    self.carry_line = self.line;
                }
            }
        }
        // Whole lines, scanned in one pass.
        let whole = memchr::memrchr(b'\n', data).map_or(0, |i| i + 1);
        let bulk = &data[..whole];
        if memchr::memchr(0x1B, bulk).is_none() {
            self.scan_plain(bulk);
        } else {
            self.scan_escaped(bulk);
        }
        self.advance(bulk, bytecount::count(bulk, b'\n') as u64);
        let rest = &data[whole..];
        self.carry_start = self.at;
        self.carry_line = self.line;
        self.carry
            .extend_from_slice(&rest[..rest.len().min(LINE_CAP)]);
        self.advance(rest, 0);
        self.evict();
    }

    /// Whether one raw line (cut to [`LINE_CAP`]) matches, its escape
    /// sequences left out.
    fn line_matches(&mut self, line: &[u8]) -> bool {
        if memchr::memchr(0x1B, line).is_none() {
            return self.matcher.raw_is_match(line);
        }
        let mut buf = std::mem::take(&mut self.stripped);
        strip(line, &mut buf);
        let hit = self.matcher.raw_is_match(&buf);
        self.stripped = buf;
        hit
    }

    /// Whole lines without an escape sequence.
    fn scan_plain(&mut self, bulk: &[u8]) {
        let mut counted = 0;
        let mut line = self.line;
        for r in self.matcher.raw_lines(bulk) {
            line += bytecount::count(&bulk[counted..r.start], b'\n') as u64;
            counted = r.start;
            let text = &bulk[r.clone()];
            // A long line is judged by its first LINE_CAP bytes, as when a
            // chunk cuts it.
            if text.len() > LINE_CAP && !self.matcher.raw_is_match(&text[..LINE_CAP]) {
                continue;
            }
            self.pending.push_back(RawHit {
                raw: self.at + r.start as u64,
                raw_end: self.at + r.end as u64 + 1,
                line,
                bytes: text[..text.len().min(LINE_CAP)].to_vec(),
            });
        }
    }

    /// Whole lines with escape sequences: matched without them, found
    /// again in the raw bytes by their line numbers.
    fn scan_escaped(&mut self, bulk: &[u8]) {
        let mut buf = std::mem::take(&mut self.stripped);
        strip(bulk, &mut buf);
        let mut counted = 0;
        let mut line = self.line;
        // The raw cursor: the start of raw line `raw_line`.
        let (mut raw_pos, mut raw_line) = (0usize, self.line);
        let ranges: Vec<_> = self.matcher.raw_lines(&buf).collect();
        for r in ranges {
            line += bytecount::count(&buf[counted..r.start], b'\n') as u64;
            counted = r.start;
            while raw_line < line {
                match memchr::memchr(b'\n', &bulk[raw_pos..]) {
                    Some(i) => {
                        raw_pos += i + 1;
                        raw_line += 1;
                    }
                    None => break,
                }
            }
            let end = memchr::memchr(b'\n', &bulk[raw_pos..]).map_or(bulk.len(), |i| raw_pos + i);
            let text = &bulk[raw_pos..end];
            if text.len() > LINE_CAP && !self.line_matches(&text[..LINE_CAP]) {
                continue;
            }
            self.pending.push_back(RawHit {
                raw: self.at + raw_pos as u64,
                raw_end: self.at + end as u64 + 1,
                line,
                bytes: text[..text.len().min(LINE_CAP)].to_vec(),
            });
        }
        self.stripped = buf;
    }

    fn advance(&mut self, data: &[u8], newlines: u64) {
        self.at += data.len() as u64;
        self.line += newlines;
    }

    fn evict(&mut self) {
        let keep_from = self.at.saturating_sub(self.window);
        while self.pending.front().is_some_and(|h| h.raw < keep_from) {
            let Some(h) = self.pending.pop_front() else {
                break;
            };
            self.take(h);
        }
    }

    fn take(&mut self, h: RawHit) {
        if self.head_end.is_some_and(|e| h.raw < e) {
            return;
        }
        self.count += 1;
        if self.first.len() < KEEP_EACH_END {
            self.first.push(h);
        } else {
            if self.last.len() == KEEP_EACH_END {
                self.last.pop_front();
            }
            self.last.push_back(h);
        }
    }

    /// The hits between the head (`head_end`) and the rendered tail
    /// (`tail_start`): the first and last ones, and how many there were.
    pub(crate) fn finish(mut self, head_end: u64, tail_start: u64) -> (Vec<RawHit>, u64) {
        self.head_end = Some(head_end);
        if !self.carry.is_empty() && self.line_matches(&self.carry.clone()) {
            let hit = RawHit {
                raw: self.carry_start,
                raw_end: self.at,
                line: self.carry_line,
                bytes: std::mem::take(&mut self.carry),
            };
            self.pending.push_back(hit);
        }
        let pending = std::mem::take(&mut self.pending);
        for h in pending {
            if h.raw >= head_end && h.raw_end <= tail_start {
                self.take(h);
            }
        }
        let mut hits = self.first;
        hits.extend(self.last);
        hits.retain(|h| h.raw >= head_end && h.raw_end <= tail_start);
        let count = self.count;
        (hits, count)
    }
}
