//! Rendered text with a map back to the raw bytes it came from, and the
//! folding of exact repeats.

use super::terminal::Span;

/// Where a piece of rendered text came from: the piece starts at `at` in
/// the text and runs to the next anchor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Anchor {
    pub at: usize,
    pub span: Span,
    /// The raw line that holds the last raw byte of the piece.
    pub last_line: u64,
}

/// Rendered text and its anchors (the first at 0, in order).
#[derive(Clone, Debug, Default)]
pub(crate) struct Side {
    pub text: String,
    pub anchors: Vec<Anchor>,
    /// The fold markers in `text`, in order.
    pub folds: Vec<Fold>,
}

/// A fold marker: the copies of the line above it that it stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fold {
    /// Where the marker starts in the text.
    pub at: usize,
    /// How many copies.
    pub copies: u64,
    /// The first copy.
    pub first: Span,
    /// The second copy's raw line, when there are two or more.
    pub second: Option<u64>,
    /// The last but one copy's raw line, when there are two or more.
    pub before_last: Option<u64>,
    /// The last copy.
    pub last: Span,
}

impl Side {
    /// The fold whose marker starts at `at`, if any.
    pub(crate) fn fold_at(&self, at: usize) -> Option<&Fold> {
        let i = self.folds.partition_point(|f| f.at < at);
        self.folds.get(i).filter(|f| f.at == at)
    }
}

/// A raw position a cut maps to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RawAt {
    pub raw: u64,
    /// The raw line holding the byte at `raw`.
    pub line: u64,
    /// The raw line holding the byte before `raw`.
    pub line_before: u64,
}

impl RawAt {
    /// The start of a piece.
    fn start_of(s: Span) -> RawAt {
        RawAt {
            raw: s.raw,
            line: s.line,
            line_before: if s.starts_line {
                s.line.saturating_sub(1)
            } else {
                s.line
            },
        }
    }
}

impl Side {
    pub(crate) fn push(&mut self, text: &str, newline: bool, span: Span, last_line: u64) {
        self.anchors.push(Anchor {
            at: self.text.len(),
            span,
            last_line,
        });
        self.text.push_str(text);
        if newline {
            self.text.push('\n');
        }
    }

    fn anchor(&self, pos: usize) -> Option<(usize, &Anchor)> {
        let i = self
            .anchors
            .partition_point(|a| a.at <= pos)
            .checked_sub(1)?;
        Some((i, &self.anchors[i]))
    }

    /// The raw position of a cut at `pos` that ends a head: inside a piece
    /// that is not exact, the piece's start (what the head shows of it
    /// counts as omitted).
    pub(crate) fn head_raw(&self, pos: usize) -> Option<RawAt> {
        let (_, a) = self.anchor(pos)?;
        let s = a.span;
        if pos == a.at || !s.exact {
            return Some(RawAt::start_of(s));
        }
        Some(self.exact_at(a, pos))
    }

    /// The raw position of a cut at `pos` that starts a tail: inside a
    /// piece that is not exact, the piece's end.
    pub(crate) fn tail_raw(&self, pos: usize) -> Option<RawAt> {
        let (i, a) = self.anchor(pos)?;
        let s = a.span;
        if pos == a.at {
            return Some(RawAt::start_of(s));
        }
        if s.exact {
            return Some(self.exact_at(a, pos));
        }
        let line = self
            .anchors
            .get(i + 1)
            .map_or(a.last_line + 1, |n| n.span.line);
        Some(RawAt {
            raw: s.raw_end,
            line,
            line_before: a.last_line,
        })
    }

    fn exact_at(&self, a: &Anchor, pos: usize) -> RawAt {
        let s = a.span;
        let before = &self.text.as_bytes()[a.at..pos];
        let nl = bytecount::count(before, b'\n') as u64;
        let line = s.line + nl;
        let ends_nl = before.last() == Some(&b'\n');
        RawAt {
            raw: s.raw + (pos - a.at) as u64,
            line,
            line_before: if ends_nl { line - 1 } else { line },
        }
    }
}

/// The marker that stands for `n` more copies of the line above it.
pub(crate) fn fold_marker(n: u64) -> String {
    if n == 1 {
        "[spillway: the line above repeats 1 more time]".to_owned()
    } else {
        format!("[spillway: the line above repeats {n} more times]")
    }
}

/// At most this many copies are remembered one by one (beyond it the
/// marker is always the shorter).
const COPIES: usize = 64;

/// Folds runs of identical whole lines into the line and one marker.
#[derive(Debug, Default)]
pub(crate) struct Folder {
    prev: Option<String>,
    run: u64,
    first: Option<Span>,
    second: Option<u64>,
    before_last: Option<u64>,
    last: Option<(Span, u64)>,
    copies: Vec<(Span, u64)>,
    /// Whether a marker was written.
    pub folded: bool,
}

impl Folder {
    pub(crate) fn push(
        &mut self,
        out: &mut Side,
        text: &str,
        newline: bool,
        span: Span,
        last_line: u64,
    ) {
        if newline && self.prev.as_deref() == Some(text) {
            self.run += 1;
            if self.first.is_some() && self.second.is_none() {
                self.second = Some(span.line);
            }
            self.first.get_or_insert(span);
            self.before_last = self.last.map(|(s, _)| s.line);
            self.last = Some((span, last_line));
            if self.copies.len() < COPIES {
                self.copies.push((span, last_line));
            }
            return;
        }
        self.flush(out);
        out.push(text, newline, span, last_line);
        match (&mut self.prev, newline) {
            (Some(p), true) => {
                p.clear();
                p.push_str(text);
            }
            (p, true) => *p = Some(text.to_owned()),
            (p, false) => *p = None,
        }
    }

    /// What pushing `n` copies of the whole line `text` in turn does, the
    /// first spanning `first` (each copy's span is [`Span::copy`], and its
    /// last raw line its own): the first is pushed, and the others, all
    /// copies of the line above, join its run at once.
    pub(crate) fn push_copies(&mut self, out: &mut Side, text: &str, first: Span, n: u64) {
        if n == 0 {
            return;
        }
        self.push(out, text, true, first, first.line);
        if n == 1 {
            return;
        }
        // Copies 1 to n - 1, as `push` takes each (the line above is
        // `text` now).
        let (second, before_last, last) = (first.copy(1), first.copy(n - 2), first.copy(n - 1));
        if self.first.is_none() {
            self.first = Some(second);
            if n > 2 {
                self.second = Some(first.copy(2).line);
            }
        } else if self.second.is_none() {
            self.second = Some(second.line);
        }
        self.before_last = if n > 2 {
            Some(before_last.line)
        } else {
            self.last.map(|(s, _)| s.line)
        };
        self.last = Some((last, last.line));
        let room = COPIES.saturating_sub(self.copies.len()) as u64;
        self.copies.extend((1..n.min(room + 1)).map(|k| {
            let copy = first.copy(k);
            (copy, copy.line)
        }));
        self.run += n - 1;
    }

    /// Writes the pending run, if any.
    pub(crate) fn flush(&mut self, out: &mut Side) {
        if self.run == 0 {
            return;
        }
        let (Some(first), Some((last, last_line)), Some(prev)) =
            (self.first.take(), self.last.take(), self.prev.as_deref())
        else {
            self.run = 0;
            self.second = None;
            self.before_last = None;
            return;
        };
        let marker = fold_marker(self.run);
        let copies_len = (prev.len() as u64 + 1).saturating_mul(self.run);
        if (marker.len() as u64 + 1) < copies_len || self.copies.len() as u64 != self.run {
            self.folded = true;
            out.folds.push(Fold {
                at: out.text.len(),
                copies: self.run,
                first,
                second: self.second,
                before_last: self.before_last,
                last,
            });
            out.push(
                &marker,
                true,
                Span {
                    raw: first.raw,
                    raw_end: last.raw_end,
                    line: first.line,
                    starts_line: first.starts_line,
                    exact: false,
                },
                last_line,
            );
        } else {
            for &(span, last_line) in &self.copies {
                out.push(prev, true, span, last_line);
            }
        }
        self.copies.clear();
        self.run = 0;
        self.second = None;
        self.before_last = None;
        // A marker ends the run: the next copy starts a new one.
        self.prev = None;
    }
}
