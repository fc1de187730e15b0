//! The preview: a head, a notice on its own line, and a tail, within the
//! budget.
//!
//! # Rules
//!
//! * The text, notice included, is at most `max_inline_bytes` bytes (and
//!   `max_inline_lines` lines when set) and valid UTF-8. When content is cut
//!   it is also never longer than the input.
//! * The head is a prefix and the tail a suffix of the input (of its lossy
//!   decoding when the input is not UTF-8); they never overlap.
//! * Both cut at line boundaries whenever a whole line fits in their share.
//!   Otherwise (one line longer than the share) they cut at a character
//!   boundary that is not inside a CRLF pair or an ANSI/VT escape sequence:
//!   not inside the sequence that any ESC before the cut would start
//!   ([`escape_len`], at most 256 bytes long).
//! * The head gets `head_percent` of the room left after the notice; the tail
//!   gets the rest, including whatever the head leaves unused.
//! * The notice's size is reserved before the cut: it is rendered once with
//!   the widest numbers the cut could produce, and the real notice is never
//!   longer.
//!
//! # Output shape
//!
//! `head`, then `\n` if the head is not empty and does not end in one, then
//! the notice, then, if the tail is not empty, `\n` and the tail.

use std::borrow::Cow;

use crate::measure::count_lines;
use crate::notice::{Cut, Facts, Kind, NoticeTemplates};

mod rendered;
pub(crate) use rendered::{build_rendered, Rendered};

/// The longest escape sequence, in bytes. A sequence that has not ended by
/// then is malformed and is taken to end there, so an unterminated OSC
/// string cannot swallow the rest of the output, and a cut only needs to
/// look this far back for the sequence it might be inside.
pub(crate) const MAX_ESCAPE: usize = 256;

/// How far back a cut looks for the start of an escape sequence.
pub(crate) const ESC_LOOKBACK: usize = MAX_ESCAPE;

/// Bytes the tail window keeps before the largest possible tail: room to find
/// a UTF-8 boundary, the byte before the tail and escape sequences.
pub(crate) const TAIL_CONTEXT: usize = ESC_LOOKBACK + 8;

const ESC: u8 = 0x1B;

/// What the preview is made from: the first bytes and the last bytes of the
/// input, and facts about the whole.
pub(crate) struct Input<'a> {
    /// `input[..head.len()]`.
    pub head: &'a [u8],
    /// `input[tail_start..]`.
    pub tail: &'a [u8],
    pub tail_start: u64,
    pub total_bytes: u64,
    pub total_newlines: u64,
    pub total_lines: u64,
    pub valid_utf8: bool,
    pub binary: bool,
}

/// The budget.
pub(crate) struct Limits<'a> {
    pub bytes: usize,
    pub lines: Option<u64>,
    pub head_percent: u8,
    pub templates: &'a NoticeTemplates,
}

/// Where the full output went, for the notice.
pub(crate) struct Place<'a> {
    pub location: Result<(&'a str, &'a str), &'a str>,
    pub stored_bytes: u64,
    pub unstored_bytes: u64,
}

/// A built preview.
#[derive(Debug)]
pub(crate) struct Preview {
    pub content: String,
    pub head_bytes: usize,
    pub tail_bytes: usize,
    pub omitted_bytes: u64,
    pub omitted_lines: u64,
    /// The first and last omitted lines, 1-based and inclusive.
    pub omitted_range: Option<(u64, u64)>,
}

/// Text decoded (lossily when needed), with a map back to raw offsets.
struct Decoded<'a> {
    text: Cow<'a, str>,
    /// `(decoded offset, raw offset, is a U+FFFD)` at each segment start,
    /// plus an end sentinel. Empty when the text is the raw bytes.
    segs: Vec<(usize, usize, bool)>,
}

impl<'a> Decoded<'a> {
    /// Decodes `raw`. With `partial_end`, a multi-byte sequence cut short by
    /// the end of `raw` is dropped, since the rest of the stream completes it.
    fn new(raw: &'a [u8], valid: bool, partial_end: bool) -> Self {
        if valid {
            let text = match std::str::from_utf8(raw) {
                Ok(s) => s,
                Err(e) => std::str::from_utf8(&raw[..e.valid_up_to()]).unwrap_or_default(),
            };
            return Decoded {
                text: Cow::Borrowed(text),
                segs: Vec::new(),
            };
        }
        let mut text = String::with_capacity(raw.len() + 16);
        let mut segs = Vec::new();
        let mut at = 0;
        let mut chunks = raw.utf8_chunks().peekable();
        while let Some(chunk) = chunks.next() {
            let valid = chunk.valid();
            if !valid.is_empty() {
                segs.push((text.len(), at, false));
                text.push_str(valid);
                at += valid.len();
            }
            let bad = chunk.invalid();
            if bad.is_empty() {
                continue;
            }
            let incomplete = std::str::from_utf8(bad).is_err_and(|e| e.error_len().is_none());
            if partial_end && chunks.peek().is_none() && incomplete {
                break;
            }
            segs.push((text.len(), at, true));
            text.push('\u{FFFD}');
            at += bad.len();
        }
        segs.push((text.len(), at, false));
        Decoded {
            text: Cow::Owned(text),
            segs,
        }
    }

    /// The raw offset of a character boundary in the decoded text.
    fn raw_offset(&self, d: usize) -> usize {
        if self.segs.is_empty() {
            return d;
        }
        let i = self.segs.partition_point(|s| s.0 <= d).saturating_sub(1);
        let (ds, rs, replacement) = self.segs[i];
        if replacement {
            rs
        } else {
            rs + (d - ds)
        }
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// The length of the escape sequence at the start of `s` (which begins with
/// ESC), or `None` when `s` ends before the sequence does.
///
/// CSI (`ESC [` … final byte), string sequences (OSC, DCS, SOS, PM, APC: up to
/// BEL for OSC, ST, CAN or SUB; another ESC ends them too), nF sequences
/// (intermediates then a final byte) and two-byte escapes. Malformed
/// sequences end before the first byte that does not belong, and no
/// sequence is longer than [`MAX_ESCAPE`]: one that has not ended within
/// that many bytes ends there.
pub(crate) fn escape_len(s: &[u8]) -> Option<usize> {
    let capped = s.len() >= MAX_ESCAPE;
    match escape_len_within(&s[..s.len().min(MAX_ESCAPE)]) {
        Some(n) => Some(n),
        None if capped => Some(MAX_ESCAPE),
        None => None,
    }
}

fn escape_len_within(s: &[u8]) -> Option<usize> {
    let &kind = s.get(1)?;
    match kind {
        b'[' => csi_end(s),
        b']' | b'P' | b'X' | b'^' | b'_' => {
            for (j, &b) in s.iter().enumerate().skip(2) {
                match b {
                    0x07 if kind == b']' => return Some(j + 1),
                    0x18 | 0x1A => return Some(j + 1),
                    ESC => {
                        return match s.get(j + 1) {
                            Some(b'\\') => Some(j + 2),
                            Some(_) => Some(j),
                            None => None,
                        }
                    }
                    _ => {}
                }
            }
            None
        }
        0x20..=0x2F => {
            for (i, &b) in s.iter().enumerate().skip(2) {
                match b {
                    0x20..=0x2F => {}
                    0x30..=0x7E => return Some(i + 1),
                    _ => return Some(i),
                }
            }
            None
        }
        0x30..=0x7E => Some(2),
        _ => Some(1),
    }
}

/// Where the control sequence `s` starts with (`ESC [`, parameters and
/// intermediates, a final byte) ends: just past its final byte, or before
/// the first byte that does not belong; `None` when `s` ends first.
#[inline]
pub(crate) fn csi_end(s: &[u8]) -> Option<usize> {
    let mut i = 2;
    while let Some(&b) = s.get(i) {
        match b {
            0x20..=0x3F => i += 1,
            0x40..=0x7E => return Some(i + 1),
            _ => return Some(i),
        }
    }
    None
}

/// Moves a head cut back until it is not inside an escape sequence.
fn escape_safe_back(b: &[u8], mut c: usize) -> usize {
    for _ in 0..8 {
        let floor = c.saturating_sub(ESC_LOOKBACK);
        let Some(e) = memchr::memrchr(ESC, &b[floor..c]).map(|i| floor + i) else {
            break;
        };
        // Judge the sequence on all the text there is: a string sequence
        // can end at an ESC that lies past the cut.
        match escape_len(&b[e..]) {
            Some(len) if e + len <= c => break,
            _ => c = e,
        }
    }
    c
}

/// Moves a tail cut forward until it is not inside an escape sequence.
fn escape_safe_forward(b: &[u8], c: usize) -> usize {
    let floor = c.saturating_sub(ESC_LOOKBACK);
    if let Some(e) = memchr::memrchr(ESC, &b[floor..c]).map(|i| floor + i) {
        match escape_len(&b[e..]) {
            Some(len) if e + len > c => return e + len,
            None => return b.len(),
            Some(_) => {}
        }
    }
    c
}

/// The end of the head: the longest prefix of `text` within `max_bytes` and
/// `max_lines` that ends on a line boundary, or a safe mid-line cut when not
/// even one line fits. `whole` says the text is the entire input, so its end
/// is a line boundary too.
fn cut_head(text: &str, whole: bool, max_bytes: usize, max_lines: Option<u64>) -> usize {
    let b = text.as_bytes();
    if max_bytes == 0 || max_lines == Some(0) || b.is_empty() {
        return 0;
    }
    let lim = max_bytes.min(b.len());
    if whole && lim == b.len() && max_lines.is_none_or(|l| count_lines(b) <= l) {
        return b.len();
    }
    let mut end = memchr::memrchr(b'\n', &b[..lim]).map_or(0, |i| i + 1);
    if let Some(l) = max_lines {
        let nth = usize::try_from(l - 1).unwrap_or(usize::MAX);
        if let Some(i) = memchr::memchr_iter(b'\n', &b[..end]).nth(nth) {
            end = i + 1;
        }
    }
    if end > 0 {
        return end;
    }
    // The last position at or before `lim` that is a character boundary,
    // not between CR and LF, and not inside an escape sequence. Each rule
    // only moves the cut back, so repeat until none moves it.
    let mut c = lim;
    loop {
        let before = c;
        c = floor_char_boundary(text, c);
        if c > 0 && b[c - 1] == b'\r' && b.get(c) == Some(&b'\n') {
            c -= 1;
        }
        c = escape_safe_back(b, c);
        if c == before {
            return c;
        }
    }
}

/// The start of the tail: the longest suffix of `text` within `max_bytes`
/// and `max_lines` that starts on a line boundary, or a safe mid-line cut
/// when not even the last line fits. `at_line_start` says the first byte of
/// `text` starts a line.
fn cut_tail(text: &str, at_line_start: bool, max_bytes: usize, max_lines: Option<u64>) -> usize {
    let b = text.as_bytes();
    let n = b.len();
    if max_bytes == 0 || max_lines == Some(0) || n == 0 {
        return n;
    }
    let lo = n.saturating_sub(max_bytes);
    let mut q = 0;
    if let Some(l) = max_lines {
        let k = l.saturating_add(u64::from(b[n - 1] == b'\n'));
        let nth = usize::try_from(k - 1).unwrap_or(usize::MAX);
        if let Some(i) = memchr::memrchr_iter(b'\n', b).nth(nth) {
            q = i + 1;
        }
    }
    let from = lo.max(q);
    let start = if from == 0 && at_line_start {
        Some(0)
    } else {
        let s = from.saturating_sub(1);
        memchr::memchr(b'\n', &b[s..]).map(|j| s + j + 1)
    };
    if let Some(p) = start {
        if p < n {
            return p;
        }
    }
    // The first position at or after `lo` that is a character boundary, not
    // between CR and LF, and not inside an escape sequence (whose capped end
    // can fall inside a character). Each rule only moves the cut forward,
    // so repeat until none moves it.
    let mut c = lo;
    loop {
        let before = c;
        c = ceil_char_boundary(text, c);
        if c > 0 && c < n && b[c - 1] == b'\r' && b[c] == b'\n' {
            c += 1;
        }
        c = escape_safe_forward(b, c);
        if c == before {
            return c;
        }
    }
}

/// Where the tail window's first character boundary is: past at most three
/// continuation bytes (a UTF-8 sequence, or a maximal invalid subpart, is at
/// most four bytes long).
fn tail_boundary(tail: &[u8], tail_start: u64) -> usize {
    if tail_start == 0 {
        return 0;
    }
    tail.iter()
        .take(3)
        .take_while(|&&b| (0x80..0xC0).contains(&b))
        .count()
}

fn newline_count(b: &[u8]) -> u64 {
    bytecount::count(b, b'\n') as u64
}

/// Builds the preview of an input that does not pass through whole.
pub(crate) fn build(input: &Input<'_>, limits: &Limits<'_>, place: &Place<'_>) -> Preview {
    let facts = |cut| Facts {
        total_bytes: input.total_bytes,
        total_lines: input.total_lines,
        cut,
        location: place.location,
        stored_bytes: place.stored_bytes,
        unstored_bytes: place.unstored_bytes,
        invalid_utf8: !input.valid_utf8,
        pointer: "",
    };

    if input.binary {
        let notice = facts(Cut::Exact {
            omitted_bytes: input.total_bytes,
            omitted_lines: input.total_lines,
            first: 1,
            last: input.total_lines,
            bytes: (0, input.total_bytes),
        })
        .render(limits.templates, Kind::Binary);
        return Preview {
            content: notice,
            head_bytes: 0,
            tail_bytes: 0,
            omitted_bytes: input.total_bytes,
            omitted_lines: input.total_lines,
            omitted_range: (input.total_lines > 0).then_some((1, input.total_lines)),
        };
    }

    let whole = input.head.len() as u64 == input.total_bytes;
    let head = Decoded::new(input.head, input.valid_utf8, !whole);
    let skip = if whole {
        0
    } else {
        tail_boundary(input.tail, input.tail_start)
    };
    let tail_own;
    let (tail, tail_start) = if whole {
        (&head, 0)
    } else {
        tail_own = Decoded::new(&input.tail[skip..], input.valid_utf8, false);
        (&tail_own, input.tail_start + skip as u64)
    };
    let head_text = head.text.as_ref();
    let tail_text = tail.text.as_ref();

    // Invalid UTF-8 that fits whole once decoded: show it all, say so.
    if whole && !input.valid_utf8 {
        let notice = facts(Cut::Exact {
            omitted_bytes: 0,
            omitted_lines: 0,
            first: 1,
            last: input.total_lines,
            bytes: (0, input.total_bytes),
        })
        .render(limits.templates, Kind::Lossy);
        let sep = usize::from(!head_text.is_empty() && !head_text.ends_with('\n'));
        let lines = count_lines(head_text.as_bytes()) + count_lines(notice.as_bytes());
        if head_text.len() + sep + notice.len() <= limits.bytes
            && limits.lines.is_none_or(|l| lines <= l)
        {
            let mut content = String::with_capacity(head_text.len() + sep + notice.len());
            content.push_str(head_text);
            if sep == 1 {
                content.push('\n');
            }
            content.push_str(&notice);
            return Preview {
                content,
                head_bytes: head_text.len(),
                tail_bytes: 0,
                omitted_bytes: 0,
                omitted_lines: 0,
                omitted_range: None,
            };
        }
    }

    let bound = facts(Cut::Bound).render(limits.templates, Kind::Omitted);
    let notice_lines = count_lines(bound.as_bytes());
    // A preview is never longer than its input when the byte budget forces
    // the cut. When only the line cap does (a short input of many lines),
    // the notice alone may be longer than the input, and the tail still
    // gets whatever room the byte budget leaves: errors are at the end.
    let lines_forced = whole && limits.lines.is_some_and(|l| input.total_lines > l);
    let limit = if lines_forced {
        limits.bytes
    } else {
        limits
            .bytes
            .min(usize::try_from(input.total_bytes).unwrap_or(usize::MAX))
    };
    let mut avail = limit.saturating_sub(bound.len() + 2);
    if whole {
        // Something must be omitted, or this would not be a preview.
        avail = avail.min(head_text.len().saturating_sub(1));
    }
    let avail_lines = limits.lines.map(|l| l.saturating_sub(notice_lines));
    let pct = usize::from(limits.head_percent);
    let head_share = avail * pct / 100;
    let head_lines = avail_lines.map(|l| l * pct as u64 / 100);

    let h_end = cut_head(head_text, whole, head_share, head_lines);
    let h_lines = count_lines(&head_text.as_bytes()[..h_end]);
    let tail_share = avail - h_end;
    let tail_lines = avail_lines.map(|l| l.saturating_sub(h_lines));
    let mut t_start = cut_tail(tail_text, tail_start == 0, tail_share, tail_lines);

    let head_raw_end = head.raw_offset(h_end) as u64;
    let mut tail_raw_start = tail_start + tail.raw_offset(t_start) as u64;
    if tail_raw_start < head_raw_end {
        // The budget arithmetic rules this out; never show a byte twice.
        debug_assert!(false, "head and tail overlap");
        t_start = tail_text.len();
        tail_raw_start = input.total_bytes;
    }
    let omitted_bytes = tail_raw_start - head_raw_end;
    let first = 1 + newline_count(&head_text.as_bytes()[..h_end]);
    // The line holding the last omitted byte: every newline before it.
    let last = if tail_raw_start == 0 {
        first
    } else {
        let from = (tail_raw_start - 1 - input.tail_start) as usize;
        let window = if whole { input.head } else { input.tail };
        1 + input.total_newlines - newline_count(&window[from.min(window.len())..])
    };
    let last = last.max(first);
    let cut = Cut::Exact {
        omitted_bytes,
        omitted_lines: last - first + 1,
        first,
        last,
        bytes: (head_raw_end, tail_raw_start),
    };
    let notice = facts(cut).render(limits.templates, Kind::Omitted);
    debug_assert!(notice.len() <= bound.len());

    let head_part = &head_text[..h_end];
    let tail_part = &tail_text[t_start..];
    let mut content = String::with_capacity(head_part.len() + notice.len() + tail_part.len() + 2);
    content.push_str(head_part);
    if !head_part.is_empty() && !head_part.ends_with('\n') {
        content.push('\n');
    }
    content.push_str(&notice);
    if !tail_part.is_empty() {
        content.push('\n');
        content.push_str(tail_part);
    }
    Preview {
        content,
        head_bytes: head_part.len(),
        tail_bytes: tail_part.len(),
        omitted_bytes,
        omitted_lines: last - first + 1,
        omitted_range: Some((first, last)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_lengths() {
        let cases: [(&[u8], Option<usize>); 12] = [
            (b"\x1b[31mred", Some(5)),
            (b"\x1b[1;32", None),
            (b"\x1b[", None),
            (b"\x1b", None),
            (b"\x1b]0;title\x07x", Some(10)),
            (b"\x1b]8;;http://x\x1b\\link", Some(15)),
            (b"\x1b]8;;http://x", None),
            (b"\x1b]0;a\x1b[0m", Some(5)),
            (b"\x1b(Bx", Some(3)),
            (b"\x1b=x", Some(2)),
            (b"\x1b\x01", Some(1)),
            (b"\x1b[3\xc3\xa9", Some(3)),
        ];
        // No sequence is longer than MAX_ESCAPE.
        let long = [b"\x1b]0;".as_slice(), &[b'x'; 400]].concat();
        assert_eq!(escape_len(&long), Some(MAX_ESCAPE));
        assert_eq!(escape_len(&long[..MAX_ESCAPE - 1]), None);
        let csi = [b"\x1b[".as_slice(), &[b'1'; 300]].concat();
        assert_eq!(escape_len(&csi), Some(MAX_ESCAPE));
        for (s, want) in cases {
            assert_eq!(escape_len(s), want, "{s:?}");
        }
    }

    #[test]
    fn head_prefers_line_boundaries() {
        let t = "aaa\nbbb\nccc\n";
        assert_eq!(cut_head(t, false, 9, None), 8);
        assert_eq!(cut_head(t, false, 9, Some(1)), 4);
        assert_eq!(cut_head(t, true, 12, None), 12);
        assert_eq!(cut_head(t, true, 12, Some(2)), 8);
        assert_eq!(cut_head(t, false, 0, None), 0);
    }

    #[test]
    fn head_cuts_long_lines_safely() {
        assert_eq!(cut_head("abcdef", false, 4, None), 4);
        // Never between CR and LF.
        assert_eq!(cut_head("abc\r\n", false, 4, None), 3);
        // Never inside a multi-byte character: é is two bytes at 2..4.
        assert_eq!(cut_head("abéd", false, 3, None), 2);
        // Never inside an escape sequence.
        assert_eq!(cut_head("ab\x1b[31mcd", false, 5, None), 2);
        assert_eq!(cut_head("ab\x1b[31mcd", false, 7, None), 7);
    }

    #[test]
    fn tail_prefers_line_boundaries() {
        let t = "aaa\nbbb\nccc\n";
        assert_eq!(cut_tail(t, true, 8, None), 4);
        assert_eq!(cut_tail(t, true, 8, Some(1)), 8);
        assert_eq!(cut_tail(t, true, 12, None), 0);
        assert_eq!(cut_tail(t, false, 12, None), 4);
        assert_eq!(cut_tail("aaa\nbbb", true, 3, Some(1)), 4);
    }

    #[test]
    fn tail_cuts_long_lines_safely() {
        assert_eq!(cut_tail("abcdef", false, 2, None), 4);
        assert_eq!(cut_tail("abc\r\n", false, 1, None), 5);
        assert_eq!(cut_tail("abéd", false, 2, None), 4);
        assert_eq!(cut_tail("ab\x1b[31mcd", false, 4, None), 7);
        assert_eq!(cut_tail("ab\x1b[31mcd", false, 7, None), 2);
    }

    #[test]
    fn lossy_decoding_maps_back_to_raw_offsets() {
        let raw = b"ab\xffcd\xe2\x82";
        let d = Decoded::new(raw, false, true);
        assert_eq!(d.text, "ab\u{FFFD}cd");
        assert_eq!(d.raw_offset(2), 2);
        assert_eq!(d.raw_offset(5), 3);
        assert_eq!(d.raw_offset(7), 5);
        let d = Decoded::new(raw, false, false);
        assert_eq!(d.text, "ab\u{FFFD}cd\u{FFFD}");
        assert_eq!(d.raw_offset(d.text.len()), raw.len());
    }

    #[test]
    fn tail_boundary_skips_at_most_three_continuation_bytes() {
        assert_eq!(tail_boundary(b"\x80\x80\x80\x80a", 5), 3);
        assert_eq!(tail_boundary(b"\x98\x80a", 5), 2);
        assert_eq!(tail_boundary(b"\x98\x80a", 0), 0);
    }
}
