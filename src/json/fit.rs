//! Fitting a sketch into a byte budget: a compact JSON document of the same
//! shape, with markers where values were elided.
//!
//! # Rules
//!
//! * A value whose compact form fits its share is written whole.
//! * An **array** keeps its first elements (`head_percent` of its room) and
//!   its last ones (the rest), whole where they fit; when even the first (or
//!   last) does not fit it is itself fitted into the share. The elements in
//!   between become one marker element, a string.
//! * An **object** keeps every key when each member fits at its smallest
//!   (a short scalar whole, anything else a marker string); the room left
//!   goes first to the small values, whole, then to the others in order.
//!   When not every key fits, it keeps its first and last members that do
//!   and one `"…"` member whose value is a marker for the ones between.
//! * A **string** keeps a head and a tail of its content with a marker
//!   inside, never cutting a character or an escape sequence.
//! * Every marker says what was elided, how big it was in the stored
//!   document (raw bytes), and the JSON Pointer that reads it back.
//!
//! Markers are sized before the cut with the widest numbers they can
//! hold, so the result never exceeds the budget.

use std::fmt::Write as _;

use super::pointer::push_token;
use super::scan::Kind;
use super::sketch::{Child, Container, Node, Str};

/// Renders the read hint for a pointer: `Ok(hint)` or why nothing was stored.
pub(crate) trait Hint {
    /// How to read the value at `pointer` (which ends at raw offset `end`
    /// of the document), or why it cannot be read: nothing was stored, or
    /// the stored part ends before it.
    fn hint(&self, pointer: &str, end: u64) -> Result<String, String>;
}

/// What the fitted preview left out.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Elided {
    /// Markers written.
    pub markers: u64,
    /// Raw bytes of the document the markers stand for.
    pub bytes: u64,
}

pub(crate) struct Fitter<'a> {
    hint: &'a dyn Hint,
    head_percent: u64,
    pub(crate) elided: Elided,
    /// How many members on the current path no pointer names (an earlier
    /// member of their object has their name), and the outermost one's
    /// name.
    unnamed: u32,
    unnamed_key: String,
}

/// Appends `s` as the content of a JSON string (no quotes).
pub(crate) fn push_escaped(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
}

fn quoted_len(s: &str) -> usize {
    let mut n = String::with_capacity(s.len() + 8);
    push_escaped(&mut n, s);
    n.len() + 2
}

fn push_quoted(out: &mut String, s: &str) {
    out.push('"');
    push_escaped(out, s);
    out.push('"');
}

fn nines(n: u64) -> u64 {
    10u64.saturating_pow(n.checked_ilog10().map_or(1, |d| d + 1)) - 1
}

/// The raw bytes (valid UTF-8) as a str.
fn text(raw: &[u8]) -> &str {
    std::str::from_utf8(raw).unwrap_or("")
}

/// Boundaries of characters and escape sequences in raw string content that
/// starts at a boundary: each is where a whole unit ends.
fn unit_len(raw: &[u8], at: usize) -> usize {
    let b = raw[at];
    if b == b'\\' {
        let Some(&kind) = raw.get(at + 1) else {
            return raw.len() - at;
        };
        if kind != b'u' {
            return 2;
        }
        // A surrogate pair is one unit: cutting between its halves would
        // leave a lone surrogate, which many parsers refuse.
        let hex = |i: usize| {
            raw.get(i..i + 4)
                .and_then(|h| u16::from_str_radix(text(h), 16).ok())
        };
        if let Some(hi) = hex(at + 2) {
            if (0xD800..0xDC00).contains(&hi)
                && raw.get(at + 6..at + 8) == Some(b"\\u")
                && hex(at + 8).is_some_and(|lo| (0xDC00..0xE000).contains(&lo))
            {
                return 12.min(raw.len() - at);
            }
        }
        return 6.min(raw.len() - at);
    }
    crate::measure::utf8_width(b).max(1).min(raw.len() - at)
}

/// The longest prefix of `raw` (which starts at a unit boundary) of at most
/// `max` bytes that ends at a unit boundary.
fn head_cut(raw: &[u8], max: usize) -> usize {
    let mut at = 0;
    while at < raw.len() {
        let n = unit_len(raw, at);
        if at + n > max {
            break;
        }
        at += n;
    }
    at
}

/// Whether `b` may be a byte of an escape sequence after its backslash.
fn may_continue_escape(b: u8) -> bool {
    b.is_ascii_hexdigit()
        || matches!(
            b,
            b'\\' | b'"' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' | b'u'
        )
}

/// The first position in `raw` (a window whose start may fall inside an
/// escape) known to start a unit: a byte that cannot be part of an escape
/// sequence. `raw.len()` when there is none.
///
/// Two kinds of byte are sure: one that no escape sequence contains, and a
/// backslash right after a byte that is not one (an escape's second byte
/// is a backslash only right after a backslash, and its hex digits never
/// are one). So a tail made only of escapes and what they may contain
/// (`\n` and digits, `\u4e2d`) still finds a boundary at its first escape.
/// A window of nothing but backslashes ends the string, so it holds
/// escaped backslashes in pairs, counted from its end.
fn first_sure(raw: &[u8]) -> usize {
    let Some(first_escape) = memchr::memchr(b'\\', raw) else {
        // The byte before the window may be a backslash, so the window may
        // open with the rest of an escape: at most five bytes (`uXXXX`),
        // each a letter an escape takes or a hex digit.
        let opening = raw
            .iter()
            .take(5)
            .position(|&b| !may_continue_escape(b))
            .unwrap_or(5);
        return (opening..raw.len())
            .find(|&i| crate::measure::utf8_width(raw[i]) > 0)
            .unwrap_or(raw.len());
    };
    let plain = raw
        .iter()
        .position(|&b| crate::measure::utf8_width(b) > 0 && !may_continue_escape(b))
        .unwrap_or(raw.len());
    let escape = (first_escape.max(1)..raw.len())
        .find(|&i| raw[i] == b'\\' && raw[i - 1] != b'\\')
        .unwrap_or(raw.len());
    let all_backslashes = if raw.iter().all(|&b| b == b'\\') {
        raw.len() % 2
    } else {
        raw.len()
    };
    plain.min(escape).min(all_backslashes)
}

/// The start of the longest suffix of `raw` of at most `max` bytes that
/// starts at a unit boundary, given `sure`, a known boundary.
fn tail_cut(raw: &[u8], sure: usize, max: usize) -> usize {
    let want = raw.len().saturating_sub(max);
    let mut at = sure;
    while at < raw.len() && at < want {
        at += unit_len(raw, at);
    }
    at
}

impl<'a> Fitter<'a> {
    pub(crate) fn new(hint: &'a dyn Hint, head_percent: u8) -> Self {
        Fitter {
            hint,
            head_percent: u64::from(head_percent),
            elided: Elided::default(),
            unnamed: 0,
            unnamed_key: String::new(),
        }
    }

    fn read(&self, pointer: &str, end: u64) -> String {
        self.read_as("it", pointer, end)
    }

    fn read_as(&self, what: &str, pointer: &str, end: u64) -> String {
        if self.unnamed > 0 {
            let mut name = String::new();
            push_escaped(&mut name, &self.unnamed_key);
            return format!(
                "no pointer reads {what}: an earlier member of its object is also named \"{name}\", and a pointer names the first"
            );
        }
        match self.hint.hint(pointer, end) {
            Ok(h) => format!("read {what} with: {h}"),
            Err(e) => format!("not stored: {e}"),
        }
    }

    /// The marker that replaces a whole value.
    fn value_marker(&self, child: &Child, pointer: &str) -> String {
        let what = match &child.node {
            Node::Scalar(_) | Node::LongNumber => format!("a number of {} digits", child.raw_len()),
            Node::Str(s) => format!("a string of {} bytes", s.len),
            Node::Container(c) => container_desc(c.kind, c.count, child.raw_len()),
            Node::Summary { kind, count } => container_desc(*kind, *count, child.raw_len()),
        };
        format!(
            "[spillway: {what} omitted; {}]",
            self.read(pointer, child.end)
        )
    }

    /// Writes the document's root, keeping its type, within `budget`.
    pub(crate) fn root(&mut self, root: &Child, budget: usize, out: &mut String) -> bool {
        let mut pointer = String::new();
        if let Some(c) = root.compact {
            if c <= budget as u64 {
                write_full(root, out);
                return true;
            }
        }
        match &root.node {
            Node::Str(s) => self.string(s, root.end, &pointer, budget, out),
            Node::Container(c) => self.container(c, root, &mut pointer, budget, out),
            _ => false,
        }
    }

    /// Writes `child`'s value within `budget`, as well as it can: whole, cut
    /// down, or as a marker. False (and nothing written) when even the
    /// marker does not fit.
    fn value(
        &mut self,
        child: &Child,
        pointer: &mut String,
        budget: usize,
        out: &mut String,
    ) -> bool {
        if let Some(c) = child.compact {
            if c <= budget as u64 {
                write_full(child, out);
                return true;
            }
        }
        let fitted = match &child.node {
            Node::Str(s) => self.string(s, child.end, pointer, budget, out),
            Node::Container(c) => self.container(c, child, pointer, budget, out),
            _ => false,
        };
        fitted || self.marker(child, pointer, budget, out)
    }

    fn marker(&mut self, child: &Child, pointer: &str, budget: usize, out: &mut String) -> bool {
        let m = self.value_marker(child, pointer);
        if quoted_len(&m) > budget {
            return false;
        }
        push_quoted(out, &m);
        self.elided.markers += 1;
        self.elided.bytes += child.raw_len();
        true
    }

    /// The smallest a value can be written: whole when that is no longer
    /// than its marker, else the marker.
    fn min_len(&self, child: &Child, pointer: &str) -> usize {
        let marker = quoted_len(&self.value_marker(child, pointer));
        match child.compact {
            Some(c) if c as usize <= marker => c as usize,
            _ => marker,
        }
    }

    fn string(
        &mut self,
        s: &Str,
        end: u64,
        pointer: &str,
        budget: usize,
        out: &mut String,
    ) -> bool {
        let read = self.read(pointer, end);
        let marker = |omitted: u64| {
            format!(
                "…[spillway: {omitted} of {} bytes of this string omitted; {read}]…",
                s.len
            )
        };
        let reserve = 2 + quoted_len(&marker(nines(s.len))) - 2;
        let Some(avail) = budget.checked_sub(reserve) else {
            return false;
        };
        let whole: &[u8] = &s.head;
        let head_room = (avail as u64 * self.head_percent / 100) as usize;
        let h = head_cut(whole, head_room.min(whole.len()));
        let tail_room = avail - h;
        let tail = if s.complete() {
            // The tail comes from the same bytes, after the head.
            let rest = &whole[h..];
            &rest[tail_cut(rest, 0, tail_room)..]
        } else {
            let sure = first_sure(&s.tail);
            &s.tail[tail_cut(&s.tail, sure, tail_room)..]
        };
        let omitted = s.len - h as u64 - tail.len() as u64;
        if omitted == 0 {
            return false;
        }
        out.push('"');
        out.push_str(text(&whole[..h]));
        push_escaped(out, &marker(omitted));
        out.push_str(text(tail));
        out.push('"');
        self.elided.markers += 1;
        self.elided.bytes += omitted;
        true
    }

    fn container(
        &mut self,
        c: &Container,
        me: &Child,
        pointer: &mut String,
        budget: usize,
        out: &mut String,
    ) -> bool {
        match c.kind {
            Kind::Array => self.array(c, me, pointer, budget, out),
            Kind::Object => self.object(c, me, pointer, budget, out),
        }
    }

    /// Steps the pointer down to `kid`; `exact` is whether a pointer names
    /// it (see [`Container::names_exactly`]). Returns what [`Self::leave`]
    /// takes.
    fn enter(&mut self, pointer: &mut String, kid: &Child, exact: bool) -> (usize, bool) {
        let len = pointer.len();
        push_child_token(pointer, kid);
        if !exact {
            if self.unnamed == 0 {
                self.unnamed_key = super::pointer::unescape(kid.key.as_deref().unwrap_or_default());
            }
            self.unnamed += 1;
        }
        (len, exact)
    }

    fn leave(&mut self, pointer: &mut String, (len, exact): (usize, bool)) {
        pointer.truncate(len);
        if !exact {
            self.unnamed -= 1;
        }
    }

    /// Writes `kid` of `parent` into a fresh buffer within `budget`.
    fn try_value(
        &mut self,
        parent: &Container,
        kid: &Child,
        pointer: &mut String,
        budget: usize,
    ) -> Option<String> {
        let at = self.enter(pointer, kid, parent.names_exactly(kid.index));
        let mut buf = String::new();
        let ok = self.value(kid, pointer, budget, &mut buf);
        self.leave(pointer, at);
        ok.then_some(buf)
    }

    fn array(
        &mut self,
        c: &Container,
        me: &Child,
        pointer: &mut String,
        budget: usize,
        out: &mut String,
    ) -> bool {
        let kids: Vec<&Child> = c.head.iter().chain(c.tail.iter()).collect();
        let range_marker =
            |s: &Self, p: &str, count: u64, first: u64, last: u64, bytes: u64, end: u64| {
                // One element is named alone (the widest form is the plural).
                let what = if count == 1 {
                    format!("1 element omitted, {p}/{first}")
                } else {
                    format!("{count} elements omitted, {p}/{first} to {p}/{last}")
                };
                format!(
                    "[spillway: {what}, {bytes} bytes; {}]",
                    s.read_as("one", &format!("{p}/{first}"), end)
                )
            };
        let n = c.count;
        let worst = nines(n);
        // The marker's size, the widest it can be: readable or not.
        let widest = [0, u64::MAX]
            .map(|end| {
                let bytes = nines(me.raw_len());
                quoted_len(&range_marker(
                    self, pointer, worst, worst, worst, bytes, end,
                ))
            })
            .into_iter()
            .max()
            .unwrap_or(0);
        let reserve = 2 + 1 + widest;
        let Some(avail) = budget.checked_sub(reserve) else {
            return false;
        };
        let head_room = (avail as u64 * self.head_percent / 100) as usize;
        let (head_max, tail_max) = c.sides();
        // Whole elements first: from the front within the head's share,
        // from the back within the rest.
        let mut head: Vec<String> = Vec::new();
        let mut used = 0;
        for kid in &kids[..head_max] {
            let sep = usize::from(!head.is_empty());
            let room = head_room.saturating_sub(used + sep);
            match kid.compact {
                Some(l) if l as usize <= room => {
                    let mut s = String::new();
                    write_full(kid, &mut s);
                    used += s.len() + sep;
                    head.push(s);
                }
                _ => break,
            }
        }
        let mut tail: Vec<String> = Vec::new();
        let mut tail_used = 0;
        let floor = head.len().max(kids.len() - tail_max);
        for kid in kids[floor..].iter().rev() {
            let sep = usize::from(!tail.is_empty() || !head.is_empty());
            let room = (avail - used).saturating_sub(tail_used + sep);
            match kid.compact {
                Some(l) if l as usize <= room => {
                    let mut s = String::new();
                    write_full(kid, &mut s);
                    tail_used += s.len() + sep;
                    tail.push(s);
                }
                _ => break,
            }
        }
        // Then, where a side took nothing, its next element cut down to
        // what is left: the last one first (errors are at the end), and the
        // first one too when both sides are empty.
        let untaken = |head: &Vec<String>, tail: &Vec<String>| {
            let lo = head.len();
            let hi = kids.len() - tail.len();
            (lo < hi).then_some((lo, hi))
        };
        let left_room = |used: usize, tail_used: usize| avail - used - tail_used;
        if let Some((lo, hi)) = untaken(&head, &tail) {
            let both = head.is_empty() && tail.is_empty() && hi - lo >= 2 && lo < head_max;
            if both {
                let share = left_room(used, tail_used) * self.head_percent as usize / 100;
                if let Some(s) = self.try_value(c, kids[lo], pointer, share) {
                    used += s.len();
                    head.push(s);
                }
            }
        }
        if let Some((_, hi)) = untaken(&head, &tail) {
            if tail.is_empty() && kids.len() - hi < tail_max {
                let sep = usize::from(!head.is_empty());
                let room = left_room(used, tail_used).saturating_sub(sep);
                if let Some(s) = self.try_value(c, kids[hi - 1], pointer, room) {
                    tail_used += s.len() + sep;
                    tail.push(s);
                }
            }
        }
        if let Some((lo, _)) = untaken(&head, &tail) {
            if head.is_empty() && lo < head_max {
                let sep = usize::from(!tail.is_empty());
                let room = left_room(used, tail_used).saturating_sub(sep);
                // The last step: nothing is placed after it.
                if let Some(s) = self.try_value(c, kids[lo], pointer, room) {
                    head.push(s);
                }
            }
        }
        tail.reverse();
        // What is left out: kept children not taken, and the gap.
        let left: Vec<&Child> = kids[head.len()..kids.len() - tail.len()].to_vec();
        let gap = c.gap;
        let count = left.len() as u64 + gap.count;
        let mut first = u64::MAX;
        let mut last = 0;
        let mut start = u64::MAX;
        let mut end = 0;
        for k in &left {
            first = first.min(k.index);
            last = last.max(k.index);
            start = start.min(k.start);
            end = end.max(k.end);
        }
        if gap.count > 0 {
            first = first.min(gap.first_index);
            last = last.max(gap.last_index);
            start = start.min(gap.first_start);
            end = end.max(gap.last_end);
        }
        out.push('[');
        let mut first_item = true;
        let mut push_item = |out: &mut String, s: &str| {
            if !first_item {
                out.push(',');
            }
            first_item = false;
            out.push_str(s);
        };
        for s in &head {
            push_item(out, s);
        }
        if count > 0 {
            let m = range_marker(self, pointer, count, first, last, end - start, end);
            let mut q = String::new();
            push_quoted(&mut q, &m);
            push_item(out, &q);
            self.elided.markers += 1;
            self.elided.bytes += end - start;
        }
        for s in &tail {
            push_item(out, s);
        }
        out.push(']');
        true
    }

    fn object(
        &mut self,
        c: &Container,
        me: &Child,
        pointer: &mut String,
        budget: usize,
        out: &mut String,
    ) -> bool {
        let kids: Vec<&Child> = c.head.iter().chain(c.tail.iter()).collect();
        let key_len = |k: &Child| k.key.as_ref().map_or(0, |k| k.len()) + 3;
        let mins: Vec<usize> = kids
            .iter()
            .map(|k| {
                let at = self.enter(pointer, k, c.names_exactly(k.index));
                let m = self.min_len(k, pointer);
                self.leave(pointer, at);
                m
            })
            .collect();
        let all_min: usize = 2
            + kids.len().saturating_sub(1)
            + kids
                .iter()
                .zip(&mins)
                .map(|(k, m)| key_len(k) + m)
                .sum::<usize>();
        // The marker key: "…", longer if a kept key already is that.
        let mut marker_key = String::from("…");
        while kids
            .iter()
            .any(|k| k.key.as_deref() == Some(marker_key.as_bytes()))
        {
            marker_key.push('…');
        }
        let range_marker = |s: &Self, p: &str, count: u64, bytes: u64| {
            // The reserve below is made for the plural, the longer form.
            let what = if count == 1 { "member" } else { "members" };
            format!(
                "[spillway: {count} {what} omitted, {bytes} bytes; {}]",
                s.read_as("the object", p, me.end)
            )
        };
        let (take_head, take_tail, extra) = if c.gap.count == 0 && all_min <= budget {
            (kids.len(), 0, budget - all_min)
        } else {
            let reserve = 2
                + 1
                + quoted_len(&marker_key)
                + 1
                + quoted_len(&range_marker(
                    self,
                    pointer,
                    nines(c.count),
                    nines(me.raw_len()),
                ));
            let Some(avail) = budget.checked_sub(reserve) else {
                return false;
            };
            let head_room = (avail as u64 * self.head_percent / 100) as usize;
            let (head_max, tail_max) = c.sides();
            let mut used = 0;
            let mut h = 0;
            while h < head_max {
                let cost = key_len(kids[h]) + mins[h] + usize::from(h > 0);
                if used + cost > head_room {
                    break;
                }
                used += cost;
                h += 1;
            }
            let mut t = 0;
            let tail_room = avail - used;
            let mut tail_used = 0;
            while h + t < kids.len() && t < tail_max {
                let i = kids.len() - 1 - t;
                let cost = key_len(kids[i]) + mins[i] + 1;
                if tail_used + cost > tail_room {
                    break;
                }
                tail_used += cost;
                t += 1;
            }
            (h, t, avail - used - tail_used)
        };
        let chosen: Vec<usize> = (0..take_head)
            .chain(kids.len() - take_tail..kids.len())
            .collect();
        // Upgrade: small whole values first, then the rest in order.
        let mut extra = extra;
        let mut texts: Vec<Option<String>> = vec![None; kids.len()];
        let mut by_size: Vec<usize> = chosen
            .iter()
            .copied()
            .filter(|&i| kids[i].compact.is_some_and(|c| c as usize > mins[i]))
            .collect();
        by_size.sort_by_key(|&i| kids[i].compact);
        for i in by_size {
            let full = kids[i].compact.unwrap_or(0) as usize;
            if full - mins[i] <= extra {
                extra -= full - mins[i];
                let mut s = String::new();
                write_full(kids[i], &mut s);
                texts[i] = Some(s);
            }
        }
        // The large values share what is left, in order; what one leaves
        // unused goes to the next.
        let at_min = |i: usize| kids[i].compact.is_some_and(|c| c as usize <= mins[i]);
        let mut waiting = chosen
            .iter()
            .filter(|&&i| texts[i].is_none() && !at_min(i))
            .count();
        for &i in &chosen {
            if texts[i].is_some() {
                continue;
            }
            let share = if at_min(i) {
                0
            } else {
                waiting -= 1;
                extra / (waiting + 1)
            };
            let s = self
                .try_value(c, kids[i], pointer, mins[i] + share)
                .unwrap_or_default();
            extra = (extra + mins[i]).saturating_sub(s.len());
            texts[i] = Some(s);
        }
        let left: Vec<&Child> = kids[take_head..kids.len() - take_tail].to_vec();
        let gap_count = left.len() as u64 + c.gap.count;
        out.push('{');
        let mut first_item = true;
        let mut member = |out: &mut String, key: &str, value: &str| {
            if !first_item {
                out.push(',');
            }
            first_item = false;
            out.push('"');
            out.push_str(key);
            out.push_str("\":");
            out.push_str(value);
        };
        for &i in &chosen[..take_head] {
            let key = text(kids[i].key.as_deref().unwrap_or_default());
            member(out, key, texts[i].as_deref().unwrap_or("null"));
        }
        if gap_count > 0 {
            let mut start = u64::MAX;
            let mut end = 0;
            for k in &left {
                start = start.min(k.start);
                end = end.max(k.end);
            }
            if c.gap.count > 0 {
                start = start.min(c.gap.first_start);
                end = end.max(c.gap.last_end);
            }
            let m = range_marker(self, pointer, gap_count, end - start);
            let mut q = String::new();
            push_quoted(&mut q, &m);
            let mut k = String::new();
            push_escaped(&mut k, &marker_key);
            member(out, &k, &q);
            self.elided.markers += 1;
            self.elided.bytes += end - start;
        }
        for &i in &chosen[take_head..] {
            let key = text(kids[i].key.as_deref().unwrap_or_default());
            member(out, key, texts[i].as_deref().unwrap_or("null"));
        }
        out.push('}');
        true
    }
}

fn container_desc(kind: Kind, count: u64, bytes: u64) -> String {
    match kind {
        Kind::Array if count == 1 => format!("an array of 1 element, {bytes} bytes,"),
        Kind::Array => format!("an array of {count} elements, {bytes} bytes,"),
        Kind::Object if count == 1 => format!("an object of 1 member, {bytes} bytes,"),
        Kind::Object => format!("an object of {count} members, {bytes} bytes,"),
    }
}

fn push_child_token(pointer: &mut String, kid: &Child) {
    pointer.push('/');
    match &kid.key {
        Some(k) => push_token(pointer, &super::pointer::unescape(k)),
        None => {
            let _ = write!(pointer, "{}", kid.index);
        }
    }
}

/// Writes a value kept whole, compactly.
fn write_full(child: &Child, out: &mut String) {
    match &child.node {
        Node::Scalar(raw) => out.push_str(text(raw)),
        Node::Str(s) => {
            out.push('"');
            out.push_str(text(&s.head));
            out.push('"');
        }
        Node::Container(c) => {
            let (open, close) = match c.kind {
                Kind::Array => ('[', ']'),
                Kind::Object => ('{', '}'),
            };
            out.push(open);
            for (i, k) in c.head.iter().chain(c.tail.iter()).enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if let Some(key) = &k.key {
                    out.push('"');
                    out.push_str(text(key));
                    out.push_str("\":");
                }
                write_full(k, out);
            }
            out.push(close);
        }
        // Never whole; callers check `compact` first.
        Node::LongNumber | Node::Summary { .. } => out.push_str("null"),
    }
}
