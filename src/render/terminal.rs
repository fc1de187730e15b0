//! The terminal line model: what a person would read on the terminal, one
//! line at a time, in bounded memory.
//!
//! The escape grammar is [`vte`]'s (the parser Alacritty uses); this file
//! is only the line model on top of it:
//!
//! * printable characters are written at the cursor, over what is there;
//! * `\r` returns to the start of the line, backspace moves back one cell,
//!   `CSI K` erases in the line, `CSI C`/`D`/`G`/`X`/`P`/`@` move and edit
//!   within it: a progress bar redrawn with `\r` ends as its final frame;
//! * `CSI A`/`B`/`E`/`F`, `ESC M`, `ESC 7`/`ESC 8` and `CSI J` move among and
//!   erase the last [`WINDOW`] lines, so a multi-line progress display
//!   (docker pull, cargo, pip) ends as its final state. A move past the
//!   window starts a new line instead: the lines stay as written;
//! * every other sequence (SGR colours, OSC titles and hyperlinks, DCS, APC,
//!   PM, SOS strings, private modes) is dropped, and so are the other C0 and
//!   C1 controls. No ESC byte is ever in the output.
//!
//! Lines leave the model (to a [`LineOut`]) once they are [`WINDOW`] lines
//! above the cursor's line, or at the end. Each carries the raw span it was
//! made from, so a preview of the rendered text can name the raw bytes and
//! lines it leaves out.
//!
//! # Fast path
//!
//! Most output is plain: whole lines with no control byte but `\n` and
//! `\t`, valid UTF-8. When the parser is at rest at the start of a line,
//! such a run is handed on as it is ([`LineOut::block`]), keeping only its last
//! [`WINDOW`] lines in the model. The result is the same as the slow path's
//! (the tests check both against each other), and it does not depend on how
//! the input is chunked: every decision depends on the bytes alone.

use std::collections::VecDeque;

/// How many finished lines above the cursor's line stay editable.
pub(crate) const WINDOW: usize = 64;

/// A line longer than this many bytes is handed on in pieces of this size;
/// the part handed on can no longer be edited.
pub(crate) const MAX_ROW: usize = 16 << 10;

/// The widest terminal a cursor move is taken to run on: a move right
/// (`CSI n C`, `CSI n G`) stops there, as a real terminal's stops at its
/// margin, so `CSI 60000C` does not become 60,000 spaces. Text written past
/// it still lands where it is written (a line is not wrapped).
pub(crate) const TERMINAL_WIDTH: usize = 512;

/// The parser is fed pieces that end at every `\n` and at every multiple of
/// this many raw bytes, so raw offsets are known to within this much.
const REGION: u64 = 16 << 10;

/// Where a rendered line came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Span {
    /// The raw offset where the line was started.
    pub raw: u64,
    /// The raw offset where the next line was started (the raw bytes of
    /// this line are `raw..raw_end`, edits made later from below aside).
    pub raw_end: u64,
    /// The 1-based raw line that holds `raw`.
    pub line: u64,
    /// Whether `raw` is the start of a raw line.
    pub starts_line: bool,
    /// Whether the rendered text is exactly the raw bytes (so offsets
    /// inside it map one to one).
    pub exact: bool,
}

/// Where rendered lines go.
pub(crate) trait LineOut {
    /// A finished line (`newline`) or a piece of an over-long one.
    fn line(&mut self, text: &str, newline: bool, span: Span);
    /// A run of whole plain lines, rendered text equal to the raw bytes,
    /// starting at the start of raw line `line`, raw offset `raw`. By
    /// default, each of its lines in turn.
    fn block(&mut self, text: &str, raw: u64, line: u64) {
        let mut raw = raw;
        for (line, l) in (line..).zip(text.split_inclusive('\n')) {
            let span = Span {
                raw,
                raw_end: raw + l.len() as u64,
                line,
                starts_line: true,
                exact: true,
            };
            self.line(l.strip_suffix('\n').unwrap_or(l), true, span);
            raw += l.len() as u64;
        }
    }

    /// `n` copies of one whole line in a row, the first spanning `first`
    /// (each copy's span is [`Span::copy`]). By default, each in turn.
    fn copies(&mut self, text: &str, first: Span, n: u64) {
        for k in 0..n {
            self.line(text, true, first.copy(k));
        }
    }
}

impl Span {
    /// The span of the `k`th copy of a whole line after the one this spans
    /// (the 0th is this one): as long, `k` raw lines on, each copy starting
    /// where the one before ends.
    pub(crate) fn copy(&self, k: u64) -> Span {
        let len = self.raw_end - self.raw;
        Span {
            raw: self.raw + k * len,
            raw_end: self.raw_end + k * len,
            line: self.line + k,
            ..*self
        }
    }
}

#[derive(Clone, Debug)]
struct Row {
    text: String,
    /// Characters in `text` (cells).
    chars: usize,
    raw: u64,
    line: u64,
    starts_line: bool,
    exact: bool,
    /// The row was ended by `\r\n`: a line ending, kept as written.
    crlf: bool,
}

impl Row {
    fn new(raw: u64, line: u64, starts_line: bool) -> Row {
        Row {
            text: String::new(),
            chars: 0,
            raw,
            line,
            starts_line,
            exact: true,
            crlf: false,
        }
    }

    /// The span of this row, handed on with `next` below it.
    fn span_before(&self, next: &Row) -> Span {
        Span {
            raw: self.raw,
            raw_end: next.raw,
            line: self.line,
            starts_line: self.starts_line,
            exact: self.exact
                && next.starts_line
                && next.raw == self.raw + self.text.len() as u64 + 1,
        }
    }

    fn byte_at(&self, col: usize) -> usize {
        if self.chars == self.text.len() {
            return col.min(self.text.len());
        }
        self.text
            .char_indices()
            .nth(col)
            .map_or(self.text.len(), |(i, _)| i)
    }

    /// Writes `c` at cell `col`.
    fn put(&mut self, col: usize, c: char) {
        if col == self.chars {
            self.text.push(c);
            self.chars += 1;
            return;
        }
        self.exact = false;
        if col > self.chars {
            let pad = col - self.chars;
            self.text.extend(std::iter::repeat_n(' ', pad));
            self.chars = col;
            self.text.push(c);
            self.chars += 1;
            return;
        }
        let at = self.byte_at(col);
        let len = self.text[at..].chars().next().map_or(0, char::len_utf8);
        let mut buf = [0; 4];
        self.text
            .replace_range(at..at + len, c.encode_utf8(&mut buf));
    }

    /// Writes `text` (`n` characters) at cell `col`.
    fn put_str(&mut self, col: usize, text: &str, n: usize) {
        if col == self.chars {
            self.text.push_str(text);
            self.chars += n;
            return;
        }
        for (k, c) in text.chars().enumerate() {
            self.put(col + k, c);
        }
    }

    fn truncate(&mut self, col: usize) {
        if col < self.chars {
            let at = self.byte_at(col);
            self.text.truncate(at);
            self.chars = col;
            self.exact = false;
        }
    }

    /// Replaces cells `from..to` (clamped to the row) with spaces.
    fn blank(&mut self, from: usize, to: usize) {
        let to = to.min(self.chars);
        if from >= to {
            return;
        }
        let a = self.byte_at(from);
        let b = self.byte_at(to);
        self.text.replace_range(a..b, &" ".repeat(to - from));
        self.exact = false;
    }

    fn delete(&mut self, col: usize, n: usize) {
        let to = col.saturating_add(n).min(self.chars);
        if col >= to {
            return;
        }
        let a = self.byte_at(col);
        let b = self.byte_at(to);
        self.text.replace_range(a..b, "");
        self.chars -= to - col;
        self.exact = false;
    }

    fn insert(&mut self, col: usize, n: usize) {
        if col >= self.chars {
            return;
        }
        let a = self.byte_at(col);
        let n = n.min(MAX_ROW);
        self.text.insert_str(a, &" ".repeat(n));
        self.chars += n;
        self.exact = false;
    }
}

/// The screen: the editable rows, the cursor, and where the raw input is.
struct Screen {
    /// The last rows; the last one is the bottom row, where new lines start.
    rows: VecDeque<Row>,
    row: usize,
    col: usize,
    /// `ESC 7`: the row (counted from the first row ever) and column.
    saved: Option<(u64, usize)>,
    /// The text of the last row handed on, emptied: the next row's, so
    /// that a row costs no allocation.
    spare: String,
    /// Rows handed on so far (the first row's number).
    base: u64,
    /// The next multiple of [`REGION`] after the current region's start.
    boundary: u64,
    /// Where the current parser region starts (after a `\n` or at a multiple
    /// of [`REGION`]) and ends, raw offsets.
    region: u64,
    /// Whether `region` is the start of a raw line.
    region_starts_line: bool,
    end: u64,
    /// Raw newlines before the current region.
    newlines: u64,
    /// Whether the parser is known to be at rest (ground state).
    ground: bool,
    /// Bytes the current escape sequence may still take before it is cut
    /// off (as the preview's rules cap them), so an unterminated OSC or DCS
    /// string cannot swallow the rest of the output.
    esc_left: usize,
}

impl Screen {
    fn new_region(&mut self, at_line_start: bool) {
        self.region = self.end;
        self.region_starts_line = at_line_start;
        self.boundary = (self.end / REGION + 1) * REGION;
    }

    /// Before text is written at the cursor: an empty bottom row that was
    /// started on an earlier raw line (the cursor came back down to it after
    /// a redraw above) now starts where its text comes from, so the line
    /// gets the raw line number and offset of what it shows. (Only while the
    /// row above is still here: its span then takes in the bytes between.)
    fn anchor_bottom(&mut self) {
        let b = self.bottom();
        let (region, line, starts) = (self.region, self.newlines + 1, self.region_starts_line);
        let r = &mut self.rows[b];
        if b > 0 && self.row == b && r.chars == 0 && r.raw < region {
            r.raw = region;
            r.line = line;
            r.starts_line = starts;
        }
    }

    fn bottom(&self) -> usize {
        self.rows.len() - 1
    }

    /// How many rows were ever made: those here, and those handed on.
    fn made(&self) -> u64 {
        self.base + self.rows.len() as u64
    }

    /// Hands the oldest rows on until at most `keep` are above the bottom.
    fn emit_above<S: LineOut>(&mut self, sink: &mut S, keep: usize) {
        while self.rows.len() > keep + 1 {
            let Some(mut r) = self.hand_on(sink) else {
                return;
            };
            r.text.clear();
            self.spare = r.text;
        }
    }

    /// Hands the oldest row on, if there is one above the bottom, and gives
    /// it back (its text as handed on).
    fn hand_on<S: LineOut>(&mut self, sink: &mut S) -> Option<Row> {
        if self.rows.len() < 2 {
            return None;
        }
        let mut r = self.rows.pop_front()?;
        if r.crlf {
            r.text.push('\r');
        }
        let span = r.span_before(&self.rows[0]);
        sink.line(&r.text, true, span);
        self.row = self.row.saturating_sub(1);
        self.base += 1;
        Some(r)
    }

    /// Renders `n` copies of the line `r` keeps, from a fresh bottom row:
    /// what `n` rounds of [`Screen::put_copy`] make. When the copies fill
    /// the window, the rows it cannot keep are handed on at once: those
    /// above that are not copies one by one, then the copies (those above
    /// where a copy would be, and the new ones) as one run
    /// ([`LineOut::copies`]); the rows kept are rewritten in place.
    fn put_copies<S: LineOut>(&mut self, sink: &mut S, r: &Repeat, n: u64) {
        let len = r.raw.len() as u64;
        let b = self.bottom();
        // Where the first copy's row starts.
        let (end, line) = (self.end, self.newlines + 1);
        let bottom = &self.rows[b];
        if n <= WINDOW as u64 || bottom.raw != end || bottom.line != line || !bottom.starts_line {
            for _ in 0..n {
                self.put_copy(sink, r);
            }
            return;
        }
        let joined = self
            .rows
            .iter()
            .take(b)
            .rev()
            .zip(1u64..)
            .take_while(|&(row, k)| {
                row.raw + k * len == end
                    && row.line + k == line
                    && row.starts_line
                    && !row.crlf
                    && row.exact == r.exact
                    && row.text == r.text
            })
            .count();
        // The bottom row is the first new copy's.
        let bottom = &mut self.rows[b];
        bottom.text.push_str(&r.text);
        bottom.chars = r.chars;
        bottom.exact = r.exact;
        for _ in 0..b - joined {
            self.hand_on(sink);
        }
        // The run, from the first row here: the copies above and the `n`
        // new ones, all but the last WINDOW handed on. Each is handed on
        // with the next copy below it, which starts where it ends.
        let handed = joined as u64 + n - WINDOW as u64;
        let run = &self.rows[0];
        let first = run.span_before(&Row::new(run.raw + len, run.line + 1, true));
        sink.copies(&r.text, first, handed);
        self.base += handed;
        self.end += n * len;
        self.newlines += n;
        while self.rows.len() < WINDOW + 1 {
            self.rows.push_back(Row::new(0, 0, true));
        }
        let (end, line) = (self.end, self.newlines + 1);
        for (i, row) in self.rows.iter_mut().enumerate() {
            let up = (WINDOW - i) as u64;
            row.raw = end - up * len;
            row.line = line - up;
            row.starts_line = true;
            row.crlf = false;
            if up == 0 {
                row.text.clear();
                row.chars = 0;
                row.exact = true;
            } else {
                if row.text != r.text {
                    row.text.clear();
                    row.text.push_str(&r.text);
                }
                row.chars = r.chars;
                row.exact = r.exact;
            }
        }
        self.row = WINDOW;
        self.col = 0;
        self.new_region(true);
    }

    /// Renders a copy of the line `r` keeps on the fresh bottom row: the
    /// row it makes, the row its `\n` starts, a region's start.
    fn put_copy<S: LineOut>(&mut self, sink: &mut S, r: &Repeat) {
        self.end += r.raw.len() as u64;
        let b = self.bottom();
        let row = &mut self.rows[b];
        row.text.push_str(&r.text);
        row.chars = r.chars;
        row.exact = r.exact;
        self.newline(sink);
        self.newlines += 1;
        self.new_region(true);
    }

    fn newline<S: LineOut>(&mut self, sink: &mut S) {
        if self.row < self.bottom() {
            self.row += 1;
        } else {
            // The `\n` is the last byte of the region.
            let line = self.newlines + 2;
            let mut row = Row::new(self.end, line, true);
            row.text = std::mem::take(&mut self.spare);
            self.rows.push_back(row);
            self.row = self.bottom();
            self.emit_above(sink, WINDOW);
        }
        self.col = 0;
    }

    /// A cursor move up that the window cannot follow: the redraw goes on
    /// a new line, below what is there.
    fn past_window<S: LineOut>(&mut self, sink: &mut S) {
        self.row = self.bottom();
        if self.rows[self.row].chars > 0 {
            let line = self.newlines + 1;
            self.rows.push_back(Row::new(self.region, line, false));
            self.row = self.bottom();
            self.emit_above(sink, WINDOW);
        }
        self.col = 0;
    }

    fn up<S: LineOut>(&mut self, sink: &mut S, n: usize) {
        if n > self.row {
            self.past_window(sink);
        } else {
            self.row -= n;
        }
    }

    fn down(&mut self, n: usize) {
        self.row = self.row.saturating_add(n).min(self.bottom());
    }

    fn print<S: LineOut>(&mut self, sink: &mut S, c: char) {
        if self.col >= MAX_ROW {
            if self.row != self.bottom() {
                // An old row past its cap takes no more.
                return;
            }
            self.flush_bottom(sink);
        }
        self.anchor_bottom();
        let col = self.col;
        self.rows[self.row].put(col, c);
        self.col += 1;
    }

    /// Writes printable text at the cursor: what `print` does for each of
    /// its characters.
    fn print_str<S: LineOut>(&mut self, sink: &mut S, text: &str) {
        let n = if text.is_ascii() {
            text.len()
        } else {
            text.chars().count()
        };
        if self.col + n < MAX_ROW {
            self.anchor_bottom();
            let col = self.col;
            self.rows[self.row].put_str(col, text, n);
            self.col += n;
        } else {
            for c in text.chars() {
                self.print(sink, c);
            }
        }
    }

    /// Hands the over-long bottom row on as a piece; the cursor continues
    /// on a fresh row, as far right of it as it was of the piece.
    fn flush_bottom<S: LineOut>(&mut self, sink: &mut S) {
        self.emit_above(sink, 0);
        let Some(r) = self.rows.pop_back() else {
            return;
        };
        let cont_raw = if r.exact {
            r.raw + r.text.len() as u64
        } else {
            self.region.max(r.raw)
        };
        sink.line(
            &r.text,
            false,
            Span {
                raw: r.raw,
                raw_end: cont_raw,
                line: r.line,
                starts_line: r.starts_line,
                exact: r.exact,
            },
        );
        let mut next = Row::new(cont_raw, self.newlines + 1, false);
        next.exact = r.exact;
        self.rows.push_back(next);
        self.row = 0;
        self.col = self.col.saturating_sub(r.chars);
    }
}

/// The performer vte drives, for one region.
struct Perf<'a, S> {
    screen: &'a mut Screen,
    sink: &'a mut S,
}

fn param(params: &vte::Params, i: usize, default: usize) -> usize {
    let v = params
        .iter()
        .nth(i)
        .and_then(|p| p.first().copied())
        .unwrap_or(0);
    if v == 0 {
        default
    } else {
        usize::from(v)
    }
}

impl<S: LineOut> vte::Perform for Perf<'_, S> {
    fn print(&mut self, c: char) {
        self.screen.ground = true;
        if ('\u{7f}'..='\u{9f}').contains(&c) {
            return;
        }
        if c == '\u{FFFD}' {
            let r = self.screen.row;
            self.screen.rows[r].exact = false;
        }
        if is_bidi_control(c) {
            // Shown, never obeyed: the text reads in the order it was
            // written, as compilers warn of these in source.
            let r = self.screen.row;
            self.screen.rows[r].exact = false;
            for c in format!("<U+{:04X}>", u32::from(c)).chars() {
                self.screen.print(self.sink, c);
            }
            return;
        }
        self.screen.print(self.sink, c);
    }

    fn execute(&mut self, byte: u8) {
        let s = &mut *self.screen;
        match byte {
            b'\n' => {
                s.newline(self.sink);
                return;
            }
            b'\t' => {
                s.print(self.sink, '\t');
                return;
            }
            b'\r' => s.col = 0,
            0x08 => s.col = s.col.saturating_sub(1),
            _ => {}
        }
        let r = s.row;
        s.rows[r].exact = false;
    }

    fn csi_dispatch(&mut self, params: &vte::Params, intermediates: &[u8], _: bool, action: char) {
        let s = &mut *self.screen;
        s.ground = true;
        let r = s.row;
        s.rows[r].exact = false;
        if !intermediates.is_empty() {
            return;
        }
        let n = param(params, 0, 1);
        let col = s.col;
        match action {
            'K' => match param(params, 0, 0) {
                0 => s.rows[r].truncate(col),
                1 => s.rows[r].blank(0, col.saturating_add(1)),
                _ => s.rows[r].truncate(0),
            },
            'J' if param(params, 0, 0) == 0 => {
                s.rows[r].truncate(col);
                s.rows.truncate(r + 1);
            }
            'A' => s.up(self.sink, n),
            'B' => s.down(n),
            'E' => {
                s.down(n);
                s.col = 0;
            }
            'F' => {
                s.up(self.sink, n);
                s.col = 0;
            }
            'C' => s.col = col.saturating_add(n).min(col.max(TERMINAL_WIDTH)),
            'D' => s.col = col.saturating_sub(n),
            'G' => s.col = (n - 1).min(col.max(TERMINAL_WIDTH)),
            'X' => s.rows[r].blank(col, col.saturating_add(n)),
            'P' => s.rows[r].delete(col, n),
            '@' => s.rows[r].insert(col, n),
            _ => {}
        }
    }

    fn esc_dispatch(&mut self, intermediates: &[u8], _: bool, byte: u8) {
        let s = &mut *self.screen;
        s.ground = true;
        let r = s.row;
        s.rows[r].exact = false;
        if !intermediates.is_empty() {
            return;
        }
        match byte {
            b'M' => s.up(self.sink, 1),
            b'D' => s.down(1),
            b'E' => {
                s.down(1);
                s.col = 0;
            }
            b'7' => s.saved = Some((s.base + s.row as u64, s.col)),
            b'8' => {
                if let Some((row, col)) = s.saved {
                    match row.checked_sub(s.base) {
                        Some(i) => s.row = (i as usize).min(s.bottom()),
                        None => s.past_window(self.sink),
                    }
                    s.col = col;
                }
            }
            _ => {}
        }
    }

    fn osc_dispatch(&mut self, _: &[&[u8]], bell_terminated: bool) {
        // Ended by ESC, the parser is in the escape state until `\`.
        self.screen.ground = bell_terminated;
    }

    fn hook(&mut self, _: &vte::Params, _: &[u8], _: bool, _: char) {}
}

/// The length of the colour (SGR) sequence `data` starts with, if it
/// starts with a whole one: ESC, `[`, at most 16 digits and `;`, and `m`.
/// (So few parameters are far under the parser's cap, past which it would
/// ignore them.)
fn sgr_len(data: &[u8]) -> Option<usize> {
    if data.get(1) != Some(&b'[') {
        return None;
    }
    let params = data[2..]
        .iter()
        .take(17)
        .take_while(|&&b| b.is_ascii_digit() || b == b';')
        .count();
    (params <= 16 && data.get(2 + params) == Some(&b'm')).then_some(3 + params)
}

/// Bytes that send a line to the slow path: C0 controls but `\t` and `\n`,
/// DEL, and the lead byte of U+0080..U+00BF (which holds the C1 controls).
static SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = b != b'\t' as usize && b != b'\n' as usize;
        b += 1;
    }
    t[0x7F] = true;
    t[0xC2] = true;
    // The lead byte of the bidirectional controls (and of much else: see
    // `plain_prefix`).
    t[0xE2] = true;
    t
};

/// The bidirectional formatting controls (U+202A to U+202E, U+2066 to
/// U+2069): they reorder how the text around them is displayed, so a line
/// can read differently from what it holds.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Whether `b` starts with the UTF-8 form of a bidirectional control (or
/// with what may be the start of one, cut short).
fn starts_bidi_control(b: &[u8]) -> bool {
    match b {
        [0xE2] | [0xE2, 0x80 | 0x81] => true,
        [0xE2, 0x80, x, ..] => (0xAA..=0xAE).contains(x),
        [0xE2, 0x81, x, ..] => (0xA6..=0xA9).contains(x),
        _ => false,
    }
}

/// The index of the first special byte in `b`, or `b.len()`.
///
/// 0xE2 leads many common characters (dashes, quotes, arrows, box drawing)
/// besides the bidirectional controls: only those stop the plain run.
fn plain_prefix(b: &[u8]) -> usize {
    const W: usize = 32;
    let mut i = 0;
    loop {
        while i + W <= b.len() {
            let block = &b[i..i + W];
            // Branch-free over the block, so it vectorizes.
            let any = block.iter().fold(false, |acc, &x| {
                acc | ((x < 0x20) & (x != b'\n') & (x != b'\t'))
                    | (x == 0x7F)
                    | (x == 0xC2)
                    | (x == 0xE2)
            });
            if any {
                break;
            }
            i += W;
        }
        let Some(p) = b[i..].iter().position(|&x| SPECIAL[usize::from(x)]) else {
            return b.len();
        };
        let at = i + p;
        if b[at] == 0xE2 && !starts_bidi_control(&b[at..]) {
            i = at + 1;
            continue;
        }
        return at;
    }
}

/// Whether the line model ignores `x` at rest: a C0 control it does not
/// obey (all but backspace, `\t`, `\n`, `\r` and ESC: NUL, BEL, VT, FF,
/// CAN, SUB and the rest change nothing on the screen), or DEL.
fn ignored_control(x: u8) -> bool {
    (x < 0x20) & (x != 0x08) & (x != b'\t') & (x != b'\n') & (x != b'\r') & (x != 0x1B)
        | (x == 0x7F)
}

/// How many bytes at the start of `b` are controls the line model ignores
/// at rest: a run of NULs (binary output) or other controls is passed over
/// at the speed of a vectorized scan, not a parser call a byte.
fn ignored_run(b: &[u8]) -> usize {
    const W: usize = 64;
    let mut i = 0;
    while i + W <= b.len() {
        // Branch-free over the block, in bytes, so it vectorizes.
        let kept = b[i..i + W].iter().fold(0u8, |acc, &x| {
            acc | u8::from(x >= 0x20)
                | u8::from(x == 0x08)
                | u8::from(x == b'\t')
                | u8::from(x == b'\n')
                | u8::from(x == b'\r')
                | u8::from(x == 0x1B)
        });
        if kept != 0 {
            break;
        }
        i += W;
    }
    i + b[i..].iter().take_while(|&&x| ignored_control(x)).count()
}

/// The terminal renderer: raw bytes in, rendered lines out to a sink.
pub(crate) struct Terminal {
    parser: vte::Parser,
    screen: Screen,
    /// The start of a character cut by the end of the last chunk.
    carry: Vec<u8>,
    /// The last line the slow path rendered alone, from rest, whose row
    /// a copy of it makes again without the parser ([`Terminal::repeat`]).
    last_line: Option<Repeat>,
    /// Whether colours and copies of a line may skip the parser (the
    /// tests compare).
    shortcuts: bool,
}

/// A whole line of text and colours that the slow path rendered from
/// rest (an empty row, the cursor at its start, the parser at rest, a
/// region's start), making no row but the one its `\n` starts: its raw
/// bytes, and the row they made. The same bytes from the same state make
/// the same row, whatever came before: text and colours act on the row
/// alone (no cursor move, erase, return, saved cursor or string).
struct Repeat {
    raw: Vec<u8>,
    text: String,
    chars: usize,
    exact: bool,
}

/// The longest line a [`Repeat`] holds: far less than a row's width, so
/// that no row wraps.
const REPEAT_MAX: usize = 256;

/// Whether `piece` is one line of text and colours, as [`Repeat`] takes:
/// characters (valid UTF-8, a tab but no other control, no C1 control,
/// no bidirectional control) and colour sequences, and a `\n` last.
fn repeatable(piece: &[u8]) -> bool {
    let Some((&b'\n', mut rest)) = piece.split_last() else {
        return false;
    };
    if piece.len() > REPEAT_MAX {
        return false;
    }
    while !rest.is_empty() {
        if rest[0] == 0x1B {
            match sgr_len(rest) {
                Some(n) => rest = &rest[n..],
                None => return false,
            }
            continue;
        }
        let end = memchr::memchr(0x1B, rest).unwrap_or(rest.len());
        let Ok(text) = std::str::from_utf8(&rest[..end]) else {
            return false;
        };
        let odd = |c: char| {
            (c < ' ' && c != '\t') || ('\u{7f}'..='\u{9f}').contains(&c) || is_bidi_control(c)
        };
        if text.chars().any(odd) {
            return false;
        }
        rest = &rest[end..];
    }
    true
}

/// How many bytes at the end of `b` start a character that is not complete.
///
/// A `\r` at the end is held as well: whether it ends a line (`\r\n`) or
/// returns the cursor depends on the next byte.
fn incomplete_tail(b: &[u8]) -> usize {
    let n = b.len();
    if b.last() == Some(&b'\r') {
        return 1;
    }
    for back in 1..=n.min(3) {
        let x = b[n - back];
        if (0x80..0xC0).contains(&x) {
            continue;
        }
        let width = crate::measure::utf8_width(x);
        return if width > back { back } else { 0 };
    }
    0
}

impl Default for Terminal {
    fn default() -> Self {
        Terminal::new()
    }
}

impl Terminal {
    /// A renderer at the start of a stream.
    pub(crate) fn new() -> Terminal {
        Terminal::starting_at(0, 1, true)
    }

    /// A renderer for a stream whose first byte is at raw offset `raw`, at
    /// the start of raw line `line`.
    pub(crate) fn starting_at(raw: u64, line: u64, starts_line: bool) -> Terminal {
        let mut rows = VecDeque::with_capacity(WINDOW + 2);
        rows.push_back(Row::new(raw, line, starts_line));
        Terminal {
            last_line: None,
            shortcuts: true,
            parser: vte::Parser::new(),
            screen: Screen {
                rows,
                row: 0,
                col: 0,
                saved: None,
                spare: String::new(),
                base: 0,
                boundary: (raw / REGION + 1) * REGION,
                region: raw,
                region_starts_line: starts_line,
                end: raw,
                newlines: line - 1,
                ground: true,
                esc_left: 0,
            },
            carry: Vec::new(),
        }
    }

    /// Whether the fast path may take over here: the parser at rest, the
    /// cursor at the start of an empty bottom row.
    fn at_rest(&self) -> bool {
        let s = &self.screen;
        s.ground && s.row == s.bottom() && s.col == 0 && s.rows[s.row].chars == 0
    }

    /// Renders the next chunk of raw input.
    pub(crate) fn feed<S: LineOut>(&mut self, sink: &mut S, mut data: &[u8]) {
        // The parser is never handed a character cut by a chunk's end: it
        // waits in `carry` for the rest.
        if self.carry == b"\r" {
            let Some(&next) = data.first() else {
                return;
            };
            if next == b'\n' {
                // The line ending, fed whole.
                self.carry.clear();
                self.feed_whole(sink, b"\r\n");
                data = &data[1..];
            } else {
                self.carry.clear();
                self.feed_whole(sink, b"\r");
            }
        }
        if !self.carry.is_empty() {
            let width = crate::measure::utf8_width(self.carry[0]);
            while self.carry.len() < width {
                match data.first() {
                    Some(&b) if (0x80..0xC0).contains(&b) => {
                        self.carry.push(b);
                        data = &data[1..];
                    }
                    Some(_) => break,
                    None => return,
                }
            }
            let carry = std::mem::take(&mut self.carry);
            self.feed_whole(sink, &carry);
        }
        let hold = incomplete_tail(data);
        self.carry.extend_from_slice(&data[data.len() - hold..]);
        self.feed_whole(sink, &data[..data.len() - hold]);
    }

    /// Feeds input that does not end inside a character.
    fn feed_whole<S: LineOut>(&mut self, sink: &mut S, mut data: &[u8]) {
        while !data.is_empty() {
            if self.at_rest() && self.screen.end == self.screen.region {
                // (A line kept for its copies is never plain: the fast
                // path would take none of it.)
                if let Some(n) = self.repeat(sink, data) {
                    data = &data[n..];
                    continue;
                }
                let n = self.fast(sink, data);
                data = &data[n..];
                if data.is_empty() {
                    return;
                }
            }
            // One region: up to and including the next `\n`, and not past
            // the next multiple of REGION (moved past a character that
            // straddles it).
            let s = &self.screen;
            let to_boundary = usize::try_from(s.boundary - s.end).unwrap_or(usize::MAX);
            let mut lim = data.len().min(to_boundary.max(1));
            while lim < data.len() && lim < to_boundary + 3 && (0x80..0xC0).contains(&data[lim]) {
                lim += 1;
            }
            if lim < data.len() && data[lim - 1] == b'\r' && data[lim] == b'\n' {
                // A line ending stays whole.
                lim += 1;
            }
            let n = memchr::memchr(b'\n', &data[..lim]).map_or(lim, |i| i + 1);
            let fresh = self.fresh_row();
            let made = self.screen.made();
            self.slow(sink, &data[..n]);
            if fresh && self.shortcuts {
                self.remember(&data[..n], made);
            }
            data = &data[n..];
        }
    }

    /// Whether the cursor is at rest on an empty row that starts a region
    /// (the state a [`Repeat`] starts from).
    fn fresh_row(&self) -> bool {
        let s = &self.screen;
        let row = &s.rows[s.bottom()];
        self.at_rest() && s.end == s.region && row.text.is_empty() && row.raw == s.region
    }

    /// Keeps `piece`, which the slow path just rendered from a fresh row,
    /// as the line a copy of may repeat, if it is one (`made`: the rows
    /// made before it).
    fn remember(&mut self, piece: &[u8], made: u64) {
        let s = &self.screen;
        if s.made() != made + 1 || !self.fresh_row() || !repeatable(piece) {
            return;
        }
        if self.last_line.as_ref().is_some_and(|r| r.raw == piece) {
            return;
        }
        let row = &s.rows[s.bottom() - 1];
        self.last_line = Some(Repeat {
            raw: piece.to_vec(),
            text: row.text.clone(),
            chars: row.chars,
            exact: row.exact,
        });
    }

    /// Copies of the last line kept, at the start of `data`, rendered as
    /// the slow path renders them, without the parser: each its row, the
    /// row its `\n` starts, a region's start. How many bytes they took,
    /// if there was one (the copies that fit in this region, as the slow
    /// path takes them).
    fn repeat<S: LineOut>(&mut self, sink: &mut S, data: &[u8]) -> Option<usize> {
        let fresh = self.fresh_row();
        let r = self.last_line.as_ref()?;
        let s = &mut self.screen;
        let len = r.raw.len();
        let room = s.boundary.saturating_sub(s.end) / len as u64;
        if !fresh || room == 0 || !data.starts_with(&r.raw) {
            return None;
        }
        let mut n = 1;
        while (n as u64) < room && data[n * len..].starts_with(&r.raw) {
            n += 1;
        }
        s.put_copies(sink, r, n as u64);
        Some(n * len)
    }

    /// The slow path over one region piece (it ends at most at the
    /// region's end).
    fn slow<S: LineOut>(&mut self, sink: &mut S, piece: &[u8]) {
        self.screen.end += piece.len() as u64;
        let mut rest = piece;
        while !rest.is_empty() {
            if rest.starts_with(b"\r\n") && self.screen.ground {
                // A line ending, not a return to the line's start: the row
                // keeps it, and the `\n` goes on as usual.
                let r = self.screen.row;
                self.screen.rows[r].crlf = true;
                rest = &rest[1..];
                continue;
            }
            if self.screen.ground && ignored_control(rest[0]) {
                // Controls the parser would take one by one and the model
                // ignore, as it does (the row is no longer its raw bytes).
                let n = ignored_run(rest);
                let r = self.screen.row;
                self.screen.rows[r].exact = false;
                rest = &rest[n..];
                continue;
            }
            if rest[0] != 0x1B && self.screen.ground {
                // At rest, printable text goes straight to the row; a
                // control or a character the fast rules do not cover goes
                // to the parser whole, one at a time.
                let n = self.text_run(sink, rest);
                if n > 0 {
                    rest = &rest[n..];
                    continue;
                }
                // The lead byte and the continuation bytes that follow it.
                let width = crate::measure::utf8_width(rest[0]).max(1);
                let k = 1 + rest[1..]
                    .iter()
                    .take(width - 1)
                    .take_while(|&&b| (0x80..0xC0).contains(&b))
                    .count();
                let mut perf = Perf {
                    screen: &mut self.screen,
                    sink: &mut *sink,
                };
                let n = match std::str::from_utf8(&rest[..k]) {
                    Ok(_) => {
                        self.parser.advance(&mut perf, &rest[..k]);
                        k
                    }
                    // Not a character: one U+FFFD for each maximal invalid
                    // part, as the parser prints them, but now (the parser
                    // would wait for bytes that cannot complete it).
                    Err(e) => {
                        vte::Perform::print(&mut perf, '\u{FFFD}');
                        e.error_len().unwrap_or(k).max(1)
                    }
                };
                rest = &rest[n..];
                continue;
            }
            if self.screen.ground && self.shortcuts {
                if let Some(n) = sgr_len(rest) {
                    // A colour: all the parser would do with it is leave
                    // the row no longer its raw bytes, and be at rest
                    // again (`csi_dispatch`), so that is done here.
                    let r = self.screen.row;
                    self.screen.rows[r].exact = false;
                    rest = &rest[n..];
                    continue;
                }
            }
            // An escape sequence (or the rest of one): the parser takes it
            // a byte at a time until it is at rest again, at the next ESC,
            // or at the sequence's cap. A byte at a time, the parser never
            // holds part of a character that a later call would complete
            // together with more bytes.
            if rest[0] == 0x1B {
                self.screen.ground = false;
                self.screen.esc_left = crate::preview::MAX_ESCAPE;
            }
            let next = memchr::memchr(0x1B, &rest[1..])
                .map_or(rest.len(), |i| i + 1)
                .min(self.screen.esc_left.max(1));
            let mut n = 0;
            while n < next && (n == 0 || !self.screen.ground) {
                let mut perf = Perf {
                    screen: &mut self.screen,
                    sink: &mut *sink,
                };
                self.parser.advance(&mut perf, &rest[n..n + 1]);
                n += 1;
            }
            self.spend_escape(sink, n);
            rest = &rest[n..];
        }
        let s = &mut self.screen;
        if piece.last() == Some(&b'\n') {
            s.newlines += 1;
            s.new_region(true);
        } else if s.end >= s.boundary {
            s.new_region(false);
        }
    }

    /// Counts `n` bytes against the open escape sequence, if any; one that
    /// has taken its most is ended (CAN, which every terminal obeys).
    fn spend_escape<S: LineOut>(&mut self, sink: &mut S, n: usize) {
        if self.screen.ground {
            return;
        }
        self.screen.esc_left = self.screen.esc_left.saturating_sub(n);
        if self.screen.esc_left == 0 {
            let mut perf = Perf {
                screen: &mut self.screen,
                sink: &mut *sink,
            };
            self.parser.advance(&mut perf, b"\x18");
            self.screen.ground = true;
        }
    }

    /// Printable text from the start of `data` (up to a control byte, an
    /// ESC, a `\n` or a character the fast rules leave to the parser),
    /// written at the cursor as the parser would. Returns how many bytes it
    /// took.
    fn text_run<S: LineOut>(&mut self, sink: &mut S, data: &[u8]) -> usize {
        let mut n = plain_prefix(data);
        if let Some(nl) = memchr::memchr(b'\n', &data[..n]) {
            n = nl;
        }
        let text = match std::str::from_utf8(&data[..n]) {
            Ok(t) => t,
            Err(e) => std::str::from_utf8(&data[..e.valid_up_to()]).unwrap_or_default(),
        };
        if !text.is_empty() {
            self.screen.print_str(sink, text);
        }
        text.len()
    }

    /// The fast path: whole plain lines from the start of `data`. Returns
    /// how many bytes it took.
    fn fast<S: LineOut>(&mut self, sink: &mut S, data: &[u8]) -> usize {
        let plain = plain_prefix(data);
        let Some(last_nl) = memchr::memrchr(b'\n', &data[..plain]) else {
            return 0;
        };
        let mut block = &data[..last_nl + 1];
        if let Err(e) = simdutf8::compat::from_utf8(block) {
            let good = e.valid_up_to();
            match memchr::memrchr(b'\n', &block[..good]) {
                Some(i) => block = &block[..i + 1],
                None => return 0,
            }
        }
        // Valid UTF-8 just checked.
        let text = std::str::from_utf8(block).unwrap_or_default();
        let lines = bytecount::count(block, b'\n');
        let s = &mut self.screen;
        let start = s.end;
        s.anchor_bottom();
        let mut keep_from = 0;
        if lines > WINDOW {
            // All but the last WINDOW lines go on as they are, after the
            // rows above the (empty) bottom row.
            let mut it = memchr::memrchr_iter(b'\n', &block[..block.len() - 1]);
            let cut = it.nth(WINDOW - 1).map_or(0, |i| i + 1);
            s.emit_above(sink, 0);
            sink.block(&text[..cut], start, s.newlines + 1);
            s.newlines += bytecount::count(&block[..cut], b'\n') as u64;
            keep_from = cut;
            let b = s.bottom();
            s.rows[b] = Row::new(start + cut as u64, s.newlines + 1, true);
            s.row = b;
        }
        let mut at = keep_from;
        for line in text[keep_from..].split_inclusive('\n') {
            let body = &line[..line.len() - 1];
            if body.len() > MAX_ROW && body.chars().count() >= MAX_ROW {
                // The slow path hands it on in pieces.
                s.end = start + at as u64;
                s.new_region(true);
                return at;
            }
            let r = s.row;
            let row = &mut s.rows[r];
            row.text.push_str(body);
            row.chars = body.chars().count();
            at += line.len();
            s.end = start + at as u64;
            s.newline(sink);
            s.newlines += 1;
            s.new_region(true);
        }
        s.end = start + block.len() as u64;
        s.new_region(true);
        block.len()
    }

    /// Hands on every row left, at the end of the input.
    pub(crate) fn finish<S: LineOut>(mut self, sink: &mut S) {
        if self.carry == b"\r" {
            // A carriage return as the last byte.
            let carry = std::mem::take(&mut self.carry);
            self.feed_whole(sink, &carry);
        }
        if !self.carry.is_empty() {
            // A character cut short by the end of the input.
            let carry = std::mem::take(&mut self.carry);
            self.feed_whole(sink, &carry);
            let mut perf = Perf {
                screen: &mut self.screen,
                sink: &mut *sink,
            };
            // The parser holds the bytes; end them as one bad character.
            self.parser.advance(&mut perf, b"\x18");
        }
        let s = &mut self.screen;
        let end = s.end;
        let Some(last) = s.rows.pop_back() else {
            return;
        };
        // The rows above end where the bottom row starts.
        s.rows
            .push_back(Row::new(last.raw, last.line, last.starts_line));
        s.emit_above(sink, 0);
        if last.chars > 0 {
            sink.line(
                &last.text,
                false,
                Span {
                    raw: last.raw,
                    raw_end: end,
                    line: last.line,
                    starts_line: last.starts_line,
                    exact: last.exact && last.raw + last.text.len() as u64 == end,
                },
            );
        }
    }
}

#[cfg(test)]
mod tests;
