//! `Store::grep` against a naive oracle: the whole object split into lines,
//! every line matched with the same regex, context and limits applied by
//! the simplest rules.
// Tests damage stores on purpose and drive them from threads of their
// own; the rules of clippy.toml are the library's.
#![allow(clippy::disallowed_methods)]

mod seeds;
mod support;

use proptest::prelude::*;
use regex::bytes::Regex;
use spillway::{GrepOptions, GrepPattern, GrepReport, WriteOptions};
use support::temp_store;

/// Which lines a listing holds, and which of them match, by the plain rules.
fn oracle(data: &[u8], re: &Regex, opts: &GrepOptions) -> (Vec<(u64, bool)>, u64, Option<u64>) {
    let mut lines: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    if data.ends_with(b"\n") || data.is_empty() {
        lines.pop();
    }
    let matches: Vec<u64> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| (i as u64 + 1, l))
        .filter(|(n, l)| *n >= opts.from_line && re.is_match(l))
        .map(|(n, _)| n)
        .collect();
    let shown = opts
        .max_count
        .map_or(matches.len(), |m| (m as usize).min(matches.len()));
    let mut listed = std::collections::BTreeMap::new();
    for &m in &matches[..shown] {
        let lo = m
            .saturating_sub(opts.before as u64)
            .max(opts.from_line)
            .max(1);
        let hi = (m + opts.after as u64).min(lines.len() as u64);
        for n in lo..=hi {
            listed.entry(n).or_insert(false);
        }
        listed.insert(m, true);
    }
    // Context after the last shown match is listed whatever it holds, as
    // grep -m lists it: a match past the limit there is context.
    let more = (matches.len() - shown) as u64;
    let next = matches.get(shown).copied();
    (listed.into_iter().collect(), more, next)
}

/// Options with these fields set (the struct is non-exhaustive).
fn options(
    before: usize,
    after: usize,
    max_count: Option<u64>,
    from_line: u64,
    max_bytes: usize,
) -> GrepOptions {
    let mut o = GrepOptions::default();
    o.before = before;
    o.after = after;
    o.max_count = max_count;
    o.from_line = from_line;
    o.max_bytes = max_bytes;
    o
}

fn check(data: &[u8], pattern: &str, opts: &GrepOptions, raw: bool) {
    let (_dir, store) = temp_store();
    let o = store
        .put(
            data,
            if raw {
                WriteOptions::raw()
            } else {
                WriteOptions::zstd(1)
            },
        )
        .unwrap();
    let re = Regex::new(pattern).unwrap();
    let report = store
        .grep(&o.id, &GrepPattern::new(pattern, false).unwrap(), opts)
        .unwrap();
    let (want, more, next_match) = oracle(data, &re, opts);
    let got: Vec<(u64, bool)> = report.lines.iter().map(|l| (l.line, l.matched)).collect();
    assert_eq!(got, want, "pattern {pattern:?}, {opts:?}");
    assert_eq!(report.more_matches, more);
    assert_eq!(
        report.matches,
        want.iter().filter(|(_, m)| *m).count() as u64
    );
    // Each line's text is the line's bytes, decoded.
    let lines: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    for l in &report.lines {
        let line = lines[(l.line - 1) as usize];
        let kept = line.len() - l.cut_bytes as usize;
        assert_eq!(l.text, String::from_utf8_lossy(&line[..kept]));
        assert!(kept <= opts.max_line_bytes);
    }
    // The continuation resumes at or before the next match, after the last
    // listed match (only trailing context may come after it).
    if let Some(n) = report.next_line {
        assert!(n <= next_match.unwrap());
        let last_match = report.lines.iter().rev().find(|l| l.matched);
        assert!(last_match.is_none_or(|l| l.line < n));
    }
}

fn corpus() -> impl Strategy<Value = Vec<u8>> {
    let line = prop_oneof![
        Just(b"ok".to_vec()),
        Just(b"error: boom".to_vec()),
        Just(b"warning: unused".to_vec()),
        Just("ERROR ✓ ünïcode".as_bytes().to_vec()),
        Just(Vec::new()),
        Just(b"\xff\xfe not utf-8 error".to_vec()),
        proptest::collection::vec(
            any::<u8>().prop_filter("no newline", |b| *b != b'\n'),
            0..40
        ),
    ];
    (proptest::collection::vec(line, 0..200), any::<bool>()).prop_map(|(lines, final_nl)| {
        let mut out = lines.join(&b"\n"[..]);
        if final_nl && !out.is_empty() {
            out.push(b'\n');
        }
        out
    })
}

proptest! {
    #![proptest_config(seeds::config(256))]

    #[test]
    fn grep_equals_a_plain_scan(
        data in corpus(),
        pattern in prop_oneof![Just("error"), Just("(?i)error"), Just("^$"), Just("w.rn"), Just("ü"), Just(r"r\s+o"), Just("(?s)r.o"), Just("k$"), Just("^e"), Just(r"\Aok"), Just("x*")],
        before in 0usize..3,
        after in 0usize..3,
        max_count in proptest::option::of(0u64..5),
        from_line in 1u64..20,
        raw in any::<bool>(),
    ) {
        let opts = options(before, after, max_count, from_line, usize::MAX);
        check(&data, pattern, &opts, raw);
    }
}

#[test]
fn objects_larger_than_a_read_block_and_lines_across_blocks() {
    // 3 MiB of lines whose lengths do not divide any block size, one match
    // every 997 lines.
    let mut data = Vec::new();
    for i in 1..=120_000u32 {
        if i % 997 == 0 {
            data.extend_from_slice(format!("line {i}: FAILED test_{i}\n").as_bytes());
        } else {
            data.extend_from_slice(
                format!("line {i}: ok {}\n", "x".repeat((i % 31) as usize)).as_bytes(),
            );
        }
    }
    for raw in [true, false] {
        check(&data, "FAILED", &options(0, 0, None, 1, usize::MAX), raw);
        check(&data, "FAILED", &options(2, 1, None, 1, usize::MAX), raw);
    }
}

#[test]
fn the_budget_stops_the_listing_and_the_continuation_is_exact() {
    let data: Vec<u8> = (1..=5000)
        .flat_map(|i| format!("{i} {}\n", if i % 7 == 0 { "error" } else { "ok" }).into_bytes())
        .collect();
    let (_dir, store) = temp_store();
    let o = store.put(&data, WriteOptions::zstd(1)).unwrap();
    let re = GrepPattern::new("error", false).unwrap();
    let mut all = Vec::new();
    let mut listed: Vec<u64> = Vec::new();
    let mut opts = options(1, 1, None, 1, 1000);
    let mut rounds = 0;
    loop {
        let r: GrepReport = store.grep(&o.id, &re, &opts).unwrap();
        assert!(r.printed(true).len() <= 1000);
        assert!(!r.lines.is_empty());
        all.extend(r.lines.iter().filter(|l| l.matched).map(|l| l.line));
        listed.extend(r.lines.iter().map(|l| l.line));
        rounds += 1;
        match r.next_line {
            Some(n) => opts.from_line = n,
            None => break,
        }
    }
    let want: Vec<u64> = (1..=5000).filter(|i| i % 7 == 0).collect();
    assert_eq!(
        all, want,
        "every match once, in order, across {rounds} continuations"
    );
    assert!(rounds > 3);
    assert!(
        listed.windows(2).all(|w| w[0] < w[1]),
        "no line listed twice"
    );
}

#[test]
fn long_lines_are_cut_in_the_listing_and_matched_on_their_first_mib() {
    let mut data = "é".repeat(600).into_bytes();
    data.extend_from_slice(b" error\n");
    data.extend_from_slice(&vec![b'y'; 3 << 20]);
    data.extend_from_slice(b" error beyond the first MiB\n");
    let (_dir, store) = temp_store();
    let o = store.put(&data, WriteOptions::raw()).unwrap();
    let r = store
        .grep(
            &o.id,
            &GrepPattern::new("error", false).unwrap(),
            &GrepOptions::default(),
        )
        .unwrap();
    assert_eq!(r.lines.len(), 1);
    let l = &r.lines[0];
    assert_eq!(l.line, 1);
    assert!(l.text.len() <= 1024 && l.text.chars().all(|c| c == 'é'));
    assert_eq!(l.text.len() as u64 + l.cut_bytes, 1200 + 6);
    assert_eq!(r.total_lines, 2);
}

#[test]
fn a_corrupt_object_gives_an_error_not_lines() {
    let (_dir, store) = temp_store();
    let data = b"error one\nerror two\n".repeat(1000);
    let o = store.put(&data, WriteOptions::raw()).unwrap();
    let path = o.path.clone();
    let mut perms = std::fs::metadata(&path).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o600);
    std::fs::set_permissions(&path, perms).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[5] ^= 0x20;
    std::fs::write(&path, bytes).unwrap();
    let err = store
        .grep(
            &o.id,
            &GrepPattern::new("error", false).unwrap(),
            &GrepOptions::default(),
        )
        .unwrap_err();
    assert_eq!(err.kind(), spillway::StoreErrorKind::Corrupt);
}

/// A matching line longer than a page: every page still lists a line (the
/// match, cut to the room), so following the continuations ends, and every
/// match is listed once.
#[test]
fn a_match_longer_than_the_page_still_makes_progress() {
    let mut data = Vec::new();
    for i in 1..=40u32 {
        let pad = if i % 3 == 0 { 5_000 } else { 10 };
        data.extend_from_slice(format!("{i} error {}\n", "x".repeat(pad)).as_bytes());
    }
    let (_dir, store) = temp_store();
    let o = store.put(&data, WriteOptions::zstd(1)).unwrap();
    let re = GrepPattern::new("error", false).unwrap();
    for (before, max_bytes) in [(0, 600), (2, 600), (0, 40), (0, 1)] {
        let mut opts = options(before, 0, None, 1, max_bytes);
        let mut listed = Vec::new();
        for _ in 0..100 {
            let r = store.grep(&o.id, &re, &opts).unwrap();
            assert!(
                !r.lines.is_empty(),
                "an empty page at line {}",
                opts.from_line
            );
            if max_bytes >= 40 {
                assert!(r.printed(before > 0).len() <= max_bytes);
            }
            for l in r.lines.iter().filter(|l| l.matched) {
                let full = 1 + data
                    .split(|&b| b == b'\n')
                    .nth(l.line as usize - 1)
                    .unwrap()
                    .len();
                assert_eq!(l.text.len() + l.cut_bytes as usize + 1, full);
            }
            listed.extend(r.lines.iter().filter(|l| l.matched).map(|l| l.line));
            match r.next_line {
                Some(n) => {
                    assert!(n > r.lines.last().unwrap().line);
                    opts.from_line = n;
                }
                None => break,
            }
        }
        assert_eq!(
            listed,
            (1..=40).collect::<Vec<u64>>(),
            "max_bytes {max_bytes}"
        );
    }
}
