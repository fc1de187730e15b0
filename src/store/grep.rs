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

/// How [`Store::grep`] searches and how much it returns.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct GrepOptions {
    /// Context lines before each match. Default 0.
    pub before: usize,
    /// Context lines after each match. Default 0.
    pub after: usize,
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

impl Default for GrepOptions {
    fn default() -> Self {
        GrepOptions {
            before: 0,
            after: 0,
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
    regex: &'a regex::bytes::Regex,
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
    fn new(regex: &'a regex::bytes::Regex, opts: &'a GrepOptions) -> Self {
        Searcher {
            regex,
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

    fn feed(&mut self, mut chunk: &[u8]) {
        while !chunk.is_empty() {
            match memchr::memchr(b'\n', chunk) {
                Some(i) => {
                    self.take(&chunk[..i]);
                    self.end_line();
                    chunk = &chunk[i + 1..];
                }
                None => {
                    self.take(chunk);
                    return;
                }
            }
        }
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
        let context = self.opts.before > 0 || self.opts.after > 0;
        let gap = context && last > 0 && l.line > last + 1;
        l.printed().len() + if gap { GROUP_SEPARATOR.len() } else { 0 }
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
            let matched = self.regex.is_match(&self.partial);
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
                    } else {
                        self.full = true;
                    }
                }
                if listed {
                    self.after_left = self.opts.after;
                } else {
                    self.full = true;
                    self.report.more_matches += 1;
                    // Continue with this match's context: the lines between
                    // the last listed one and this match hold no match.
                    let from = n
                        .saturating_sub(self.opts.before as u64)
                        .max(self.last_listed + 1)
                        .max(self.opts.from_line);
                    self.report.next_line.get_or_insert(from);
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
    /// Searches an object for lines matching `regex` (matched on each line
    /// without its newline), in one pass, verified against the id.
    ///
    /// # Errors
    ///
    /// The errors of [`Store::read`]: not found, corrupt, unreadable.
    pub fn grep(
        &self,
        id: &ContentId,
        regex: &regex::bytes::Regex,
        opts: &GrepOptions,
    ) -> Result<GrepReport, StoreError> {
        let mut searcher = Some(Searcher::new(regex, opts));
        self.scan_good(id, &mut |chunk| match chunk {
            Some(c) => {
                if let Some(s) = searcher.as_mut() {
                    s.feed(c);
                }
            }
            // A bad copy: forget what it gave.
            None => searcher = Some(Searcher::new(regex, opts)),
        })?;
        Ok(searcher.map(Searcher::finish).unwrap_or_default())
    }
}
