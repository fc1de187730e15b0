//! The preview of rendered text: the same head, notice and tail as the raw
//! preview, cut in the rendered text, with the notice's numbers mapped back
//! to the raw bytes and lines; and between the head and the notice, the
//! salient lines of the omitted middle, each with its raw line number.
//!
//! Raw ranges are exact at line boundaries. A cut inside a rendered line
//! that is not its raw bytes (it held escapes, or was redrawn) rounds the
//! omitted range out to that line's raw start or end, so reading the range
//! always gives everything not shown.

use super::{count_lines, cut_head, cut_tail, Limits, Place, Preview};
use crate::notice::{Cut, Facts, Kind};
use crate::render::side::{Fold, RawAt, Side};
use crate::render::terminal::Span;
use std::collections::HashMap;

use crate::render::{MiddleLines, Parts};
use crate::salient::{Candidate, Group, LinesAt, Matcher, SalientRank};

/// What the rendered preview is made from.
pub(crate) struct Rendered<'a> {
    pub parts: &'a Parts,
    pub total_bytes: u64,
    pub total_lines: u64,
    pub valid_utf8: bool,
    pub matcher: Option<&'a Matcher>,
    pub salient_percent: u8,
}

/// The salient lines of `text[from..to]`, found with `matcher`, each with
/// the copies a fold marker after it stands for (when the marker is before
/// `to`): the raw lines they are, counted one by one. Copies whose marker
/// starts at `from` (the line above them is shown) are counted too.
fn scan(side: &Side, from: usize, to: usize, matcher: &Matcher, out: &mut Vec<Group>) {
    if from >= to {
        return;
    }
    let text = &side.text[from..to];
    let mut caches = matcher.caches();
    if let Some(f) = side.fold_at(from) {
        let above = side.text[..from.saturating_sub(1)]
            .rfind('\n')
            .map_or(0, |i| i + 1);
        let line = &side.text[above..from.saturating_sub(1)];
        if let Some(rank) = matcher.line_rank(line.as_bytes(), &mut caches) {
            let shape = matcher.shape(line.as_bytes(), rank, &mut caches);
            out.push(copies(line, f, rank, shape, None));
        }
    }
    let mut at = LinesAt::default();
    while let Some((r, rank)) = matcher.next_line(text.as_bytes(), &mut at, &mut caches) {
        let start = from + r.start;
        // Only whole lines: the part's first line may be cut.
        if start > 0 && side.text.as_bytes()[start - 1] != b'\n' {
            continue;
        }
        let end = (from + r.end + 1).min(side.text.len());
        let (Some(a), Some(b)) = (side.head_raw(start), side.tail_raw(end)) else {
            continue;
        };
        let line = &text[r];
        // From the memory of recent lines, as the middle's lines are: the
        // line it just looked up, or one of its skeleton.
        let shape = matcher.shape(line.as_bytes(), rank, &mut caches);
        let c = Candidate::new(line, a.line, (a.raw, b.raw.max(a.raw)), rank, shape);
        match side.fold_at(end).filter(|f| f.at < to) {
            Some(f) => out.push(copies(line, f, rank, shape, Some(c))),
            None => out.push(Group::one(c)),
        }
    }
    matcher.give_back(caches);
}

/// The group of `fold`'s copies of `line` (of `rank` and `shape`), after
/// `shown` if it is there.
fn copies(
    line: &str,
    fold: &Fold,
    rank: SalientRank,
    shape: u64,
    shown: Option<Candidate>,
) -> Group {
    let at = |s: Span| Candidate::new(line, s.line, (s.raw, s.raw_end), rank, shape);
    let mut g = Group::one(at(fold.first));
    if fold.copies > 1 {
        g.count = fold.copies;
        g.second = fold.second;
        g.before_last = fold.before_last;
        g.last = Some(at(fold.last));
    }
    match shown {
        Some(c) => {
            let mut first = Group::one(c);
            first.then(g);
            first
        }
        None => g,
    }
}

/// The salient lines of the omitted part, by shape.
struct Found {
    /// In the order of their first lines.
    groups: Vec<Group>,
    matched: u64,
    shapes: u64,
    exact: bool,
}

impl Found {
    /// Joins the lines of the head's omitted end, the middle's groups and
    /// the lines of the tail's omitted start, shape by shape.
    fn new(before: Vec<Group>, middle: &MiddleLines, after: Vec<Group>) -> Found {
        let count = |g: &[Group]| g.iter().map(|g| g.count).sum::<u64>();
        let matched = count(&before) + middle.matched + count(&after);
        let mut index: HashMap<u64, usize> = HashMap::new();
        let mut groups: Vec<Group> = Vec::new();
        let all = before
            .into_iter()
            .chain(middle.groups.iter().cloned())
            .chain(after);
        for g in all {
            match index.get(&g.shape()) {
                Some(&i) => groups[i].then(g),
                None => {
                    index.insert(g.shape(), groups.len());
                    groups.push(g);
                }
            }
        }
        groups.sort_by_key(|g| g.first.line);
        let shapes = groups.len() as u64
            + middle
                .dropped
                .iter()
                .filter(|k| !index.contains_key(k))
                .count() as u64;
        Found {
            groups,
            matched,
            shapes,
            exact: middle.exact,
        }
    }
}

/// Which lines of each group a block shows.
#[derive(Clone, Copy, Default)]
struct Show {
    first: bool,
    last: bool,
}

/// One line of the block: `N:TEXT`, with a note on the lines of its shape
/// not shown.
struct Line<'a> {
    c: &'a Candidate,
    note: Option<(u64, u64, u64)>,
}

impl Line<'_> {
    fn len(&self) -> usize {
        digits(self.c.line) + 1 + self.c.text.len() + self.note.map_or(0, note_len) + 1
    }

    fn write(&self, out: &mut String) {
        use std::fmt::Write;
        let _ = write!(out, "{}:{}", self.c.line, self.c.text);
        if let Some((n, a, b)) = self.note {
            if n == 1 {
                let _ = write!(out, " [+1 like it, line {a}]");
            } else {
                let _ = write!(out, " [+{n} like it, lines {a}-{b}]");
            }
        }
        out.push('\n');
    }
}

fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

fn note_len((n, a, b): (u64, u64, u64)) -> usize {
    if n == 1 {
        " [+1 like it, line ]".len() + digits(a)
    } else {
        " [+ like it, lines -]".len() + digits(n) + digits(a) + digits(b)
    }
}

/// The lines a block shows of `g`, with the note on the rest: first and
/// last (the note on the first), or one of them.
fn group_lines<'a>(g: &'a Group, s: Show, out: &mut Vec<Line<'a>>) {
    let last = g.last.as_ref();
    match (s.first, s.last.then_some(last).flatten()) {
        (true, Some(l)) => {
            let rest = g.count - 2;
            let note = (rest > 0).then(|| {
                (
                    rest,
                    g.second.unwrap_or(g.first.line),
                    g.before_last.unwrap_or(l.line),
                )
            });
            out.push(Line { c: &g.first, note });
            out.push(Line { c: l, note: None });
        }
        (true, None) => {
            let note = (g.count > 1).then(|| {
                (
                    g.count - 1,
                    g.second.unwrap_or(g.first.line),
                    g.last_line().line,
                )
            });
            out.push(Line { c: &g.first, note });
        }
        (false, Some(l)) => {
            let note = (g.count > 1).then(|| {
                (
                    g.count - 1,
                    g.first.line,
                    g.before_last.unwrap_or(g.first.line),
                )
            });
            out.push(Line { c: l, note });
        }
        (false, None) => {}
    }
}

fn header(shown: usize, found: &Found) -> String {
    let m = found.matched;
    if m == 1 && shown == 1 {
        return "[spillway: 1 omitted line matches error or warning patterns, shown as LINE:TEXT]\n"
            .to_owned();
    }
    let lines = if m == 1 {
        "line matches"
    } else {
        "lines match"
    };
    let at_least = if found.exact { "" } else { "at least " };
    let shapes = found.shapes;
    let s = if shapes == 1 { "" } else { "s" };
    format!(
        "[spillway: {m} omitted {lines} error or warning patterns, {at_least}{shapes} shape{s}; {shown} shown as LINE:TEXT]\n"
    )
}

/// The length of a block of `lines` lines whose own bytes are `body`: with
/// its header, or none when it has no line.
fn block_len(found: &Found, lines: usize, body: usize) -> usize {
    if lines == 0 {
        0
    } else {
        header(lines, found).len() + body
    }
}

/// The block's lines, in line order, and its length with its header.
fn block<'a>(found: &'a Found, show: &[Show]) -> (Vec<Line<'a>>, usize) {
    let mut lines = Vec::new();
    for (g, s) in found.groups.iter().zip(show) {
        group_lines(g, *s, &mut lines);
    }
    lines.sort_by_key(|l| l.c.line);
    let len = block_len(found, lines.len(), lines.iter().map(Line::len).sum());
    (lines, len)
}

/// The order a block's lines are tried in, as `(group, last)`: the first
/// and the last line of the highest rank first, then one line of each
/// shape by rank (earlier first), then the last lines of the shapes.
fn tries(groups: &[Group], mut try_one: impl FnMut(usize, bool)) {
    let Some(top) = groups.iter().map(|g| g.rank).max() else {
        return;
    };
    let tops = || (0..groups.len()).filter(|&i| groups[i].rank == top);
    if let Some(first) = tops().min_by_key(|&i| groups[i].first.line) {
        try_one(first, false);
    }
    if let Some(last) = tops().max_by_key(|&i| groups[i].last_line().line) {
        try_one(last, true);
    }
    let mut order: Vec<usize> = (0..groups.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(groups[i].rank), groups[i].first.line));
    for &i in &order {
        try_one(i, false);
    }
    for &i in &order {
        try_one(i, true);
    }
}

/// What a group shows once its first line (`last` false) or its last line
/// is tried: a group of one line has only a first.
fn tried(g: &Group, s: Show, last: bool) -> Show {
    let mut after = s;
    if last && g.last.is_some() {
        after.last = true;
    } else {
        after.first = true;
    }
    after
}

/// Chooses what the block shows within `room` bytes and `max_lines` lines
/// (header included), in the order of [`tries`], as long as each fits.
fn pick(found: &Found, room: usize, max_lines: u64) -> Vec<Show> {
    let groups = &found.groups;
    let mut show = vec![Show::default(); groups.len()];
    // The block's lines and their length (without the header) as shown
    // so far: a try changes one group's, so it is not built again (a
    // block of many shapes was built once a try, each time whole).
    let mut shown = (0usize, 0usize);
    let of = |g: &Group, s: Show| {
        let mut lines = Vec::with_capacity(2);
        group_lines(g, s, &mut lines);
        (lines.len(), lines.iter().map(Line::len).sum::<usize>())
    };
    tries(groups, |i, last| {
        let before = show[i];
        let after = tried(&groups[i], before, last);
        let (was, was_len) = of(&groups[i], before);
        let (is, is_len) = of(&groups[i], after);
        let lines = shown.0 - was + is;
        let body = shown.1 - was_len + is_len;
        if block_len(found, lines, body) <= room && (lines == 0 || (lines as u64) < max_lines) {
            show[i] = after;
            shown = (lines, body);
        }
    });
    debug_assert_eq!(
        block(found, &show).1,
        block_len(found, shown.0, shown.1),
        "the tally is the block's length"
    );
    show
}

/// The cut positions: the head's end in `head`, the tail's start in the
/// tail side.
fn cuts(
    r: &Rendered<'_>,
    limits: &Limits<'_>,
    bound_len: usize,
    notice_lines: u64,
    reserve: (usize, u64),
) -> (usize, usize) {
    let parts = r.parts;
    let head = &parts.head.text;
    let whole = parts.whole;
    let tail_side = parts.tail.as_ref().unwrap_or(&parts.head);
    let rendered_len = if whole { head.len() } else { usize::MAX };
    let lines_forced = whole
        && limits
            .lines
            .is_some_and(|l| count_lines(head.as_bytes()) > l);
    let limit = if lines_forced {
        limits.bytes
    } else {
        limits.bytes.min(rendered_len)
    };
    let mut avail = limit.saturating_sub(bound_len + 2 + reserve.0);
    if whole {
        avail = avail.min(head.len().saturating_sub(1));
    }
    let avail_lines = limits
        .lines
        .map(|l| l.saturating_sub(notice_lines + reserve.1));
    let pct = usize::from(limits.head_percent);
    let head_share = avail * pct / 100;
    let head_lines = avail_lines.map(|l| l * pct as u64 / 100);
    let h_end = cut_head(head, whole, head_share, head_lines);
    let h_lines = count_lines(&head.as_bytes()[..h_end]);
    let tail_share = avail - h_end;
    let tail_lines = avail_lines.map(|l| l.saturating_sub(h_lines));
    let at_line_start = whole
        || tail_side
            .anchors
            .first()
            .is_some_and(|a| a.span.starts_line);
    let mut t_start = cut_tail(&tail_side.text, at_line_start, tail_share, tail_lines);
    if whole && t_start < h_end {
        t_start = h_end;
    }
    (h_end, t_start)
}

fn head_at(side: &Side, pos: usize) -> RawAt {
    if pos == 0 {
        return RawAt {
            raw: 0,
            line: 1,
            line_before: 0,
        };
    }
    side.head_raw(pos).unwrap_or(RawAt {
        raw: 0,
        line: 1,
        line_before: 0,
    })
}

fn tail_at(side: &Side, pos: usize, total_bytes: u64, total_lines: u64) -> RawAt {
    let end = RawAt {
        raw: total_bytes,
        line: total_lines + 1,
        line_before: total_lines,
    };
    if pos >= side.text.len() {
        return end;
    }
    side.tail_raw(pos).unwrap_or(end)
}

/// Builds the preview of rendered text that does not pass whole. Returns
/// it and the raw line numbers of the salient lines it shows.
pub(crate) fn build_rendered(
    r: &Rendered<'_>,
    limits: &Limits<'_>,
    place: &Place<'_>,
) -> (Preview, Vec<u64>) {
    let facts = |cut| Facts {
        total_bytes: r.total_bytes,
        total_lines: r.total_lines,
        cut,
        location: place.location,
        stored_bytes: place.stored_bytes,
        unstored_bytes: place.unstored_bytes,
        invalid_utf8: !r.valid_utf8,
        pointer: "",
    };
    let parts = r.parts;
    let head = &parts.head;
    let tail = parts.tail.as_ref().unwrap_or(head);
    let bound = facts(Cut::Bound).render(limits.templates, Kind::Omitted);
    let notice_lines = count_lines(bound.as_bytes());

    let (mut h_end, mut t_start) = cuts(r, limits, bound.len(), notice_lines, (0, 0));
    let mut found = None;
    let mut show = Vec::new();
    if let Some(m) = r.matcher {
        let find = |h_end: usize, t_start: usize| {
            let mut before = Vec::new();
            let mut after = Vec::new();
            if parts.whole {
                scan(head, h_end, t_start, m, &mut before);
            } else {
                // The head's last line, when its last byte cuts it, is the
                // middle's to judge whole: it is a candidate when the
                // preview omits all of it.
                let cut_line = match head.text.rfind('\n') {
                    Some(i) if i + 1 < head.text.len() => i + 1,
                    None if !head.text.is_empty() => 0,
                    _ => head.text.len(),
                };
                scan(head, h_end, cut_line, m, &mut before);
                if h_end <= cut_line {
                    before.extend(parts.middle.across.clone().map(Group::one));
                }
                scan(tail, 0, t_start, m, &mut after);
            }
            Found::new(before, &parts.middle, after)
        };
        let first = find(h_end, t_start);
        let room = limits.bytes * usize::from(r.salient_percent) / 100;
        let lines_room = limits
            .lines
            .map_or(u64::MAX, |l| l.saturating_sub(notice_lines));
        let picked = pick(&first, room, lines_room);
        let (lines, len) = block(&first, &picked);
        if !lines.is_empty() {
            // Room for the block as picked, and for its numbers to grow
            // once more is omitted.
            let reserve = (len + 64, 1 + lines.len() as u64);
            (h_end, t_start) = cuts(r, limits, bound.len(), notice_lines, reserve);
            let last = find(h_end, t_start);
            show = pick(&last, reserve.0, reserve.1);
            found = Some(last);
        }
    }
    let shown = found.as_ref().map_or(Vec::new(), |f| block(f, &show).0);

    let a = head_at(head, h_end);
    let b = tail_at(tail, t_start, r.total_bytes, r.total_lines);
    let (lo, hi) = (a.raw, b.raw.max(a.raw));
    let first = a.line;
    let last = b.line_before.max(first);
    let shown_bytes: u64 = shown.iter().map(|l| l.c.raw_end - l.c.raw).sum();
    let omitted_bytes = (hi - lo).saturating_sub(shown_bytes);
    let omitted_lines = (last - first + 1).saturating_sub(shown.len() as u64);
    let cut = Cut::Exact {
        omitted_bytes,
        omitted_lines,
        first,
        last,
        bytes: (lo, hi),
    };
    let notice = facts(cut).render(limits.templates, Kind::Omitted);
    debug_assert!(notice.len() <= bound.len());

    let head_part = &head.text[..h_end];
    let tail_part = &tail.text[t_start..];
    let mut content = String::with_capacity(limits.bytes);
    content.push_str(head_part);
    if !head_part.is_empty() && !head_part.ends_with('\n') {
        content.push('\n');
    }
    if let (Some(f), false) = (&found, shown.is_empty()) {
        content.push_str(&header(shown.len(), f));
        for l in &shown {
            l.write(&mut content);
        }
    }
    content.push_str(&notice);
    if !tail_part.is_empty() {
        content.push('\n');
        content.push_str(tail_part);
    }
    let lines = shown.iter().map(|l| l.c.line).collect();
    (
        Preview {
            content,
            head_bytes: head_part.len(),
            tail_bytes: tail_part.len(),
            omitted_bytes,
            omitted_lines,
            omitted_range: Some((first, last)),
        },
        lines,
    )
}

#[cfg(test)]
mod tests {
    use super::{block, pick, tried, tries, Found, Show};
    use crate::salient::{Candidate, Group, SalientRank};
    use proptest::prelude::*;

    /// The choice as first written: the whole block built for every line
    /// tried. The oracle `pick`'s tally is checked against.
    fn pick_by_blocks(found: &Found, room: usize, max_lines: u64) -> Vec<(bool, bool)> {
        let groups = &found.groups;
        let mut show = vec![Show::default(); groups.len()];
        let fits = |show: &[Show]| {
            let (lines, len) = block(found, show);
            len <= room && (lines.is_empty() || (lines.len() as u64) < max_lines)
        };
        tries(groups, |i, last| {
            let before = show[i];
            show[i] = tried(&groups[i], before, last);
            if !fits(&show) {
                show[i] = before;
            }
        });
        show.iter().map(|s| (s.first, s.last)).collect()
    }

    proptest! {
        /// `pick` chooses what building the whole block for every try
        /// chose, from a room that takes none of the lines to one that
        /// takes them all, the common case (a few lines over) among them.
        #[test]
        fn pick_chooses_as_whole_blocks_do(
            groups in proptest::collection::vec(
                (0..3u8, 1..6u64, 0..120usize, 0..120usize),
                0..24,
            ),
            room in 0..4000usize,
            max_lines in 0..40u64,
            matched_extra in 0..3u64,
        ) {
            let mut line = 1;
            let mut found = Vec::new();
            for (k, &(rank, count, first_len, last_len)) in groups.iter().enumerate() {
                let rank = [SalientRank::Word, SalientRank::Warning, SalientRank::Error]
                    [usize::from(rank)];
                let c = |len: usize, at: u64| {
                    Candidate::new(&"x".repeat(len), at, (at * 10, at * 10 + 9), rank, k as u64)
                };
                let mut g = Group::one(c(first_len, line));
                for n in 1..count {
                    let last = if n + 1 == count { last_len } else { first_len };
                    g.then(Group::one(c(last, line + n * 7)));
                }
                line += count * 7 + 3;
                found.push(g);
            }
            let matched = found.iter().map(|g| g.count).sum::<u64>() + matched_extra;
            let found = Found {
                shapes: found.len() as u64,
                groups: found,
                matched,
                exact: matched_extra == 0,
            };
            let got: Vec<(bool, bool)> = pick(&found, room, max_lines)
                .iter()
                .map(|s| (s.first, s.last))
                .collect();
            prop_assert_eq!(got, pick_by_blocks(&found, room, max_lines));
        }
    }
}
