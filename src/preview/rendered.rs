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
use crate::render::side::{RawAt, Side};
use crate::render::Parts;
use crate::salient::{Candidate, Matcher};

/// What the rendered preview is made from.
pub(crate) struct Rendered<'a> {
    pub parts: &'a Parts,
    pub total_bytes: u64,
    pub total_lines: u64,
    pub valid_utf8: bool,
    pub matcher: Option<&'a Matcher>,
    pub salient_percent: u8,
}

/// The salient lines of `text[from..to]`, found with `matcher`.
fn scan(side: &Side, from: usize, to: usize, matcher: &Matcher, out: &mut Vec<Candidate>) {
    if from >= to {
        return;
    }
    let text = &side.text[from..to];
    for r in matcher.lines(text) {
        let start = from + r.start;
        // Only whole lines: the part's first line may be cut.
        if start > 0 && side.text.as_bytes()[start - 1] != b'\n' {
            continue;
        }
        let end = (from + r.end + 1).min(side.text.len());
        let (Some(a), Some(b)) = (side.head_raw(start), side.tail_raw(end)) else {
            continue;
        };
        out.push(Candidate::new(&text[r], a.line, a.raw, b.raw.max(a.raw)));
    }
}

fn block_len(c: &Candidate) -> usize {
    // `N:text\n`
    c.line.checked_ilog10().map_or(1, |d| d as usize + 1) + 1 + c.text.len() + 1
}

fn header(shown: usize, matched: u64) -> String {
    if shown as u64 == matched && matched == 1 {
        "[spillway: 1 omitted line matches error patterns, shown as LINE:TEXT]\n".to_owned()
    } else if shown as u64 == matched {
        format!("[spillway: {matched} omitted lines match error patterns, shown as LINE:TEXT]\n")
    } else {
        format!(
            "[spillway: {shown} of {matched} omitted lines that match error patterns, shown as LINE:TEXT]\n"
        )
    }
}

/// Picks salient lines alternately from the first and the last until the
/// next one does not fit `room` (header included); returns them in order.
/// Between the first and the last, a line that repeats the text of an
/// earlier one is passed over: it would say nothing new.
fn pick(cands: &[Candidate], matched: u64, room: usize) -> Vec<Candidate> {
    if cands.is_empty() || room == 0 {
        return Vec::new();
    }
    let mut seen = std::collections::HashSet::new();
    let last = cands.len() - 1;
    let cands: Vec<&Candidate> = cands
        .iter()
        .enumerate()
        .filter(|(i, c)| seen.insert(c.text.as_str()) || *i == 0 || *i == last)
        .map(|(_, c)| c)
        .collect();
    let widest_header = header(0, matched.max(cands.len() as u64) + 1).len() + 8;
    let mut used = widest_header;
    let (mut lo, mut hi) = (0usize, cands.len());
    let mut front = Vec::new();
    let mut back = Vec::new();
    let mut from_front = true;
    while lo < hi {
        let c = if from_front {
            &cands[lo]
        } else {
            &cands[hi - 1]
        };
        let need = block_len(c);
        if used + need > room {
            break;
        }
        used += need;
        if from_front {
            front.push((*c).clone());
            lo += 1;
        } else {
            back.push((*c).clone());
            hi -= 1;
        }
        from_front = !from_front;
    }
    back.reverse();
    front.extend(back);
    front
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
    let mut shown = Vec::new();
    let mut matched = 0;
    if let Some(m) = r.matcher {
        let found = |h_end: usize, t_start: usize| {
            let mut before = Vec::new();
            let mut after = Vec::new();
            if parts.whole {
                scan(head, h_end, t_start, m, &mut before);
            } else {
                scan(head, h_end, head.text.len(), m, &mut before);
                scan(tail, 0, t_start, m, &mut after);
            }
            let matched = before.len() as u64 + parts.middle_count + after.len() as u64;
            let mut all = before;
            all.extend(parts.middle.iter().cloned());
            all.extend(after);
            (all, matched)
        };
        let (cands, count) = found(h_end, t_start);
        let room = limits.bytes * usize::from(r.salient_percent) / 100;
        let picked = pick(&cands, count, room);
        if !picked.is_empty() {
            // The header's count can only grow once more is omitted: room
            // for its widest value.
            let block: usize =
                header(picked.len(), u64::MAX).len() + picked.iter().map(block_len).sum::<usize>();
            let lines = 1 + picked.len() as u64;
            if limits.lines.is_none_or(|l| l >= notice_lines + lines) {
                (h_end, t_start) = cuts(r, limits, bound.len(), notice_lines, (block, lines));
                let (_, count) = found(h_end, t_start);
                let lo = head_at(head, h_end).raw;
                let hi = tail_at(tail, t_start, r.total_bytes, r.total_lines).raw;
                shown = picked
                    .into_iter()
                    .filter(|c| c.raw >= lo && c.raw_end <= hi)
                    .collect();
                matched = count.max(shown.len() as u64);
            }
        }
    }

    let a = head_at(head, h_end);
    let b = tail_at(tail, t_start, r.total_bytes, r.total_lines);
    let (lo, hi) = (a.raw, b.raw.max(a.raw));
    let first = a.line;
    let last = b.line_before.max(first);
    let shown_bytes: u64 = shown.iter().map(|c| c.raw_end - c.raw).sum();
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
    if !shown.is_empty() {
        content.push_str(&header(shown.len(), matched));
        for c in &shown {
            use std::fmt::Write;
            let _ = writeln!(content, "{}:{}", c.line, c.text);
        }
    }
    content.push_str(&notice);
    if !tail_part.is_empty() {
        content.push('\n');
        content.push_str(tail_part);
    }
    let lines = shown.iter().map(|c| c.line).collect();
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
