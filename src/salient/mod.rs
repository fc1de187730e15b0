//! Salient lines: the lines of an omitted middle that look like errors, so
//! that a preview can show them between its head and its tail.
//!
//! `patterns.rs` is what a user configures (the built-in patterns, a
//! pattern and its rank, the compiled set); `matcher.rs` finds the lines
//! that match, gated by literals every built-in match holds; `candidate.rs`
//! is a line found and the lines of one shape; `shape.rs` is a line's shape.

use serde::{Deserialize, Serialize};

mod candidate;
mod matcher;
mod patterns;
pub(crate) mod shape;

pub(crate) use candidate::{Candidate, Group};
pub(crate) use matcher::{Caches, LinesAt, Matcher};
pub(crate) use patterns::one_line;
pub use patterns::{SalientError, SalientPattern, SalientPatterns, DEFAULT_SALIENT};

/// How much a salient line says about what went wrong. A line takes the
/// rank of its first match (of two that start together, the higher), or,
/// when that is a mere word, the highest rank of the patterns it matches;
/// the preview gives its room to the higher ranks first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum SalientRank {
    /// The line merely contains a word such as `error` or `failed`.
    Word,
    /// The line says it is a warning: a `WARN` level, a compiler's
    /// `warning:`, logcat's `W`.
    Warning,
    /// The line says it is an error: an `ERROR` or `FATAL` level, a
    /// compiler's `error:`, a failing test, a traceback, a panic. A user's
    /// pattern without a rank ranks here.
    Error,
}

impl SalientRank {
    /// The name used in configs and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            SalientRank::Word => "word",
            SalientRank::Warning => "warning",
            SalientRank::Error => "error",
        }
    }
}

impl std::str::FromStr for SalientRank {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "word" => Ok(SalientRank::Word),
            "warning" => Ok(SalientRank::Warning),
            "error" => Ok(SalientRank::Error),
            other => Err(format!(
                "unknown salient rank {other:?} (expected error, warning or word)"
            )),
        }
    }
}

/// The default share of the budget salient lines may take, in percent.
pub const DEFAULT_SALIENT_PERCENT: u8 = 20;

/// A salient line is shown cut to at most this many bytes.
pub(crate) const MAX_SALIENT_LINE: usize = 512;

#[cfg(test)]
mod tests {
    use super::patterns::built_in;
    use super::*;

    fn rank(m: &Matcher, line: &str) -> Option<SalientRank> {
        let all: Vec<_> = m.lines(line.as_bytes(), &mut m.caches()).collect();
        assert!(all.len() <= 1, "{line}");
        let r = all.first().map(|(_, r)| *r);
        assert_eq!(m.line_rank(line.as_bytes(), &mut m.caches()), r, "{line}");
        r
    }

    #[test]
    fn the_built_in_patterns_rank_what_lines_say_about_themselves() {
        let m = SalientPatterns::default().matcher().unwrap();
        let errors = [
            "error[E0308]: mismatched types",
            "error: could not compile `demo`",
            "src/main.c:3:5: error: expected ';' before '}' token",
            "main.c:1:10: fatal error: nope.h: No such file or directory",
            "src/a.ts(3,5): error TS2304: Cannot find name 'x'.",
            "FAILED tests/test_x.py::test_y - assert 1 == 2",
            "--- FAIL: TestThing (0.00s)",
            "FAIL\tgithub.com/x/y\t0.01s",
            "FAIL src/sum.test.js",
            "test tests::it_adds ... FAILED",
            "test_div (test_m.T.test_div) ... ERROR",
            "not ok 3 - parses dates",
            "test result: FAILED. 3 passed; 1 failed",
            "  ✕ adds numbers (3 ms)",
            "Traceback (most recent call last):",
            "thread 'main' panicked at src/main.rs:2:5:",
            "panic: runtime error: index out of range [3] with length 3",
            "fatal: repository 'x' does not exist",
            "Exception in thread \"main\" java.lang.NullPointerException",
            "java.lang.IllegalStateException: closed",
            "ValueError: invalid literal",
            "npm ERR! code E404",
            "npm error code E404",
            "make: *** [Makefile:3: all] Error 1",
            "E: Unable to locate package nope",
            "2026-01-01 ERROR connection refused",
            "2015-07-29 19:04:29,071 - ERROR [LearnerHandler-/10.10.34.11:52225:LearnerHandler@562] - Unexpected exception causing shutdown",
            "[Sun Dec 04 04:47:44 2005] [error] mod_jk child workerEnv in error state 6",
            "2026/12/05 03:00:00 [crit] 123#0: *1 open() failed",
            "ts=2026-12-05 level=error msg=\"disk full\"",
            r#"{"time":"2026-12-05T03:00:00Z","level":"error","msg":"db down"}"#,
            r#"{"level":50,"time":1,"msg":"db down"}"#,
            "12-05 03:14:42.123  1234  5678 E AndroidRuntime: FATAL EXCEPTION: main",
            "F/libc    ( 1234): Fatal signal 11 (SIGSEGV)",
            "Segmentation fault (core dumped)",
            "bash: foo: command not found",
        ];
        for h in errors {
            assert_eq!(rank(&m, h), Some(SalientRank::Error), "{h}");
        }
        let warnings = [
            "warning: unused variable `x`",
            "src/a.c:3:5: warning: unused variable 'x' [-Wunused-variable]",
            "2015-07-29 17:41:44,747 - WARN  [RecvWorker:188978561024:QuorumCnxManager$RecvWorker@762] - Connection broken for id 188978561024, my id = 1, error = ",
            "2026-12-05 03:00:00 WARNING low disk",
            "level=warn msg=slow",
            r#"{"level":"warn","msg":"slow"}"#,
            r#"{"level":40,"msg":"slow"}"#,
            "12-05 03:14:42.123  1234  5678 W System: slow",
            "npm warn deprecated inflight@1.0.6",
            "/x/a.py:3: DeprecationWarning: old",
        ];
        for h in warnings {
            assert_eq!(rank(&m, h), Some(SalientRank::Warning), "{h}");
        }
        let words = [
            "  = note: an error occurred while linking",
            "could not open file: No such file or directory",
            "Retrying after Failed attempt",
            "ErrorBoundary caught an Error in render",
        ];
        for h in words {
            assert_eq!(rank(&m, h), Some(SalientRank::Word), "{h}");
        }
        let misses = [
            "   Compiling serde v1.0.0",
            "test result: ok. 10 passed; 0 failed",
            "0 errors, 2 warnings",
            "ErrorBoundary rendered",
            r#"{"level":"info","msg":"0 errors, 1 warning"}"#,
            "12-05 03:14:42.123  1234  5678 I ActivityManager: Start proc",
        ];
        for h in misses {
            assert_eq!(rank(&m, h), None, "{h}");
        }
    }

    /// Lines the gate must pass: each built-in pattern's matches, in
    /// pieces and joined, beside lines that only nearly match.
    const FRAGMENTS: &[&str] = &[
        "error[E0308]: mismatched types",
        "x.c:3:5: error: expected",
        "fatal error: x.h",
        "a.ts(3,5): error TS2304: x",
        "FAILED t.py::x",
        "--- FAIL: T",
        "FAIL\tpkg",
        "test x ... FAILED",
        "test x ... ERROR",
        "not ok 3 - x",
        "test result: FAILED. 1 passed",
        "  ✕ adds",
        "  ✗ adds",
        "Traceback (most recent call last):",
        "thread 'main' panicked at src/main.rs:2:5:",
        "panic: runtime error",
        "fatal: no",
        "Exception in thread \"main\" x",
        "java.lang.IllegalStateException: closed",
        "Caused by: java.io.IOException",
        "ValueError: bad",
        "KeyError",
        "npm ERR! code",
        "npm error code",
        "make[2]: *** [all] Error 1",
        "E: Unable",
        "2026 ERROR x",
        "FATAL x",
        "SEVERE: x",
        "CRITICAL x",
        "PANIC x",
        "[error] x",
        "[core:error] x",
        "[crit] x",
        "[alert] x",
        "[emerg] x",
        "[panic] x",
        "level=error msg=x",
        "lvl=ERR msg=x",
        "severity='fatal'",
        r#"{"level":"error"}"#,
        r#"{"severity": "Critical"}"#,
        r#"{"level":50}"#,
        r#"{"level":60}"#,
        "12-05 03:14:42.123  1234  5678 E Tag: x",
        "12-05 03:14:42.123  1234  5678 F Tag: x",
        "12-05 03:14:42.123  1234  5678 W Tag: x",
        "E/Tag( 12): x",
        "F/libc    ( 1234): x",
        "W/Tag(12): x",
        "Segmentation fault",
        "core dumped",
        "sh: x: command not found",
        "undefined reference to `f'",
        "WARN x",
        "WARNING x",
        "[warn] x",
        "[core:warn] x",
        "level=warning",
        r#"{"level":"WARN"}"#,
        r#"{"level":40}"#,
        "warning: unused",
        "a.c:1:2: warning[-Wx]: y",
        "a.ts(1,2): warning TS6133: y",
        "npm WARN x",
        "npm warn x",
        "DeprecationWarning: old",
        "an error here",
        "an Error here",
        "an Exception here",
        "FAILURE x",
        "Failed x",
        "fatal x",
        "Fatal x",
        "No such file or directory",
        "Permission denied",
        // near misses
        "errors: 0",
        "ok 3 - x",
        "levels=error",
        r#"{"level":"info","n":3}"#,
        r#"{"level":30,"n":3}"#,
        r#"{"lvl" :	10}"#,
        r#"{"severity":"x","code":50}"#,
        "E/",
        " E x",
        "12-05 E Tag: x",
        "terror",
        "WARNINGS",
        "panicky",
        "FAILS",
        "",
    ];

    #[test]
    fn the_gate_passes_every_line_the_built_in_patterns_match() {
        let gated = SalientPatterns::default().matcher().unwrap();
        assert!(gated.gate.is_some());
        let plain = SalientPatterns::new(built_in()).unwrap().matcher().unwrap();
        assert!(plain.gate.is_none());
        let mut lines: Vec<String> = Vec::new();
        for a in FRAGMENTS {
            lines.push((*a).to_owned());
            lines.push(format!("x {a}"));
            lines.push(format!("{a}\r"));
            for b in FRAGMENTS.iter().step_by(7) {
                lines.push(format!("{a} {b}"));
            }
        }
        let mut matched = 0;
        for l in &lines {
            let r = plain.line_rank(l.as_bytes(), &mut plain.caches());
            assert_eq!(
                gated.line_rank(l.as_bytes(), &mut gated.caches()),
                r,
                "{l:?}"
            );
            matched += usize::from(r.is_some());
        }
        assert!(matched > lines.len() / 2, "{matched} of {}", lines.len());
        let text = lines.join("\n");
        let a: Vec<_> = plain.lines(text.as_bytes(), &mut plain.caches()).collect();
        let b: Vec<_> = gated.lines(text.as_bytes(), &mut gated.caches()).collect();
        assert_eq!(a, b);
    }

    /// `line` with each digit made another, drawn from `x`: a line of the
    /// same skeleton.
    fn other_digits(line: &mut [u8], x: &mut u64) {
        for c in line.iter_mut().filter(|c| c.is_ascii_digit()) {
            *x = x.rotate_left(9) ^ 0x9E37_79B9_7F4A_7C15;
            *c = b'0' + (*x % 10) as u8;
        }
    }

    /// Whether `gated`, with the memory of the lines it judged before in
    /// `kept`, ranks `line` as `plain` (every pattern, without a memory)
    /// does.
    fn ranks_as_every_pattern(
        gated: &Matcher,
        kept: &mut Caches,
        plain: &Matcher,
        line: &[u8],
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        let want = plain.line_rank(line, &mut plain.caches());
        proptest::prop_assert_eq!(
            gated.line_rank(line, kept),
            want,
            "{:?}",
            String::from_utf8_lossy(line)
        );
        Ok(())
    }

    /// `line` with each word made only of digits and `a` to `f` (a hex
    /// value, or a word such as `face`) drawn anew from `x`, byte by byte,
    /// each a digit or one of `a` to `f`: lines of the same folded
    /// skeleton and lines just outside it (another first or last byte, no
    /// letter, right after `[`, fewer than four bytes).
    fn other_hex(line: &mut [u8], x: &mut u64) {
        let word = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_';
        let mut i = 0;
        while i < line.len() {
            let n = line[i..].iter().take_while(|b| word(b)).count();
            let run = &mut line[i..i + n];
            if run
                .iter()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
            {
                for b in run {
                    *x = x.rotate_left(9) ^ 0x9E37_79B9_7F4A_7C15;
                    *b = b"0123456789abcdef"[(*x % 16) as usize];
                }
            }
            i += n.max(1);
        }
    }

    /// Where a hex value may stand beside what a pattern reads: inside
    /// brackets and parentheses, after a logcat tag, before its level,
    /// after `not ok`, as a file's extension.
    const HEX_PLACES: &[&str] = &[
        "#",
        "[#]",
        "(#)",
        "( #)",
        "error[#]: x",
        "error[E#]: x",
        "E/t(#): x",
        "W/t( #): x",
        "not ok # - x",
        "make[#]: *** x",
        "x # E t: y",
        "x # W t: y",
        "level=#",
        "src/a.#",
        "a.#/b",
        "#_x",
        "#: error",
        "error: # failed",
        "failed #",
        "# FAILED",
        "panic: #",
        "0x#",
    ];

    proptest::proptest! {
        /// A search that remembers the ranks of the lines it judged ranks
        /// every line as every pattern does, whatever lines with other hex
        /// values (the same folded skeleton, or nearly) came before it.
        #[test]
        fn remembered_ranks_hold_for_other_hex_values(
            picks in proptest::collection::vec(
                (
                    0..HEX_PLACES.len(),
                    0..FRAGMENTS.len(),
                    "[0-9a-f]{1,8}",
                    proptest::prelude::any::<u64>(),
                ),
                1..40,
            )
        ) {
            let gated = SalientPatterns::default().matcher().unwrap();
            let plain = SalientPatterns::new(built_in()).unwrap().matcher().unwrap();
            let mut kept = gated.caches();
            for (place, fragment, hex, seed) in picks {
                let place = HEX_PLACES[place].replace('#', &hex);
                let mut x = seed;
                for line in [
                    format!("{place} {}", FRAGMENTS[fragment]),
                    format!("{} {place} 1f2e3d", FRAGMENTS[fragment]),
                ] {
                    let mut line = line.into_bytes();
                    for _ in 0..4 {
                        ranks_as_every_pattern(&gated, &mut kept, &plain, &line)?;
                        other_hex(&mut line, &mut x);
                    }
                }
            }
        }
    }

    proptest::proptest! {
        /// A search that remembers the ranks of the lines it judged
        /// ranks every line as every pattern does, whatever lines of the
        /// same skeleton (other digits) came before it.
        #[test]
        fn remembered_ranks_are_the_ranks(
            picks in proptest::collection::vec(
                (0..FRAGMENTS.len(), 0..FRAGMENTS.len(), proptest::prelude::any::<u64>()),
                1..40,
            )
        ) {
            let gated = SalientPatterns::default().matcher().unwrap();
            let plain = SalientPatterns::new(built_in()).unwrap().matcher().unwrap();
            let mut kept = gated.caches();
            for (a, b, seed) in picks {
                let mut line = format!("{} 12 {} 0x3f 7", FRAGMENTS[a], FRAGMENTS[b]).into_bytes();
                for pass in 0..2u64 {
                    if pass == 1 {
                        other_digits(&mut line, &mut seed.clone());
                    }
                    ranks_as_every_pattern(&gated, &mut kept, &plain, &line)?;
                }
            }
        }
    }

    proptest::proptest! {
        /// A text's matching lines and ranks are those every pattern finds,
        /// where matched lines come one after another and are looked up in
        /// the memory before the gate, and where lines of one skeleton
        /// (other digits, other hex values) hold a literal or not.
        #[test]
        fn the_lines_of_a_text_are_those_every_pattern_finds(
            picks in proptest::collection::vec(
                (0..FRAGMENTS.len() + 4, proptest::prelude::any::<u64>(), 1..4usize),
                1..60,
            )
        ) {
            let gated = SalientPatterns::default().matcher().unwrap();
            let plain = SalientPatterns::new(built_in()).unwrap().matcher().unwrap();
            let mut text = Vec::new();
            for (pick, seed, times) in picks {
                let line = match pick.checked_sub(FRAGMENTS.len()) {
                    None => format!("{} 12 at 0x3f", FRAGMENTS[pick]),
                    Some(0) => "   Compiling crate-12 v0.1.3".to_string(),
                    Some(1) => "E/Tag( 12): x".to_string(),
                    Some(2) => "src/m12.rs:3:4: error in expression 1e2f0 of m12".to_string(),
                    _ => String::new(),
                };
                let mut x = seed;
                for _ in 0..times {
                    let mut line = line.clone().into_bytes();
                    other_digits(&mut line, &mut x);
                    if pick == FRAGMENTS.len() + 2 {
                        other_hex(&mut line, &mut x);
                    }
                    text.extend_from_slice(&line);
                    text.push(b'\n');
                }
            }
            let want: Vec<_> = plain.lines(&text, &mut plain.caches()).collect();
            let mut kept = gated.caches();
            for _ in 0..2 {
                let got: Vec<_> = gated.lines(&text, &mut kept).collect();
                proptest::prop_assert_eq!(&got, &want, "{:?}", String::from_utf8_lossy(&text));
            }
        }
    }

    /// A line whose only gate literals name a level is searched with the
    /// level patterns alone: it ranks as every pattern ranks it, whatever
    /// else it holds.
    #[test]
    fn a_line_with_only_a_level_literal_ranks_as_with_every_pattern() {
        let gated = SalientPatterns::default().matcher().unwrap();
        let plain = SalientPatterns::new(built_in()).unwrap().matcher().unwrap();
        let levels = [
            r#"{"level":"info","msg":"request 3 done"}"#,
            r#"{"level":"error","msg":"x"}"#,
            r#"{"level": "ERR"}"#,
            r#"{"lvl":60,"msg":"x"}"#,
            r#"{"severity" : "Critical"}"#,
            r#"{"level":30}"#,
            r#"{"level":"warn"}"#,
            r#"{"level":40}"#,
            "level=debug msg=ok",
            "level=err msg=x",
            "lvl=crit",
            "lvl=\"alert\"",
            "severity=emerg",
            "severity=notice",
            "levels=error",
            "level=warning",
            "the level of noise",
            r#"{"lvl":"error"}"#,
            r#"{"msg":"level=error disk"}"#,
            r#"{"level" : "WARN", "severity":"info"}"#,
            r#"{"level":"info","lvl":"crit"}"#,
            r#"{"level":"Error"}"#,
            "loglevel=error",
            "level=\"error\"",
            "level='warn'",
            "'level'=error",
            "severity=error",
            "level=",
            "level\"",
            "\"level",
            "level",
            "xlevel=error",
            "level-error",
        ];
        let others = [
            "",
            " then error: x",
            " FAILED",
            " [warn]",
            " panicked at x",
            " E x",
            " WARN",
            " 0 errors",
            " ok",
            " ✕ x",
        ];
        for l in levels {
            for o in others {
                for line in [format!("{l}{o}"), format!("x {l}{o}"), format!("{l}{o}\r")] {
                    assert_eq!(
                        gated.line_rank(line.as_bytes(), &mut gated.caches()),
                        plain.line_rank(line.as_bytes(), &mut plain.caches()),
                        "{line:?}"
                    );
                }
            }
        }
        let text = levels.join("\n");
        let a: Vec<_> = plain.lines(text.as_bytes(), &mut plain.caches()).collect();
        let b: Vec<_> = gated.lines(text.as_bytes(), &mut gated.caches()).collect();
        assert_eq!(a, b);
        assert!(a.len() >= 8, "{a:?}");
    }

    /// The memo of a gated search ranks a line as every line of its
    /// skeleton (its digits made `0`) and of its level's digits:
    /// every built-in pattern reads a digit as a digit (its literals hold
    /// none, and a class holds all ten or none), but the JSON levels' `50`,
    /// `60` and `40`, which are read only as the run of digits right after
    /// a level's key.
    #[test]
    fn the_built_in_patterns_read_digits_as_digits() {
        use regex_syntax::hir::{Class, Hir, HirKind};
        fn reads_digits(h: &Hir) -> bool {
            match h.kind() {
                HirKind::Literal(l) => l.0.iter().any(u8::is_ascii_digit),
                HirKind::Class(Class::Unicode(c)) => {
                    let holds = |d: char| c.ranges().iter().any(|r| r.start() <= d && d <= r.end());
                    let n = ('0'..='9').filter(|&d| holds(d)).count();
                    n != 0 && n != 10
                }
                HirKind::Class(Class::Bytes(c)) => {
                    let holds = |d: u8| c.ranges().iter().any(|r| r.start() <= d && d <= r.end());
                    let n = (b'0'..=b'9').filter(|&d| holds(d)).count();
                    n != 0 && n != 10
                }
                HirKind::Repetition(r) => reads_digits(&r.sub),
                HirKind::Capture(c) => reads_digits(&c.sub),
                HirKind::Concat(hs) | HirKind::Alternation(hs) => hs.iter().any(reads_digits),
                HirKind::Empty | HirKind::Look(_) => false,
            }
        }
        let parse = |p: &str| {
            regex_syntax::ParserBuilder::new()
                .multi_line(true)
                .build()
                .parse(p)
                .unwrap()
        };
        let mut reading = Vec::new();
        for (_, p) in DEFAULT_SALIENT {
            if reads_digits(&parse(p)) {
                reading.push(*p);
            }
        }
        assert_eq!(reading.len(), 2, "{reading:?}");
        // Each reads digits only right after a level's key, a run of them
        // from there: what `shape::level_digits` keeps.
        fn digits_only(h: &Hir) -> bool {
            match h.kind() {
                HirKind::Literal(l) => l.0.iter().all(u8::is_ascii_digit),
                HirKind::Class(Class::Unicode(c)) => c
                    .ranges()
                    .iter()
                    .all(|r| '0' <= r.start() && r.end() <= '9'),
                HirKind::Class(Class::Bytes(c)) => c
                    .ranges()
                    .iter()
                    .all(|r| b'0' <= r.start() && r.end() <= b'9'),
                HirKind::Concat(hs) | HirKind::Alternation(hs) => hs.iter().all(digits_only),
                _ => false,
            }
        }
        for p in reading {
            let key = format!(r#""{}"[ \t]*:[ \t]*"#, shape::LEVEL_PATTERN);
            let rest = p.strip_prefix(&key).unwrap_or_else(|| panic!("{p}"));
            assert!(!reads_digits(&parse(&p[..p.len() - rest.len()])), "{p}");
            let rest = parse(rest);
            let branches = match rest.kind() {
                HirKind::Alternation(hs) => hs.clone(),
                _ => vec![rest.clone()],
            };
            for b in branches.iter().filter(|b| reads_digits(b)) {
                let parts = match b.kind() {
                    HirKind::Concat(hs) => hs.clone(),
                    _ => vec![b.clone()],
                };
                let run = parts.iter().take_while(|h| digits_only(h)).count();
                assert!(run > 0, "{p}: {b:?}");
                assert!(!parts[run..].iter().any(reads_digits), "{p}: {b:?}");
            }
        }
        // And the memo at work: lines of one skeleton, one rank.
        let m = SalientPatterns::default().matcher().unwrap();
        let mut caches = m.caches();
        for (a, b) in [
            ("not ok 3 - parses", "not ok 7 - parses"),
            (
                "12-05 03:14:42.123  1234  5678 E Tag: x",
                "11-04 01:10:40.000  9999  1111 E Tag: x",
            ),
            ("make[2]: *** [all] Error 1", "make[9]: *** [all] Error 7"),
            ("a.ts(3,5): error TS2304: x", "a.ts(1,1): error TS9999: x"),
        ] {
            let first = m.line_rank(a.as_bytes(), &mut caches);
            assert!(first.is_some(), "{a}");
            assert_eq!(m.line_rank(b.as_bytes(), &mut caches), first, "{b}");
        }
        for (a, b) in [
            (r#"{"level":50,"msg":"x"}"#, r#"{"level":30,"msg":"x"}"#),
            (r#"{"level":40}"#, r#"{"level":10}"#),
        ] {
            assert!(m.line_rank(a.as_bytes(), &mut caches).is_some(), "{a}");
            assert_eq!(m.line_rank(b.as_bytes(), &mut caches), None, "{b}");
        }
    }

    /// A line whose level is a number of more digits than are kept is not
    /// remembered, and does not change what is remembered of the line
    /// looked up before it; a JSON line's level, a word or a number, is
    /// remembered with it, and a line of its skeleton with another level
    /// is judged again.
    #[test]
    fn a_line_not_remembered_leaves_the_last_ones_rank_alone() {
        let m = SalientPatterns::default().matcher().unwrap();
        let mut caches = m.caches();
        let (a, json, again) = (
            "warning: unused 3",
            r#"{"level":500000000,"msg":"x"}"#,
            "warning: unused 7",
        );
        let first = m.line_rank(a.as_bytes(), &mut caches);
        assert_eq!(first, Some(SalientRank::Warning));
        assert_eq!(m.line_rank(json.as_bytes(), &mut caches), None);
        assert_eq!(m.line_rank(again.as_bytes(), &mut caches), first);
        assert_eq!(
            m.line_rank(br#"{"level":50,"msg":"x"}"#, &mut caches),
            Some(SalientRank::Error)
        );
        for (line, rank) in [
            (
                r#"{"ts":"10:00:01","level":"error","n":1}"#,
                Some(SalientRank::Error),
            ),
            (r#"{"ts":"10:00:02","level":"info","n":2}"#, None),
            (
                r#"{"ts":"10:00:03","level":"error","n":3}"#,
                Some(SalientRank::Error),
            ),
            (r#"{"ts":"10:00:04","level":"info","n":4}"#, None),
            (
                r#"{"ts":"10:00:05","level" : 50,"n":5}"#,
                Some(SalientRank::Error),
            ),
            (r#"{"ts":"10:00:06","level" : 30,"n":6}"#, None),
        ] {
            assert_eq!(m.line_rank(line.as_bytes(), &mut caches), rank, "{line}");
        }
    }

    /// A search state given back and taken again does not take another
    /// text's line in the same place for the one it looked up last.
    #[test]
    fn a_search_state_given_back_forgets_where_its_last_line_was() {
        let m = SalientPatterns::default().matcher().unwrap();
        let mut buf = b"2026-12-06 ERROR disk 3 full".to_vec();
        let mut caches = m.caches();
        let rank = m.line_rank(&buf, &mut caches).unwrap();
        let old = m.shape(&buf, rank, &mut caches);
        assert_eq!(m.line_rank(&buf, &mut caches), Some(rank));
        m.give_back(caches);
        buf.copy_from_slice(b"2026-12-06 ERROR disk 3 gone");
        let mut caches = m.caches();
        let new = m.shape(&buf, rank, &mut caches);
        assert_eq!(new, shape::ranked(&buf, rank));
        assert_ne!(new, old);
    }

    /// The built-in searches are compiled when a line first needs them,
    /// so they must compile whenever that is.
    #[test]
    fn the_built_in_patterns_compile() {
        let m =
            Matcher::lazy(&built_in().collect::<Vec<_>>()).gated(&built_in().collect::<Vec<_>>());
        assert_eq!(m.compiled(), (0, 4));
        assert!(m.compile_all());
        assert_eq!(m.compiled(), (4, 4));
        let checked = SalientPatterns::new(built_in()).unwrap().matcher().unwrap();
        assert!(checked.compile_all());
    }

    /// Text that no gate literal is in compiles none of the built-in
    /// searches: a process that previews such an output pays for the
    /// gate's literals alone. Each search is compiled by the first line
    /// that needs it, once for every clone.
    #[test]
    fn the_searches_are_compiled_by_the_first_line_that_needs_them() {
        let pats: Vec<_> = built_in().collect();
        let m = Matcher::lazy(&pats).gated(&pats);
        let text = "building 3 crates\nall done in 2 s\n".repeat(100);
        assert_eq!(m.lines(text.as_bytes(), &mut m.caches()).count(), 0);
        assert_eq!(m.compiled().0, 0);
        let clone = m.clone();
        assert_eq!(
            rank(&clone, r#"{"level":40,"msg":"slow"}"#),
            Some(SalientRank::Warning)
        );
        assert_eq!(
            m.compiled().0,
            1,
            "the level patterns, shared with the clone"
        );
        assert_eq!(rank(&m, "2026 ERROR disk full"), Some(SalientRank::Error));
        assert_eq!(m.compiled().0, 2, "and every pattern");
        assert_eq!(rank(&m, "an error here"), Some(SalientRank::Word));
        assert_eq!(
            m.compiled(),
            (4, 4),
            "a word raises by the errors' and warnings' patterns"
        );
    }

    #[test]
    fn lines_are_found_once_each_with_their_ranges_and_ranks() {
        let m = SalientPatterns::new([
            SalientPattern::new("x", SalientRank::Word),
            SalientPattern::new("y", SalientRank::Warning),
        ])
        .unwrap()
        .matcher()
        .unwrap();
        let text = "a\nxx x\nb\nx y\ny";
        let got: Vec<_> = m
            .lines(text.as_bytes(), &mut m.caches())
            .map(|(r, rank)| (&text[r], rank))
            .collect();
        assert_eq!(
            got,
            [
                ("xx x", SalientRank::Word),
                ("x y", SalientRank::Warning),
                ("y", SalientRank::Warning)
            ]
        );
    }

    #[test]
    fn a_bad_pattern_is_named() {
        let e = SalientPatterns::new(["ok", "(unclosed"]).unwrap_err();
        assert_eq!(e.pattern, "(unclosed");
        assert!(e.to_string().contains("(unclosed"));
        assert!(SalientPatterns::new(Vec::<String>::new())
            .unwrap()
            .matcher()
            .is_none());
    }

    #[test]
    fn a_pattern_reads_as_a_string_or_a_table() {
        let v: Vec<SalientPattern> =
            serde_json::from_str(r#"["a", {"pattern": "b", "rank": "warning"}, {"pattern": "c"}]"#)
                .unwrap();
        assert_eq!(
            v,
            [
                SalientPattern::new("a", SalientRank::Error),
                SalientPattern::new("b", SalientRank::Warning),
                SalientPattern::new("c", SalientRank::Error),
            ]
        );
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"["a",{"pattern":"b","rank":"warning"},"c"]"#
        );
        for bad in [
            r#"[{"pattern": "b", "rank": "loud"}]"#,
            r#"[{"pattern": "b", "level": "error"}]"#,
            r#"[{"rank": "error"}]"#,
            "[3]",
        ] {
            let e = serde_json::from_str::<Vec<SalientPattern>>(bad).unwrap_err();
            assert!(!e.to_string().is_empty(), "{bad}");
        }
        assert!(SalientPatterns::default().is_default());
        assert!(!SalientPatterns::new(["a"]).unwrap().is_default());
    }

    #[test]
    fn groups_join_in_order() {
        let c = |line| Candidate::new("x", line, (line, line + 1), SalientRank::Warning, 7);
        let mut g = Group::one(c(3));
        g.then(Group::one(c(5)));
        assert_eq!((g.count, g.second, g.before_last), (2, Some(5), Some(3)));
        let mut later = Group::one(c(9));
        later.then(Group::one(c(11)));
        later.then(Group::one(c(12)));
        g.then(later);
        assert_eq!(g.count, 5);
        assert_eq!(
            (g.first.line, g.second, g.before_last),
            (3, Some(5), Some(11))
        );
        assert_eq!(g.last_line().line, 12);
    }

    #[test]
    fn long_lines_are_cut_at_a_character_boundary() {
        let long = "é".repeat(600);
        let c = Candidate::new(&long, 3, (0, 1200), SalientRank::Error, 0);
        assert!(c.text.len() <= MAX_SALIENT_LINE);
        assert!(c.text.ends_with('…'));
    }
}
