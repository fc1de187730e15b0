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
