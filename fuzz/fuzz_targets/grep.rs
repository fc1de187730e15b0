//! `Store::grep` on arbitrary objects and options: no panic, the listing
//! within its budget, in line order, never a line twice, and the matches it
//! lists are the lines a plain scan finds, and every matching line is
//! listed or counted.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use spillway::{Durability, GrepOptions, GrepPattern};

mod common;

const PATTERNS: [&str; 6] = ["error", "(?i)fail", "^$", "a.c", "[0-9]+$", "\\xff"];

#[derive(Arbitrary, Debug)]
struct Case {
    zstd: bool,
    pattern: u8,
    before: u8,
    after: u8,
    max_count: Option<u8>,
    from_line: u8,
    max_bytes: u16,
    max_line_bytes: u8,
    content: Vec<u8>,
}

fuzz_target!(|c: Case| {
    let store = common::store();
    let compression = if c.zstd {
        spillway::Compression::Zstd { level: 1 }
    } else {
        spillway::Compression::None
    };
    let stored = store
        .put(&c.content, compression.write_options(Durability::Relaxed))
        .expect("put");
    let re = GrepPattern::new(PATTERNS[c.pattern as usize % PATTERNS.len()], c.zstd).unwrap();
    let mut opts = GrepOptions::default();
    opts.before = usize::from(c.before % 4);
    opts.after = usize::from(c.after % 4);
    opts.max_count = c.max_count.map(u64::from);
    opts.from_line = 1 + u64::from(c.from_line % 8);
    opts.max_bytes = usize::from(c.max_bytes);
    opts.max_line_bytes = usize::from(c.max_line_bytes);
    let report = store.grep(&stored.id, &re, &opts).expect("grep");
    // Within the budget, but for a page's first match, which always goes
    // in (cut to nothing when even its number does not fit), so that a
    // continuation makes progress.
    let printed = report.printed(opts.separates()).len();
    assert!(
        printed <= opts.max_bytes
            || (report.lines.len() == 1
                && report.lines[0].matched
                && report.lines[0].text.is_empty()),
        "{printed} > {}",
        opts.max_bytes
    );
    assert!(report.lines.windows(2).all(|w| w[0].line < w[1].line));
    let lines: Vec<&[u8]> = c.content.split(|&b| b == b'\n').collect();
    for l in &report.lines {
        let line = lines[(l.line - 1) as usize];
        assert!(l.line >= opts.from_line);
        if l.matched {
            assert!(re.is_match(line));
        }
    }
    // Every matching line is listed or counted: the bulk skipping misses none.
    let mut all: Vec<&[u8]> = lines.clone();
    if c.content.ends_with(b"\n") || c.content.is_empty() {
        all.pop();
    }
    let want = all
        .iter()
        .enumerate()
        .filter(|(i, l)| *i as u64 + 1 >= opts.from_line && re.is_match(l))
        .count() as u64;
    assert_eq!(report.matches + report.more_matches, want);
    if let Some(n) = report.next_line {
        // Only trailing context (past max_count) may follow it.
        let last_match = report.lines.iter().rev().find(|l| l.matched);
        assert!(report.more_matches > 0 && last_match.is_none_or(|l| l.line < n));
    }
    common::clean(store);
});
