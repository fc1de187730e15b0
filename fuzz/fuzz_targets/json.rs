//! The JSON preview on arbitrary input, and on arbitrary JSON (wide, deep,
//! long strings, escapes): no panic; the content within the budget; a JSON
//! preview parses; any chunking gives the outcome of one write; and a
//! pointer read of the stored document never panics and, for the whole
//! document, gives it back.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use spillway::{Format, JsonPointer, Policy, Spiller};

mod common;

#[derive(Arbitrary, Debug)]
enum Piece {
    Open(bool),
    /// Closes the innermost container, or every open one when true.
    Close(bool),
    Str(String),
    Long(u16, u8),
    Num(i64),
    Key(String),
    Escapes(u8),
    Raw(Vec<u8>),
}

#[derive(Arbitrary, Debug)]
struct Case {
    budget: u16,
    head_percent: u8,
    auto: bool,
    chunks: Vec<u16>,
    depth: u16,
    pieces: Vec<Piece>,
    pointer: String,
}

/// Text from the pieces: mostly JSON, balanced when the pieces allow.
fn text(c: &Case) -> Vec<u8> {
    let mut out = Vec::new();
    let depth = usize::from(c.depth % 2048);
    out.extend(std::iter::repeat_n(b'[', depth));
    let mut stack: Vec<bool> = Vec::new();
    let mut need_comma = false;
    for p in &c.pieces {
        let value = |out: &mut Vec<u8>, need: &mut bool| {
            if *need {
                out.push(b',');
            }
            *need = true;
        };
        match p {
            Piece::Open(obj) => {
                value(&mut out, &mut need_comma);
                if stack.last() == Some(&true) {
                    out.extend_from_slice(b"\"k\":");
                }
                out.push(if *obj { b'{' } else { b'[' });
                stack.push(*obj);
                need_comma = false;
            }
            Piece::Close(all) => {
                let n = if *all { stack.len() } else { 1 };
                for _ in 0..n {
                    if let Some(obj) = stack.pop() {
                        out.push(if obj { b'}' } else { b']' });
                        need_comma = true;
                    }
                }
            }
            Piece::Str(s) | Piece::Key(s) => {
                value(&mut out, &mut need_comma);
                if stack.last() == Some(&true) {
                    out.extend_from_slice(serde_json::to_string(s).unwrap().as_bytes());
                    out.push(b':');
                }
                out.extend_from_slice(serde_json::to_string(s).unwrap().as_bytes());
            }
            Piece::Long(n, c) => {
                value(&mut out, &mut need_comma);
                if stack.last() == Some(&true) {
                    out.extend_from_slice(b"\"l\":");
                }
                out.push(b'"');
                let ch = b'a' + c % 26;
                out.extend(std::iter::repeat_n(ch, usize::from(*n) * 16));
                out.push(b'"');
            }
            Piece::Num(n) => {
                value(&mut out, &mut need_comma);
                if stack.last() == Some(&true) {
                    out.extend_from_slice(b"\"n\":");
                }
                out.extend_from_slice(n.to_string().as_bytes());
            }
            Piece::Escapes(n) => {
                value(&mut out, &mut need_comma);
                if stack.last() == Some(&true) {
                    out.extend_from_slice(b"\"e\":");
                }
                out.push(b'"');
                for _ in 0..*n {
                    out.extend_from_slice(b"\\ud83d\\ude00\\n\\\\\\u00e9");
                }
                out.push(b'"');
            }
            Piece::Raw(r) => out.extend_from_slice(r),
        }
    }
    while let Some(obj) = stack.pop() {
        out.push(if obj { b'}' } else { b']' });
    }
    if depth > 0 && out.len() == depth {
        out.push(b'1');
    }
    out.extend(std::iter::repeat_n(b']', depth));
    out
}

fuzz_target!(|c: Case| {
    let input = text(&c);
    let budget = 460 + u64::from(c.budget % 8192);
    let policy = Policy::builder()
        .max_inline_bytes(budget)
        .head_percent(u64::from(c.head_percent % 101))
        .format(if c.auto { Format::Auto } else { Format::Json })
        .durability(spillway::Durability::Relaxed)
        .build()
        .unwrap();
    let store = common::store();
    common::clean(store);
    let spiller = Spiller::new(policy, store.clone()).unwrap();
    let whole = spiller.apply(&input).unwrap();
    assert!(whole.content.len() as u64 <= budget);
    let mut stage = spiller.stage();
    let mut rest = &input[..];
    for &n in c.chunks.iter().cycle().take(64) {
        let n = usize::from(n).min(rest.len());
        stage.feed(&rest[..n]);
        rest = &rest[n..];
        if rest.is_empty() {
            break;
        }
    }
    stage.feed(rest);
    let mut chunked = stage.finish().unwrap();
    // The second write of the same bytes finds them stored.
    if let (Some(a), Some(b)) = (&whole.spill, &mut chunked.spill) {
        assert!(b.dedup);
        b.dedup = a.dedup;
    }
    assert_eq!(whole, chunked);
    let valid = serde_json::from_slice::<serde::de::IgnoredAny>(&input).is_ok();
    if whole.format.is_json() {
        assert!(whole.spilled);
        serde_json::from_str::<serde::de::IgnoredAny>(&whole.content)
            .unwrap_or_else(|e| panic!("the preview is not JSON: {e}: {}", whole.content));
    } else if valid && whole.spilled && input.len() < 1 << 16 && c.depth % 2048 < 100 {
        // A valid document falls back only when the budget cannot hold a
        // JSON preview, or a key is too long.
        assert!(
            whole.format.json_error().is_some() || c.auto,
            "{:?}",
            whole.format.json_error()
        );
    }
    if let Some(spill) = &whole.spill {
        let mut out = Vec::new();
        if let Ok(p) = c.pointer.parse::<JsonPointer>() {
            let _ = spiller.store().read_pointer(&spill.id, &p, &mut out);
        }
        if valid && !spill.truncated {
            out.clear();
            spiller
                .store()
                .read_pointer(&spill.id, &JsonPointer::default(), &mut out)
                .unwrap();
            let trimmed = input.trim_ascii();
            assert_eq!(out, trimmed);
        }
    }
});
