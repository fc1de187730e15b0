//! A salient line found, and the lines of one shape.

use super::{SalientRank, MAX_SALIENT_LINE};

/// A salient line: its rendered text (cut to [`MAX_SALIENT_LINE`]), its raw
/// line number and raw span, its rank and its shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Candidate {
    pub text: String,
    pub line: u64,
    pub raw: u64,
    pub raw_end: u64,
    pub rank: SalientRank,
    pub shape: u64,
}

impl Candidate {
    /// A line of rendered `text`; its shape is the shape of the whole text.
    pub(crate) fn new(
        text: &str,
        line: u64,
        raw: (u64, u64),
        rank: SalientRank,
        shape: u64,
    ) -> Candidate {
        // A CRLF line's `\r` is its line ending, not its text.
        let text = text.trim_end_matches('\r');
        let text = if text.len() > MAX_SALIENT_LINE {
            let mut end = MAX_SALIENT_LINE - '…'.len_utf8();
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            format!("{}…", &text[..end])
        } else {
            text.to_owned()
        };
        Candidate {
            text,
            line,
            raw: raw.0,
            raw_end: raw.1,
            rank,
            shape,
        }
    }
}

/// The salient lines of one shape in one part of the input, in order:
/// how many, the first and the last (the ones a preview can show), and the
/// line numbers next to them (for the note on the rest). `L` is a shown
/// line: a [`Candidate`], or the raw bytes of one while the middle streams.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Group<L = Candidate> {
    pub rank: SalientRank,
    pub count: u64,
    pub first: L,
    /// The second line's number, when there are two or more.
    pub second: Option<u64>,
    /// The last but one line's number, when there are two or more.
    pub before_last: Option<u64>,
    /// The last line, when there are two or more.
    pub last: Option<L>,
}

impl<L> Group<L> {
    /// The same group with its lines turned into `M`s.
    pub(crate) fn map<M>(&self, mut f: impl FnMut(&L) -> M) -> Group<M> {
        Group {
            rank: self.rank,
            count: self.count,
            first: f(&self.first),
            second: self.second,
            before_last: self.before_last,
            last: self.last.as_ref().map(f),
        }
    }
}

impl Group {
    /// One line.
    pub(crate) fn one(c: Candidate) -> Group {
        Group {
            rank: c.rank,
            count: 1,
            first: c,
            second: None,
            before_last: None,
            last: None,
        }
    }

    pub(crate) fn shape(&self) -> u64 {
        self.first.shape
    }

    /// The group's last line.
    pub(crate) fn last_line(&self) -> &Candidate {
        self.last.as_ref().unwrap_or(&self.first)
    }

    /// Appends `later`, the lines of the same shape that come after these.
    pub(crate) fn then(&mut self, later: Group) {
        self.second = self.second.or(Some(later.first.line));
        self.before_last = if later.count >= 2 {
            later.before_last
        } else {
            Some(self.last_line().line)
        };
        self.rank = self.rank.max(later.rank);
        self.count += later.count;
        self.last = Some(later.last.unwrap_or(later.first));
    }
}
