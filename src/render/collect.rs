//! What a preview can use of the rendered stream, in memory bounded by the
//! budget: the head as it streams (repeats folded), and, at the end, the
//! rendering of the last raw bytes.

use super::side::{Folder, Side};
use super::terminal::{LineOut, Span};
use crate::salient::{Candidate, Group};

/// The collected parts, at the end.
pub(crate) struct Parts {
    /// The rendered head (folded); the whole rendered text when `whole`.
    pub head: Side,
    /// The rendering of the last raw bytes, folded; `None` when `whole`.
    pub tail: Option<Side>,
    pub whole: bool,
    /// Salient lines of the part between the head and the tail.
    pub middle: MiddleLines,
    /// Whether a repeat was folded.
    pub folded: bool,
}

/// The salient lines of the part between the head and the tail, by shape.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct MiddleLines {
    /// The kept shapes, in the order of their first lines.
    pub groups: Vec<Group>,
    /// How many lines matched.
    pub matched: u64,
    /// The shapes of matched lines not kept, and whether that set is whole.
    pub dropped: std::collections::HashSet<u64>,
    pub exact: bool,
    /// The matched line the head's last byte cuts (the head shows its
    /// start), not counted in `matched`: the preview counts it when it
    /// omits the whole line.
    pub across: Option<Candidate>,
}

impl Default for MiddleLines {
    /// No middle: nothing matched, and that count is exact.
    fn default() -> Self {
        MiddleLines {
            groups: Vec::new(),
            matched: 0,
            dropped: std::collections::HashSet::new(),
            exact: true,
            across: None,
        }
    }
}

/// Takes rendered lines until the head holds `cap` bytes.
pub(crate) struct Collector {
    cap: usize,
    pub(crate) head: Side,
    pub(crate) folder: Folder,
    full: bool,
}

impl Collector {
    pub(crate) fn new(cap: usize) -> Collector {
        Collector {
            cap,
            head: Side::default(),
            folder: Folder::default(),
            full: false,
        }
    }

    /// Whether the head is full: nothing more is taken.
    pub(crate) fn is_full(&self) -> bool {
        self.full
    }

    /// Where the head's raw bytes end.
    pub(crate) fn raw_end(&self) -> u64 {
        self.head.anchors.last().map_or(0, |a| a.span.raw_end)
    }
}

impl LineOut for Collector {
    fn line(&mut self, text: &str, newline: bool, span: Span) {
        if self.full {
            return;
        }
        let room = self.cap.saturating_sub(self.head.text.len());
        if span.exact && text.len() > room {
            // A plain line longer than the room left: the head takes what
            // fits, and the rest of the line is the tail's to show.
            let mut cut = room;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            self.folder.flush(&mut self.head);
            if cut > 0 {
                let piece = Span {
                    raw_end: span.raw + cut as u64,
                    ..span
                };
                self.head.push(&text[..cut], false, piece, span.line);
            }
            self.full = true;
            return;
        }
        self.folder
            .push(&mut self.head, text, newline, span, span.line);
        if self.head.text.len() >= self.cap {
            // A run still pending ends in the head.
            self.folder.flush(&mut self.head);
            self.full = true;
        }
    }

    fn copies(&mut self, text: &str, first: Span, n: u64) {
        if first.exact || n < 2 {
            // An exact copy longer than the room left is cut, not folded.
            for k in 0..n {
                self.line(text, true, first.copy(k));
            }
            return;
        }
        self.line(text, true, first);
        if !self.full {
            // The head ends in `text` now, so the other copies join its
            // run, as they would one by one (the head does not grow).
            self.folder
                .push_copies(&mut self.head, text, first.copy(1), n - 1);
        }
    }
}

/// Takes every rendered line, repeats folded (the rendering of the last
/// raw bytes, bounded by them).
#[derive(Default)]
pub(crate) struct TailCollector {
    pub(crate) side: Side,
    pub(crate) folder: Folder,
}

impl LineOut for TailCollector {
    fn line(&mut self, text: &str, newline: bool, span: Span) {
        self.folder
            .push(&mut self.side, text, newline, span, span.line);
    }

    fn copies(&mut self, text: &str, first: Span, n: u64) {
        self.folder.push_copies(&mut self.side, text, first, n);
    }
}

/// Collects whatever it is given as text, for rendering one raw line.
#[derive(Default)]
pub(crate) struct Plain(pub String);

impl Plain {
    /// The text on one line: rendered lines joined by a space.
    pub(crate) fn one_line(&self) -> String {
        self.0.trim_end_matches('\n').replace('\n', " ")
    }
}

impl LineOut for Plain {
    fn line(&mut self, text: &str, newline: bool, _: Span) {
        self.0.push_str(text);
        if newline {
            self.0.push('\n');
        }
    }

    fn block(&mut self, text: &str, _: u64, _: u64) {
        self.0.push_str(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs of copies of a few lines (exact or not), as sent to a sink:
    /// each run's text, its first span, and how many copies.
    fn runs(ops: &[(usize, u64, bool)]) -> Vec<(&'static str, Span, u64)> {
        // Shorter and longer than a fold's marker.
        const TEXTS: [&str; 4] = [
            "   Compiling crate v0.1.0",
            "warning: unused",
            "",
            "error[E0308]: mismatched types: expected `u64`, found `usize` here",
        ];
        let (mut raw, mut line) = (0u64, 1u64);
        let mut out = Vec::new();
        for &(i, n, exact) in ops {
            let text = TEXTS[i % TEXTS.len()];
            // A line that is not exact held colours: more raw bytes.
            let len = text.len() as u64 + 1 + if exact { 0 } else { 9 };
            let first = Span {
                raw,
                raw_end: raw + len,
                line,
                starts_line: true,
                exact,
            };
            out.push((text, first, n));
            raw += n * len;
            line += n;
        }
        out
    }

    fn same(a: &Side, b: &Side) -> bool {
        a.text == b.text && a.anchors == b.anchors && a.folds == b.folds
    }

    proptest::proptest! {
        /// Runs of copies handed to the collectors at once make what they
        /// make one copy at a time: the head (its room, its cut, its
        /// folds) and the rendering of the last bytes.
        #[test]
        fn copies_at_once_collect_as_copies_one_by_one(
            ops in proptest::collection::vec((0..4usize, 0..150u64, proptest::bool::ANY), 0..12),
            cap in 0..3000usize,
        ) {
            let (mut head, mut by_one) = (Collector::new(cap), Collector::new(cap));
            let (mut tail, mut tail_by_one) = (TailCollector::default(), TailCollector::default());
            for (text, first, n) in runs(&ops) {
                head.copies(text, first, n);
                tail.copies(text, first, n);
                for k in 0..n {
                    by_one.line(text, true, first.copy(k));
                    tail_by_one.line(text, true, first.copy(k));
                }
                proptest::prop_assert_eq!(head.is_full(), by_one.is_full());
                proptest::prop_assert!(same(&head.head, &by_one.head));
            }
            head.folder.flush(&mut head.head);
            by_one.folder.flush(&mut by_one.head);
            proptest::prop_assert!(same(&head.head, &by_one.head));
            proptest::prop_assert_eq!(head.folder.folded, by_one.folder.folded);
            tail.folder.flush(&mut tail.side);
            tail_by_one.folder.flush(&mut tail_by_one.side);
            proptest::prop_assert!(same(&tail.side, &tail_by_one.side));
            proptest::prop_assert_eq!(tail.folder.folded, tail_by_one.folder.folded);
        }
    }
}
