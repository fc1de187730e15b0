//! A naive whole-buffer implementation of the preview rules, to check the
//! streaming stage against. It decodes the whole input at once and searches
//! for every cut by brute force over all positions; it shares no code with
//! the library's windows, rings or memchr-based cuts.

use spillway::NoticeTemplates;

/// What the stage should return.
#[derive(Debug, PartialEq, Eq, Clone)]
pub struct Expected {
    pub spilled: bool,
    pub content: String,
    pub head_bytes: usize,
    pub tail_bytes: usize,
    pub omitted_bytes: u64,
    pub omitted_lines: u64,
    pub omitted_range: Option<[u64; 2]>,
    pub invalid_utf8: bool,
    pub binary: bool,
}

/// Where the full output was stored, as the notice reports it.
pub struct Where<'a> {
    pub id: &'a str,
    pub path: &'a str,
    pub stored_bytes: u64,
}

pub struct Budget {
    pub bytes: usize,
    pub lines: Option<u64>,
    pub head_percent: u8,
}

fn lines_of(b: &[u8]) -> u64 {
    let nl = b.iter().filter(|&&c| c == b'\n').count() as u64;
    nl + u64::from(!b.is_empty() && *b.last().unwrap() != b'\n')
}

fn fill(t: &str, vars: &[(&str, String)]) -> String {
    let mut out = t.to_string();
    for (k, v) in vars {
        out = out.replace(&format!("{{{k}}}"), v);
    }
    out
}

/// For every ESC in the text, the span of the sequence it would start.
/// A cut inside any of them is unsafe (spans may overlap: an ST's ESC starts
/// its own two-byte span at the end of the string it terminates).
fn escape_spans(b: &[u8]) -> Vec<(usize, usize)> {
    (0..b.len())
        .filter(|&i| b[i] == 0x1B)
        .map(|i| (i, escape_end(b, i)))
        .collect()
}

/// The longest escape sequence: one that has not ended within this many
/// bytes ends there.
const MAX_ESCAPE: usize = 256;

/// Where the sequence starting at `i` ends: by its own rules, or at the
/// text's end if the text ends first, or `i + MAX_ESCAPE` if it runs longer.
fn escape_end(b: &[u8], i: usize) -> usize {
    escape_end_within(&b[..(i + MAX_ESCAPE).min(b.len())], i)
}

fn escape_end_within(b: &[u8], i: usize) -> usize {
    let n = b.len();
    let Some(&kind) = b.get(i + 1) else { return n };
    match kind {
        b'[' | 0x20..=0x2F => {
            let (mid, fin) = if kind == b'[' {
                (0x20..=0x3F, 0x40..=0x7E)
            } else {
                (0x20..=0x2F, 0x30..=0x7E)
            };
            let mut j = i + 2;
            while j < n {
                if mid.contains(&b[j]) {
                    j += 1;
                } else if fin.contains(&b[j]) {
                    return j + 1;
                } else {
                    return j;
                }
            }
            n
        }
        b']' | b'P' | b'X' | b'^' | b'_' => {
            let mut j = i + 2;
            while j < n {
                match b[j] {
                    0x07 if kind == b']' => return j + 1,
                    0x18 | 0x1A => return j + 1,
                    0x1B => {
                        return match b.get(j + 1) {
                            Some(b'\\') => j + 2,
                            Some(_) => j,
                            None => n,
                        }
                    }
                    _ => j += 1,
                }
            }
            n
        }
        0x30..=0x7E => i + 2,
        _ => i + 1,
    }
}

/// Whether a cut at `c` is safe: a character boundary, not between CR and
/// LF, and not strictly inside an escape sequence.
fn safe(text: &str, spans: &[(usize, usize)], c: usize) -> bool {
    let b = text.as_bytes();
    text.is_char_boundary(c) && !(c > 0 && c < b.len() && b[c - 1] == b'\r' && b[c] == b'\n') && {
        // Spans are sorted by start and at most MAX_ESCAPE long.
        let from = spans.partition_point(|&(s, _)| s + MAX_ESCAPE < c);
        !spans[from..]
            .iter()
            .take_while(|&&(s, _)| s < c)
            .any(|&(_, e)| c < e)
    }
}

pub fn expected(input: &[u8], budget: &Budget, place: Result<Where<'_>, &str>) -> Expected {
    let t = NoticeTemplates::default();
    let total = input.len() as u64;
    let total_lines = lines_of(input);
    let binary = input.contains(&0);
    let valid = std::str::from_utf8(input).is_ok();
    let lines_ok = |n: u64| budget.lines.is_none_or(|l| n <= l);

    if !binary && valid && input.len() <= budget.bytes && lines_ok(total_lines) {
        return Expected {
            spilled: false,
            content: String::from_utf8(input.to_vec()).unwrap(),
            head_bytes: input.len(),
            tail_bytes: 0,
            omitted_bytes: 0,
            omitted_lines: 0,
            omitted_range: None,
            invalid_utf8: false,
            binary: false,
        };
    }

    let (stored, unstored) = match &place {
        Ok(w) => (w.stored_bytes, total - w.stored_bytes),
        Err(_) => (0, 0),
    };
    let notes = |omitted_kind: bool| {
        let mut s = String::new();
        if !valid && omitted_kind {
            s += "; not UTF-8, invalid bytes shown as U+FFFD";
        }
        if unstored > 0 {
            s += &format!("; only the first {stored} bytes could be stored, the last {unstored} bytes were not");
        }
        s
    };
    // `bytes`: the omitted byte range `A:B`; `by_bytes`: whether the read
    // hint asks for bytes (a cut inside one line) rather than lines.
    let notice = |main: &str,
                  omitted_kind: bool,
                  ob: String,
                  ol: String,
                  first: String,
                  last: String,
                  bytes: String,
                  by_bytes: bool| {
        let lines = format!("{first}:{last}");
        let location = match &place {
            Ok(w) => fill(
                t.stored.as_str(),
                &[
                    ("short_id", w.id[..7 + 16].into()),
                    ("id", w.id.into()),
                    ("path", w.path.into()),
                    ("read_lines", lines.clone()),
                    ("read_bytes", bytes.clone()),
                    ("read_unit", if by_bytes { "bytes" } else { "lines" }.into()),
                    ("read_range", if by_bytes { bytes } else { lines }),
                ],
            ),
            Err(e) => fill(t.unsaved.as_str(), &[("error", e.to_string())]),
        };
        fill(
            main,
            &[
                ("first_omitted_line", first),
                ("last_omitted_line", last),
                ("omitted_lines", ol),
                ("omitted_bytes", ob),
                ("total_lines", total_lines.to_string()),
                ("total_bytes", total.to_string()),
                ("notes", notes(omitted_kind)),
                ("location", location),
            ],
        )
    };
    let base = Expected {
        spilled: true,
        content: String::new(),
        head_bytes: 0,
        tail_bytes: 0,
        omitted_bytes: 0,
        omitted_lines: 0,
        omitted_range: None,
        invalid_utf8: !valid,
        binary,
    };

    if binary {
        let content = notice(
            t.binary.as_str(),
            false,
            total.to_string(),
            total_lines.to_string(),
            "1".into(),
            total_lines.to_string(),
            format!("0:{total}"),
            total_lines == 1,
        );
        return Expected {
            content,
            omitted_bytes: total,
            omitted_lines: total_lines,
            omitted_range: (total_lines > 0).then_some([1, total_lines]),
            ..base
        };
    }

    // Decode the whole input and note the raw offset of every char boundary.
    let mut text = String::new();
    let mut raw_at = vec![usize::MAX; 1];
    raw_at[0] = 0;
    let mut raw = 0;
    for chunk in input.utf8_chunks() {
        for ch in chunk.valid().chars() {
            text.push(ch);
            raw += ch.len_utf8();
            raw_at.resize(text.len() + 1, usize::MAX);
            raw_at[text.len()] = raw;
        }
        if !chunk.invalid().is_empty() {
            text.push('\u{FFFD}');
            raw += chunk.invalid().len();
            raw_at.resize(text.len() + 1, usize::MAX);
            raw_at[text.len()] = raw;
        }
    }
    let d = text.as_bytes();
    let n = d.len();

    if !valid {
        let lossy = notice(
            t.lossy.as_str(),
            false,
            "0".into(),
            "0".into(),
            "1".into(),
            total_lines.to_string(),
            format!("0:{total}"),
            total_lines == 1,
        );
        let sep = usize::from(!text.is_empty() && !text.ends_with('\n'));
        if input.len() <= budget.bytes
            && n + sep + lossy.len() <= budget.bytes
            && lines_ok(lines_of(d) + lines_of(lossy.as_bytes()))
        {
            let content = format!("{text}{}{lossy}", if sep == 1 { "\n" } else { "" });
            return Expected {
                content,
                head_bytes: n,
                ..base
            };
        }
    }

    let w_bytes = total.to_string().len();
    let w_lines = total_lines.max(1).to_string().len();
    let nines = |w: usize| "9".repeat(w);
    let w_range = w_bytes.max(w_lines);
    let bound = notice(
        t.omitted.as_str(),
        true,
        nines(w_bytes),
        nines(w_lines),
        nines(w_lines),
        nines(w_lines),
        format!("{}:{}", nines(w_range), nines(w_range)),
        // The widest range either unit could print ("bytes" and "lines"
        // are equally long): only the bound's length matters.
        true,
    );
    let notice_lines = lines_of(bound.as_bytes());
    let lines_forced = input.len() <= budget.bytes && budget.lines.is_some_and(|l| total_lines > l);
    let limit = if lines_forced {
        budget.bytes
    } else {
        budget.bytes.min(input.len())
    };
    let avail = limit
        .saturating_sub(bound.len() + 2)
        .min(n.saturating_sub(1));
    let avail_lines = budget.lines.map(|l| l.saturating_sub(notice_lines));
    let pct = usize::from(budget.head_percent);
    let head_share = avail * pct / 100;
    let head_lines = avail_lines.map(|l| l * pct as u64 / 100);
    let spans = escape_spans(d);

    // Head: the longest whole-line prefix, else the longest safe cut.
    let mut h = 0;
    if head_share > 0 && head_lines != Some(0) {
        let top = head_share.min(n);
        let whole = (1..=top).rev().find(|&e| {
            text.is_char_boundary(e)
                && (d[e - 1] == b'\n' || e == n)
                && head_lines.is_none_or(|l| lines_of(&d[..e]) <= l)
        });
        h = whole.unwrap_or_else(|| (0..=top).rev().find(|&c| safe(&text, &spans, c)).unwrap());
    }
    let h_lines = lines_of(&d[..h]);
    let tail_share = avail - h;
    let tail_lines = avail_lines.map(|l| l.saturating_sub(h_lines));

    // Tail: the longest whole-line suffix, else the longest safe cut.
    let mut s = n;
    if tail_share > 0 && tail_lines != Some(0) {
        let lo = n.saturating_sub(tail_share);
        let whole = (lo..n).find(|&p| {
            (p == 0 || d[p - 1] == b'\n') && tail_lines.is_none_or(|l| lines_of(&d[p..]) <= l)
        });
        s = whole.unwrap_or_else(|| (lo..=n).find(|&c| safe(&text, &spans, c)).unwrap());
    }
    assert!(h <= s, "oracle: head and tail overlap");

    let head_raw = raw_at[h];
    let tail_raw = raw_at[s];
    let first = 1 + input[..head_raw].iter().filter(|&&c| c == b'\n').count() as u64;
    let last = if tail_raw == 0 {
        first
    } else {
        1 + input[..tail_raw - 1]
            .iter()
            .filter(|&&c| c == b'\n')
            .count() as u64
    };
    let last = last.max(first);
    let omitted = (tail_raw - head_raw) as u64;
    let real = notice(
        t.omitted.as_str(),
        true,
        omitted.to_string(),
        (last - first + 1).to_string(),
        first.to_string(),
        last.to_string(),
        format!("{head_raw}:{tail_raw}"),
        first == last,
    );
    let mut content = text[..h].to_string();
    if h > 0 && !content.ends_with('\n') {
        content.push('\n');
    }
    content += &real;
    if s < n {
        content.push('\n');
        content += &text[s..];
    }
    Expected {
        content,
        head_bytes: h,
        tail_bytes: n - s,
        omitted_bytes: omitted,
        omitted_lines: last - first + 1,
        omitted_range: Some([first, last]),
        ..base
    }
}
