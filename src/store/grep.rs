//! Searching a stored object: matching lines with their numbers, context
//! lines around them, as `grep -n` prints them, in one streaming pass.
//!
//! What is found is held (within [`GrepOptions::max_bytes`]) until the
//! whole object has been checked against its id, so a corrupt object yields
//! an error, never a line of it. When the budget or
//! [`GrepOptions::max_count`] stops the listing, the report counts the
//! matching lines left and names the line to continue from
//! ([`GrepOptions::from_line`]): continuations are exact.

use std::collections::VecDeque;

use serde::Serialize;

use super::{ContentId, Store, StoreError};

/// The longest line matched whole: past this, a line is matched on its
/// first 1 MiB (and said to be cut when it is printed), so memory stays
/// bounded for any object.
pub const MAX_MATCHED_LINE: usize = 1 << 20;

/// A regular expression (Rust regex syntax) as [`Store::grep`] matches it:
/// against each line, without its newline.
#[derive(Clone, Debug)]
pub struct GrepPattern {
    /// Matched against one line.
    line: regex::bytes::Regex,
    /// The same pattern in multi-line mode, matched against many lines at
    /// once to skip the lines that cannot match. Any line the pattern
    /// matches, it matches within a block too, so a block without a match
    /// holds no matching line. `None` for patterns where that may not hold
    /// (text anchors `\A`, `\z`, flags turned off inline).
    block: Option<regex::bytes::Regex>,
}

/// A pattern that does not parse, or is too large.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatternError(String);

impl std::fmt::Display for PatternError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PatternError {}

impl GrepPattern {
    /// Compiles `pattern`, optionally without regard to case.
    ///
    /// # Errors
    ///
    /// [`PatternError`] saying why the pattern does not parse.
    pub fn new(pattern: &str, case_insensitive: bool) -> Result<Self, PatternError> {
        let build = |p: &str| {
            regex::bytes::RegexBuilder::new(p)
                .case_insensitive(case_insensitive)
                .build()
                .map_err(|e| PatternError(crate::salient::one_line(&e.to_string())))
        };
        let line = build(pattern)?;
        let unsafe_for_blocks = ["\\A", "\\z", "(?-", "\\Q"]
            .iter()
            .any(|t| pattern.contains(t))
            || pattern.contains("(?") && pattern.contains('-');
        let block = if unsafe_for_blocks {
            None
        } else {
            build(&format!("(?m)(?:{pattern})")).ok()
        };
        Ok(GrepPattern { line, block })
    }

    /// Whether one line (without its newline) matches.
    pub fn is_match(&self, line: &[u8]) -> bool {
        self.line.is_match(line)
    }
}

/// How [`Store::grep`] searches and how much it returns.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct GrepOptions {
    /// Context lines before each match. Default 0.
    pub before: usize,
    /// Context lines after each match. Default 0.
    pub after: usize,
    /// Whether context was asked for even when `before` and `after` are 0
    /// (`grep -C 0`): groups of lines that are not adjacent are then
    /// separated by `--`, as grep separates them. Context above 0 implies
    /// it. Default false.
    pub context: bool,
    /// Stop after this many matching lines. Default: no limit.
    pub max_count: Option<u64>,
    /// The first line searched, from 1. Default 1.
    pub from_line: u64,
    /// The most bytes the listing may take as [`GrepReport::printed`]
    /// prints it. Default 32 KiB.
    pub max_bytes: usize,
    /// The most bytes of one line's text that are returned; the rest is
    /// counted in [`GrepLine::cut_bytes`]. Default 1,024.
    pub max_line_bytes: usize,
}

impl GrepOptions {
    /// Whether `--` separates groups that are not adjacent: the `context`
    /// argument [`GrepReport::printed`] takes.
    pub fn separates(&self) -> bool {
        self.context || self.before > 0 || self.after > 0
    }
}

impl Default for GrepOptions {
    fn default() -> Self {
        GrepOptions {
            before: 0,
            after: 0,
            context: false,
            max_count: None,
            from_line: 1,
            max_bytes: 32 << 10,
            max_line_bytes: 1024,
        }
    }
}

/// One line of a listing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct GrepLine {
    /// Its number, from 1.
    pub line: u64,
    /// Whether it matches (else it is context).
    #[serde(rename = "match")]
    pub matched: bool,
    /// Its text without the newline: at most its first `max_line_bytes`
    /// bytes (cut at a character boundary), decoded lossily.
    pub text: String,
    /// Bytes of the line not in `text`.
    pub cut_bytes: u64,
}

/// What [`Store::grep`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct GrepReport {
    /// The listing: matching lines and their context, in order.
    pub lines: Vec<GrepLine>,
    /// Matching lines in the listing.
    pub matches: u64,
    /// Matching lines after the listing stopped (budget or `max_count`).
    pub more_matches: u64,
    /// The first of those: pass it as `from_line` to continue.
    pub next_line: Option<u64>,
    /// Lines in the object.
    pub total_lines: u64,
}

impl GrepLine {
    /// The line as `grep -n` prints it: `N:text` for a match, `N-text` for
    /// context, a newline after; a cut line ends with `…[+N bytes]`.
    pub fn printed(&self) -> String {
        let sep = if self.matched { ':' } else { '-' };
        let mut out = format!("{}{sep}{}", self.line, self.text);
        if self.cut_bytes > 0 {
            out.push_str(&format!(" …[+{} bytes]", self.cut_bytes));
        }
        out.push('\n');
        out
    }
}

impl GrepReport {
    /// The listing as `grep -n` prints it, `--` between groups of lines
    /// that are not adjacent when there is context.
    pub fn printed(&self, context: bool) -> String {
        let mut out = String::new();
        let mut last = 0;
        for l in &self.lines {
            if context && last > 0 && l.line > last + 1 {
                out.push_str(GROUP_SEPARATOR);
            }
            out.push_str(&l.printed());
            last = l.line;
        }
        out
    }
}

/// What stands between groups of lines when there is context.
const GROUP_SEPARATOR: &str = "--\n";

/// The search state over one pass.
struct Searcher<'a> {
    pattern: &'a GrepPattern,
    opts: &'a GrepOptions,
    report: GrepReport,
    /// The current line so far (its first MAX_MATCHED_LINE bytes).
    partial: Vec<u8>,
    /// Bytes of the current line past `partial`.
    partial_extra: u64,
    /// The number of the current line.
    line: u64,
    /// Recent non-matching lines, for before-context.
    recent: VecDeque<GrepLine>,
    /// Context lines still owed after the last match.
    after_left: usize,
    /// The last line listed.
    last_listed: u64,
    /// Bytes the listing takes.
    used: usize,
    /// Whether the listing has stopped.
    full: bool,
}

impl<'a> Searcher<'a> {
    fn new(pattern: &'a GrepPattern, opts: &'a GrepOptions) -> Self {
        Searcher {
            pattern,
            opts,
            report: GrepReport::default(),
            partial: Vec::new(),
            partial_extra: 0,
            line: 1,
            recent: VecDeque::new(),
            after_left: 0,
            last_listed: 0,
            used: 0,
            full: false,
        }
    }

    fn feed(&mut self, chunk: &[u8]) {
        // The line already begun, then the whole lines, then the start of
        // the next one.
        let Some(first) = memchr::memchr(b'\n', chunk) else {
            self.take(chunk);
            return;
        };
        self.take(&chunk[..first]);
        self.end_line();
        let rest = &chunk[first + 1..];
        let whole = memchr::memrchr(b'\n', rest).map_or(0, |i| i + 1);
        match &self.pattern.block {
            Some(block) => self.lines_skipping(block, &rest[..whole]),
            None => self.lines(&rest[..whole]),
        }
        self.take(&rest[whole..]);
    }

    /// Whole lines (each ending in `\n`), one by one.
    fn lines(&mut self, mut region: &[u8]) {
        while let Some(i) = memchr::memchr(b'\n', region) {
            self.take(&region[..i]);
            self.end_line();
            region = &region[i + 1..];
        }
    }

    /// Whole lines, where those before the block pattern's next match are
    /// passed over in bulk: counted, and only the ones that context needs
    /// looked at.
    fn lines_skipping(&mut self, block: &regex::bytes::Regex, region: &[u8]) {
        let mut at = 0;
        while at < region.len() {
            // Owed after-context, and lines before `from_line`, line by line.
            while self.after_left > 0 && !self.full && at < region.len() {
                at = self.one_line(region, at);
            }
            if at >= region.len() {
                return;
            }
            let stop = match block.find_at(region, at) {
                // The line the match starts in.
                Some(m) => memchr::memrchr(b'\n', &region[..m.start()]).map_or(0, |i| i + 1),
                None => region.len(),
            };
            let stop = stop.max(at);
            // Lines at..stop hold no match: skip all but the last `before`.
            let keep = if self.full { 0 } else { self.opts.before };
            let mut tail_start = stop;
            for _ in 0..keep {
                if tail_start <= at {
                    break;
                }
                tail_start =
                    memchr::memrchr(b'\n', &region[at..tail_start - 1]).map_or(at, |i| at + i + 1);
            }
            let skipped = bytecount::count(&region[at..tail_start], b'\n') as u64;
            self.line += skipped;
            if skipped > 0 {
                self.recent.clear();
            }
            at = tail_start;
            while at < stop {
                at = self.one_line(region, at);
            }
            if stop < region.len() {
                // The line the match starts in, checked as a line.
                at = self.one_line(region, at);
            }
        }
    }

    /// The line starting at `at` in `region`; returns where the next begins.
    fn one_line(&mut self, region: &[u8], at: usize) -> usize {
        let end = memchr::memchr(b'\n', &region[at..]).map_or(region.len(), |i| at + i);
        self.take(&region[at..end]);
        self.end_line();
        end + 1
    }

    fn take(&mut self, bytes: &[u8]) {
        let room = MAX_MATCHED_LINE - self.partial.len();
        let n = room.min(bytes.len());
        self.partial.extend_from_slice(&bytes[..n]);
        self.partial_extra += (bytes.len() - n) as u64;
    }

    fn finish(mut self) -> GrepReport {
        if !self.partial.is_empty() || self.partial_extra > 0 {
            self.end_line();
        }
        self.report.total_lines = self.line - 1;
        self.report
    }

    fn listed(&self, matched: bool) -> GrepLine {
        let keep = self.partial.len().min(self.opts.max_line_bytes);
        // Cut at a character boundary: back off over continuation bytes.
        let mut end = keep;
        if end < self.partial.len() {
            while end > 0 && (self.partial[end] & 0xC0) == 0x80 {
                end -= 1;
            }
        }
        let text = String::from_utf8_lossy(&self.partial[..end]).into_owned();
        GrepLine {
            line: self.line,
            matched,
            text,
            cut_bytes: (self.partial.len() - end) as u64 + self.partial_extra,
        }
    }

    /// The bytes `l` adds to the listing after line `last`.
    fn cost(&self, last: u64, l: &GrepLine) -> usize {
        let context = self.opts.separates();
        let gap = context && last > 0 && l.line > last + 1;
        l.printed().len() + if gap { GROUP_SEPARATOR.len() } else { 0 }
    }

    /// `l` with its text cut until it fits what is left of the budget, or
    /// to nothing (a budget too small for the line number and the count of
    /// cut bytes is passed by that much).
    fn cut_to_room(&self, mut l: GrepLine) -> GrepLine {
        loop {
            let over =
                (self.used + self.cost(self.last_listed, &l)).saturating_sub(self.opts.max_bytes);
            if over == 0 || l.text.is_empty() {
                return l;
            }
            // The count of cut bytes may grow a digit: cut a little more.
            let mut end = l.text.len().saturating_sub(over + 2);
            while !l.text.is_char_boundary(end) {
                end -= 1;
            }
            l.cut_bytes += (l.text.len() - end) as u64;
            l.text.truncate(end);
        }
    }

    /// Whether these lines, in order, fit what is left of the budget.
    fn fits(&self, lines: &[GrepLine]) -> bool {
        let mut last = self.last_listed;
        let mut used = self.used;
        for l in lines {
            used += self.cost(last, l);
            last = l.line;
        }
        used <= self.opts.max_bytes
    }

    /// Adds a line to the listing, or stops the listing when it does not
    /// fit. Returns whether it was added.
    fn push(&mut self, l: GrepLine) -> bool {
        let len = self.cost(self.last_listed, &l);
        if self.used + len > self.opts.max_bytes {
            self.full = true;
            return false;
        }
        self.used += len;
        self.last_listed = l.line;
        if l.matched {
            self.report.matches += 1;
        }
        self.report.lines.push(l);
        true
    }

    fn end_line(&mut self) {
        let n = self.line;
        if n >= self.opts.from_line {
            let matched = self.pattern.line.is_match(&self.partial);
            if matched {
                let capped = self
                    .opts
                    .max_count
                    .is_some_and(|max| self.report.matches >= max);
                let mut listed = false;
                if !self.full && !capped {
                    // The match and its before-context go in whole or not
                    // at all, so a continuation never repeats a line.
                    let last = self.last_listed;
                    let mut group: Vec<GrepLine> =
                        self.recent.drain(..).filter(|l| l.line > last).collect();
                    group.push(self.listed(true));
                    if self.fits(&group) {
                        for l in group {
                            self.push(l);
                        }
                        listed = true;
                    } else if self.report.lines.is_empty() {
                        // The first match of a page always goes in, its
                        // context left out and its text cut to the room:
                        // every page makes progress.
                        let l = self.cut_to_room(self.listed(true));
                        self.used += self.cost(self.last_listed, &l);
                        self.last_listed = l.line;
                        self.report.matches += 1;
                        self.report.lines.push(l);
                        listed = true;
                    } else {
                        self.full = true;
                    }
                }
                if listed {
                    self.after_left = self.opts.after;
                } else {
                    self.report.more_matches += 1;
                    // Continue with this match's context: the lines between
                    // the last listed one and this match hold no match.
                    let from = n
                        .saturating_sub(self.opts.before as u64)
                        .max(self.last_listed + 1)
                        .max(self.opts.from_line);
                    self.report.next_line.get_or_insert(from);
                    if capped && !self.full && self.after_left > 0 {
                        // After the last match `max_count` allows, grep
                        // prints its trailing context whatever it holds:
                        // this match is listed as context (and counted
                        // among those left, where the continuation starts).
                        self.after_left -= 1;
                        let l = self.listed(false);
                        self.push(l);
                    } else {
                        self.full = true;
                    }
                }
            } else if self.after_left > 0 && !self.full {
                self.after_left -= 1;
                let l = self.listed(false);
                self.push(l);
            } else if self.opts.before > 0 && !self.full {
                if self.recent.len() == self.opts.before {
                    self.recent.pop_front();
                }
                let l = self.listed(false);
                self.recent.push_back(l);
            }
        }
        self.partial.clear();
        self.partial_extra = 0;
        self.line += 1;
    }
}

impl Store {
    /// Searches an object for lines matching `pattern`, in one pass, verified against the id.
    ///
    /// # Errors
    ///
    /// The errors of [`Store::read`]: not found, corrupt, unreadable.
    pub fn grep(
        &self,
        id: &ContentId,
        pattern: &GrepPattern,
        opts: &GrepOptions,
    ) -> Result<GrepReport, StoreError> {
        let mut searcher = Some(Searcher::new(pattern, opts));
        self.scan_good(id, &mut |chunk| match chunk {
            Some(c) => {
                if let Some(s) = searcher.as_mut() {
                    s.feed(c);
                }
            }
            // A bad copy: forget what it gave.
            None => searcher = Some(Searcher::new(pattern, opts)),
        })?;
        Ok(searcher.map(Searcher::finish).unwrap_or_default())
    }
}
