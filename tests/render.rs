//! The terminal render: recorded programs, properties against the library's
//! own whole-buffer render, salient lines and token budgets.
// Tests damage stores on purpose and drive them from threads of their
// own; the rules of clippy.toml are the library's.
#![allow(clippy::disallowed_methods)]

mod seeds;
mod support;

use proptest::prelude::*;
use spillway::{
    Durability, Outcome, Policy, PolicyBuilder, Render, Selection, Spiller, Store, Tokenizer,
};
use support::{apply_chunked, temp_store};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/terminal");

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{FIXTURES}/{name}.out")).expect("fixture (record.py writes them)")
}

fn builder(bytes: usize) -> PolicyBuilder {
    let mut b = Policy::builder();
    b.max_inline_bytes(bytes as u64)
        .durability(Durability::Relaxed)
        .render(Render::Terminal);
    b
}

fn spiller(b: &PolicyBuilder, store: &Store) -> Spiller {
    Spiller::new(b.build().expect("policy"), store.clone()).expect("spiller")
}

fn no_escapes(o: &Outcome) {
    assert!(!o.content.contains('\x1b'), "an ESC reached the content");
    // A `\r` reaches it only as part of a `\r\n` line ending.
    assert!(
        !o.content
            .replace("\r\n", "\n")
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t'),
        "a control character reached the content"
    );
}

/// The raw input is what the store holds, byte for byte.
fn stored_exactly(o: &Outcome, store: &Store, input: &[u8]) {
    let s = o.spill.as_ref().expect("stored");
    assert_eq!(store.read(&s.id, &Selection::All).unwrap(), input);
}

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

/// Each fixture whole (inline) and squeezed to four lines (stored).
fn both(name: &str) -> (Outcome, Outcome, Vec<u8>) {
    let input = fixture(name);
    let (_d, store) = temp_store();
    let whole = spiller(&builder(64 << 10), &store).apply(&input).unwrap();
    no_escapes(&whole);
    // A recording renders differently, unless it is plain lines (`\r\n`
    // line endings are kept as written).
    let plain = !input.contains(&0x1b)
        && !input
            .iter()
            .enumerate()
            .any(|(i, &b)| b == b'\r' && input.get(i + 1) != Some(&b'\n'));
    assert!(
        whole.rendered != plain,
        "{name}: a terminal recording renders differently"
    );
    // Fewer lines than it renders to, so that it is stored.
    let lines = whole.content.lines().count() as u64;
    let mut tight = builder(64 << 10);
    tight.max_inline_lines(Some(lines.saturating_sub(1).clamp(1, 4)));
    let squeezed = spiller(&tight, &store).apply(&input).unwrap();
    no_escapes(&squeezed);
    assert!(squeezed.spilled);
    stored_exactly(&squeezed, &store, &input);
    let [first, last] = squeezed.omitted_range.unwrap();
    assert!(1 <= first && first <= last && last <= squeezed.total_lines);
    (whole, squeezed, input)
}

#[test]
fn cargo_build_keeps_the_error_and_drops_the_progress_bar() {
    let (o, _, _) = both("cargo-build");
    assert!(
        o.content.contains("error[E0308]: mismatched types"),
        "{}",
        o.content
    );
    assert!(o.content.contains("error: could not compile `demo`"));
    assert!(o.content.contains("Compiling demo v0.1.0"));
    // The progress bar was erased each time before the next message.
    assert_eq!(count(&o.content, "Building ["), 0, "{}", o.content);
    // Every `\r` that redrew the bar is gone; those ending lines stay.
    assert!(!o.content.replace("\r\n", "\n").contains('\r'));
}

#[test]
fn tqdm_ends_as_its_final_frame() {
    let (o, _, _) = both("tqdm");
    assert_eq!(count(&o.content, "work:"), 1, "{}", o.content);
    assert!(o.content.contains("work: 100%"));
    assert!(o.content.contains("200/200"));
    assert!(!o.content.contains("16%"));
    assert!(o.content.contains("finished"));
}

#[test]
fn pip_install_reads_as_lines() {
    let (o, _, _) = both("pip-install");
    assert!(o.content.contains("Successfully installed tinypkg-1.0\r\n"));
    assert_eq!(count(&o.content, "Processing"), 1);
}

#[test]
fn npm_install_loses_its_spinner() {
    let input = fixture("npm-install");
    let (_d, store) = temp_store();
    let o = spiller(&builder(64 << 10), &store).apply(&input).unwrap();
    no_escapes(&o);
    assert!(o.content.contains("added 1 package"));
    assert!(!o.content.contains(['⠙', '⠹', '⠸', '⠼']), "{:?}", o.content);
}

#[test]
fn git_clone_progress_appears_once_finished() {
    let (o, squeezed, _) = both("git-clone");
    for phase in [
        "Counting objects",
        "Compressing objects",
        "Receiving objects",
    ] {
        if o.content.contains(phase) {
            assert_eq!(count(&o.content, phase), 1, "{phase}: {}", o.content);
            assert!(o.content.contains(&format!("{phase}: 100%")), "{phase}");
        }
    }
    assert!(o.content.contains("Receiving objects: 100%"));
    // 12,860 bytes of frames read as the six lines a terminal ends with.
    assert_eq!(o.content.lines().count(), 6, "{}", o.content);
    assert!(squeezed.content.lines().count() <= 4);
}

#[test]
fn ls_color_keeps_the_names() {
    let (o, _, _) = both("ls-color");
    for name in ["run.sh", "subdir", "link -> notes.txt", "archive.tar.gz"] {
        assert!(o.content.contains(name), "{name}");
    }
}

#[test]
fn pytest_keeps_the_failure() {
    let (o, squeezed, _) = both("pytest");
    assert!(o.content.contains("FAILED test_demo.py::test_broken"));
    assert!(o.content.contains("collected 31 items"));
    assert!(!o.content.contains("collecting ..."));
    // Squeezed to four lines, the summary at the end still shows.
    assert!(
        squeezed.content.contains("1 failed, 30 passed"),
        "{}",
        squeezed.content
    );
}

/// Raw mode passes the same recording through byte for byte.
#[test]
fn raw_render_is_the_input() {
    let input = fixture("cargo-build");
    let (_d, store) = temp_store();
    let mut b = builder(64 << 10);
    b.render(Render::Raw);
    let o = spiller(&b, &store).apply(&input).unwrap();
    assert_eq!(o.content.as_bytes(), &input[..]);
    assert!(!o.rendered);
}

fn test_log(lines: usize, failed_at: &[usize]) -> Vec<u8> {
    let mut out = String::new();
    for i in 1..=lines {
        if failed_at.contains(&i) {
            out.push_str(&format!(
                "tests/test_mod.py::test_case_{i} FAILED - AssertionError: {i} != 0\n"
            ));
        } else {
            out.push_str(&format!("tests/test_mod.py::test_case_{i} PASSED\n"));
        }
    }
    out.into_bytes()
}

#[test]
fn one_failure_in_the_middle_of_100000_lines_is_kept_with_its_number() {
    let input = test_log(100_000, &[50_000]);
    let (_d, store) = temp_store();
    let o = spiller(&builder(8 << 10), &store).apply(&input).unwrap();
    assert!(o.content.len() <= 8 << 10);
    assert_eq!(o.salient_lines, [50_000]);
    assert!(
        o.content
            .contains("\n50000:tests/test_mod.py::test_case_50000 FAILED"),
        "{}",
        o.content
    );
    let [first, last] = o.omitted_range.unwrap();
    assert!(first < 50_000 && 50_000 < last);
    // The shown line is not counted as omitted.
    assert_eq!(o.omitted_lines, last - first);
    stored_exactly(&o, &store, &input);
    // The notice's range reads back everything between head and tail.
    let s = o.spill.unwrap();
    let middle = store
        .read(
            &s.id,
            &Selection::Lines(format!("{first}:{last}").parse().unwrap()),
        )
        .unwrap();
    let text = String::from_utf8(middle).unwrap();
    assert_eq!(text.lines().count() as u64, last - first + 1);
    assert!(text.contains("test_case_50000 FAILED"));
}

/// More distinct error shapes than the shape table holds, then the one
/// that matters: the last error is still the block's last line, as the
/// first and the last line of the highest rank always are.
#[test]
fn past_the_shape_table_the_last_error_is_still_shown() {
    let words = [
        "disk", "net", "cache", "queue", "lock", "page", "pool", "cert", "dns", "tls",
    ];
    let mut input = String::new();
    for i in 0..2_000 {
        input.push_str(&format!("info step {i} fine\n"));
    }
    // 600 shapes: two words of ten make 100, and a third word makes more.
    for i in 0..600 {
        input.push_str(&format!(
            "ERROR {} {} {} happened\n",
            words[i % 10],
            words[(i / 10) % 10],
            ["alpha", "beta", "gamma", "delta", "omega", "sigma"][i / 100]
        ));
    }
    let fatal = 2_000 + 600 + 1;
    input.push_str("FATAL: the real cause is here\n");
    for i in 0..50_000 {
        input.push_str(&format!("info step {i} fine\n"));
    }
    let (_d, store) = temp_store();
    let o = spiller(&builder(32 << 10), &store)
        .apply(input.as_bytes())
        .unwrap();
    assert!(o.salient_lines.contains(&2_001), "{:?}", o.salient_lines);
    assert_eq!(
        o.salient_lines.last(),
        Some(&(fatal as u64)),
        "{}",
        o.content
    );
    assert!(
        o.content
            .contains(&format!("{fatal}:FATAL: the real cause is here")),
        "{}",
        o.content
    );
}

#[test]
fn many_matches_keep_the_first_and_the_last_within_the_share() {
    let failing: Vec<usize> = (1..=10_000).map(|k| 5_000 + k * 9).collect();
    let input = test_log(100_000, &failing);
    let (_d, store) = temp_store();
    let o = spiller(&builder(8 << 10), &store).apply(&input).unwrap();
    let first = failing[0] as u64;
    let last = *failing.last().unwrap() as u64;
    assert!(o.salient_lines.contains(&first), "{:?}", o.salient_lines);
    assert!(o.salient_lines.contains(&last), "{:?}", o.salient_lines);
    assert!(o.salient_lines.windows(2).all(|w| w[0] < w[1]));
    // The block (header and lines) stays within 20% of the budget.
    let block: usize = o
        .content
        .lines()
        .filter(|l| l.starts_with("[spillway: ") && l.contains("warning patterns"))
        .chain(o.content.lines().filter(|l| {
            l.split_once(':')
                .is_some_and(|(n, _)| n.parse::<u64>().is_ok_and(|n| o.salient_lines.contains(&n)))
        }))
        .map(|l| l.len() + 1)
        .sum();
    assert!(block <= (8 << 10) / 5, "{block}");
    // One shape: its first and last lines, and a note on the rest.
    assert!(
        o.content
            .contains("10000 omitted lines match error or warning patterns, 1 shape; 2 shown"),
        "{}",
        o.content
    );
    let between = format!(
        " [+9998 like it, lines {}-{}]\n",
        failing[1], failing[9_998]
    );
    assert!(o.content.contains(&between), "{}", o.content);
}

#[test]
fn with_no_patterns_the_preview_is_the_head_and_tail_one() {
    let input = test_log(100_000, &[50_000]);
    let (_d, store) = temp_store();
    let mut off = builder(8 << 10);
    off.salient(Vec::<String>::new());
    let without = spiller(&off, &store).apply(&input).unwrap();
    let mut none_match = builder(8 << 10);
    none_match.salient(["a pattern that matches nothing here"]);
    let unmatched = spiller(&none_match, &store).apply(&input).unwrap();
    assert!(without.salient_lines.is_empty());
    assert!(!without.content.contains("50000:"));
    assert_eq!(without.content, unmatched.content);
    assert_eq!(without.omitted_range, unmatched.omitted_range);
    assert_eq!(without.omitted_bytes, unmatched.omitted_bytes);
    let [first, last] = without.omitted_range.unwrap();
    assert_eq!(without.omitted_lines, last - first + 1);
}

// Generated terminal output.

#[derive(Clone, Debug)]
enum Frag {
    Plain,
    Colour,
    Frames(u8),
    Erase,
    Error,
    Repeat(u8),
    Unicode,
    Long(u16),
    Up,
    Backspace,
    Crlf,
    Bad,
}

fn frag() -> impl Strategy<Value = Frag> {
    prop_oneof![
        4 => Just(Frag::Plain),
        2 => Just(Frag::Colour),
        2 => (1u8..20).prop_map(Frag::Frames),
        1 => Just(Frag::Erase),
        1 => Just(Frag::Error),
        1 => (2u8..40).prop_map(Frag::Repeat),
        1 => Just(Frag::Unicode),
        1 => (100u16..3000).prop_map(Frag::Long),
        1 => Just(Frag::Up),
        1 => Just(Frag::Backspace),
        1 => Just(Frag::Crlf),
        1 => Just(Frag::Bad),
    ]
}

/// Renders fragments; with `unique`, no two lines are alike and no move
/// leaves the line (so rendering is line by line).
fn build(frags: &[Frag], unique: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, f) in frags.iter().enumerate() {
        let line = match f {
            Frag::Plain => format!("plain line {i}\n"),
            Frag::Colour => format!("\x1b[1;32m   Compiling\x1b[0m crate-{i} v0.1.0\n"),
            Frag::Frames(n) => {
                let mut s = String::new();
                for k in 0..*n {
                    s.push_str(&format!("\rdownloading {i}: {k}%"));
                }
                s.push_str(&format!("\r\x1b[Kdownloaded {i}\n"));
                s
            }
            Frag::Erase => format!("old text {i}\r\x1b[2Knew text {i}\n"),
            Frag::Error => format!("error[E0308]: mismatched types {i}\n"),
            Frag::Repeat(n) if !unique => "waiting for the lock\n".repeat(usize::from(*n)),
            Frag::Repeat(n) => format!("repeat {i} {n}\n"),
            Frag::Unicode => {
                format!("ünïcödé {i} 😀 \x1b]8;;http://x/{i}\x1b\\link\x1b]8;;\x1b\\\n")
            }
            Frag::Long(n) => format!("{}{i}\n", "x".repeat(usize::from(*n))),
            Frag::Up if !unique => format!("a{i}\nb{i}\n\x1b[2A\x1b[Kc{i}\n\x1b[Kd{i}\n"),
            Frag::Up => format!("up {i}\n"),
            Frag::Backspace => format!("abc{i}\x08\x08XY\n"),
            Frag::Crlf => format!("windows line {i}\r\n"),
            Frag::Bad if !unique => format!("bad \u{FFFD}{i}\n").replace('\u{FFFD}', "\u{1}"),
            Frag::Bad => format!("tab\tline {i}\n"),
        };
        out.extend_from_slice(line.as_bytes());
    }
    if !unique {
        out.extend_from_slice(b"\xff\xfe unfinished");
    }
    out
}

fn chunks() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(1usize..5000, 1..6)
}

/// The whole rendered text, from the library itself with room for it all.
fn rendered_whole(input: &[u8], store: &Store) -> String {
    let mut b = builder(64 << 20);
    b.salient(Vec::<String>::new());
    let o = spiller(&b, store).apply(input).unwrap();
    assert!(!o.spilled);
    o.content
}

proptest! {
    #![proptest_config(seeds::config(96))]

    #[test]
    fn rendering_is_the_same_for_every_chunking_and_within_the_budget(
        frags in prop::collection::vec(frag(), 1..200),
        budget in 0usize..6000,
        lines in prop::option::of(8u64..60),
        sizes in chunks(),
    ) {
        let input = build(&frags, false);
        let (_d, store) = temp_store();
        let min = support::min_budget(&store);
        let mut b = builder(min + budget);
        b.max_inline_lines(lines);
        let sp = spiller(&b, &store);
        let one = sp.apply(&input).unwrap();
        let mut chunked = apply_chunked(&sp, &input, &sizes);
        // The second write is a dedup hit; all else is the same.
        if let (Some(a), Some(b)) = (one.spill.as_ref(), chunked.spill.as_mut()) {
            prop_assert!(b.dedup);
            b.dedup = a.dedup;
        }
        prop_assert_eq!(&one, &chunked);
        no_escapes(&one);
        prop_assert!(one.content.len() <= min + budget);
        if let Some(l) = lines {
            prop_assert!(one.content.lines().count() as u64 <= l);
        }
        prop_assert_eq!(one.total_bytes, input.len() as u64);
        if one.spill.is_some() {
            stored_exactly(&one, &store, &input);
        }
    }

    #[test]
    fn head_and_tail_are_the_rendered_text_and_ranges_are_exact(
        frags in prop::collection::vec(frag(), 1..300),
        budget in 0usize..4000,
        salient in any::<bool>(),
    ) {
        let input = build(&frags, true);
        let (_d, store) = temp_store();
        let whole = rendered_whole(&input, &store);
        let min = support::min_budget(&store);
        let mut b = builder(min + budget);
        if !salient {
            b.salient(Vec::<String>::new());
        }
        let o = spiller(&b, &store).apply(&input).unwrap();
        if !o.spilled {
            prop_assert_eq!(&o.content, &whole);
            return Ok(());
        }
        let head = &o.content[..o.head_bytes];
        let tail = &o.content[o.content.len() - o.tail_bytes..];
        prop_assert!(whole.starts_with(head));
        prop_assert!(whole.ends_with(tail));
        let [first, last] = o.omitted_range.unwrap();
        prop_assert!(first >= 1 && first <= last && last <= o.total_lines);
        // Lines are rendered one by one here: the raw lines before the
        // range render to the head, those after it to the tail.
        let raw_lines: Vec<&[u8]> = input.split_inclusive(|&b| b == b'\n').collect();
        let before: Vec<u8> = raw_lines[..first as usize - 1].concat();
        let after: Vec<u8> = raw_lines[last as usize..].concat();
        if head.ends_with('\n') || head.is_empty() {
            prop_assert_eq!(rendered_whole(&before, &store), head);
        }
        let tail_whole = tail.is_empty() || whole.len() == tail.len()
            || whole.as_bytes()[whole.len() - tail.len() - 1] == b'\n';
        if tail_whole {
            // The tail may begin inside the range's last raw line, after a
            // redraw erased what came before it on that line: the range
            // names the line (its erased bytes are not shown) and the tail
            // holds the line as a terminal shows it.
            let with_last = [raw_lines[last as usize - 1], &after[..]].concat();
            let from_after = rendered_whole(&after, &store);
            prop_assert!(
                from_after == tail || rendered_whole(&with_last, &store) == tail,
                "tail {:?}, lines after the range {:?}", tail, from_after
            );
        }
        for n in &o.salient_lines {
            prop_assert!(first <= *n && *n <= last);
            let text = String::from_utf8_lossy(raw_lines[*n as usize - 1]);
            prop_assert!(text.contains("error[E0308]"));
        }
    }

    #[test]
    fn a_token_budget_holds_for_every_input(
        frags in prop::collection::vec(frag(), 1..200),
        extra in 0u64..3000,
        which in 0usize..3,
        raw in any::<bool>(),
    ) {
        let tokenizer = [Tokenizer::O200k, Tokenizer::Cl100k, Tokenizer::Approx][which];
        let input = build(&frags, false);
        let (_d, store) = temp_store();
        let mut b = builder(32 << 10);
        b.tokenizer(tokenizer);
        if raw {
            b.render(Render::Raw);
        }
        // The smallest budget the policy takes, and more.
        b.max_inline_tokens(Some(1));
        let needed = match b.build() {
            Err(spillway::PolicyError::TokensTooSmall { needed, .. }) => needed,
            other => panic!("{other:?}"),
        };
        let max = needed + extra;
        b.max_inline_tokens(Some(max));
        let o = spiller(&b, &store).apply(&input).unwrap();
        let n = tokenizer.count(&o.content) as u64;
        prop_assert!(n <= max, "{} tokens > {}", n, max);
        prop_assert_eq!(o.tokens.map(|t| t.count), Some(n));
        prop_assert_eq!(o.tokens.map(|t| t.tokenizer), Some(tokenizer));
        prop_assert!(o.content.len() <= 32 << 10);
    }
}

/// A progress bar far longer than the budget, on one line: its last frame
/// is what the tail shows.
#[test]
fn a_megabyte_of_frames_on_one_line_ends_as_its_last_frame() {
    let mut input = Vec::new();
    input.extend_from_slice(b"\x1b[1mDownloading model\x1b[0m\n");
    // More than the budget before the bar: the tail is rendered from the
    // last raw bytes, which hold frames only.
    for i in 0..300 {
        input.extend_from_slice(format!("checking shard {i} of 300\n").as_bytes());
    }
    for k in 0..100_000u32 {
        input.extend_from_slice(
            format!(
                "\rweights: {:>3}% [{:<20}]",
                k / 1000,
                "#".repeat((k / 5000) as usize)
            )
            .as_bytes(),
        );
    }
    input.extend_from_slice(b"\r\x1b[Kweights: 100% done\n");
    let (_d, store) = temp_store();
    let o = spiller(&builder(4 << 10), &store).apply(&input).unwrap();
    no_escapes(&o);
    assert!(o.content.len() <= 4 << 10);
    assert!(
        o.content.starts_with("Downloading model\n"),
        "{}",
        o.content
    );
    assert!(o.content.ends_with("weights: 100% done\n"), "{}", o.content);
    assert!(!o.content.contains("weights:  5%"));
    assert!(o.spilled);
    assert_eq!(o.content.matches("weights:").count(), 1);
    stored_exactly(&o, &store, &input);
}

/// A colour code glued to the word (`\x1b[31mFAILED`) does not hide it.
#[test]
fn a_coloured_failure_in_the_middle_is_found() {
    let mut input = Vec::new();
    for i in 1..=60_000 {
        if i == 30_000 {
            input.extend_from_slice(format!("\x1b[31mFAILED\x1b[0m test_{i}\n").as_bytes());
        } else {
            input.extend_from_slice(format!("\x1b[32mPASSED\x1b[0m test_{i}\n").as_bytes());
        }
    }
    let (_d, store) = temp_store();
    for chunk in [input.len(), 4096, 777] {
        let sp = spiller(&builder(8 << 10), &store);
        let o = apply_chunked(&sp, &input, &[chunk]);
        assert_eq!(o.salient_lines, [30_000], "chunk {chunk}");
        assert!(o.content.contains("\n30000:FAILED test_30000\n"));
        no_escapes(&o);
    }
}

/// Output that renders small but was too long to keep in memory is stored
/// raw; when the store fails, the policy's `fail` still hands back the
/// (whole, rendered) content with the error.
#[test]
fn a_failed_store_under_the_fail_policy_is_an_error_even_when_the_rendering_fits() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("not-a-dir");
    std::fs::write(&root, b"a file where the store should be").unwrap();
    let store = Store::open(&root).unwrap();
    let input = "\x1b[33mwaiting for the lock\x1b[0m\n".repeat(20_000);
    let mut b = builder(4 << 10);
    b.on_store_error(spillway::OnStoreError::Fail);
    let e = spiller(&b, &store).apply(input.as_bytes()).unwrap_err();
    let o = e.outcome();
    assert_eq!(
        o.content,
        "waiting for the lock\n[spillway: the line above repeats 19999 more times]\n"
    );
    assert!(!o.spilled && o.rendered && o.spill.is_none() && o.store_error.is_some());
    // In preview mode the same content comes back with the error noted.
    let o = spiller(&builder(4 << 10), &store)
        .apply(input.as_bytes())
        .unwrap();
    assert!(o.store_error.is_some() && o.content.contains("19999 more times"));
}

/// A coloured line repeated hundreds of times around an error, at the
/// sizes users hit most (1.05x to 2x the budget): each run of copies is
/// the line and a count of the rest, the counts exact, whether the runs
/// are in the head (the whole output fits once folded) or in the tail
/// (after distinct lines that fill the head), whole or in pieces.
#[test]
fn runs_of_a_repeated_line_just_over_the_budget_fold_with_exact_counts() {
    let (_d, store) = temp_store();
    let budget = 8000usize;
    let line = "\x1b[32m   Compiling\x1b[0m crate v0.1.0 (r\u{e9}sum\u{e9} \u{2713})\n";
    let shown = "   Compiling crate v0.1.0 (r\u{e9}sum\u{e9} \u{2713})";
    let error = "\x1b[1m\x1b[31merror\x1b[0m: disk full\n";
    for factor in [1.05f64, 1.2, 1.5, 2.0] {
        let want = (budget as f64 * factor) as usize;
        for distinct in [false, true] {
            // The copies: two runs around the error, `want` bytes in all
            // (after as many distinct lines, which fill the head).
            let head = if distinct {
                lines_until(want, |i| {
                    let l = format!("step {i} of the build finished");
                    let n = l.len();
                    (l, n)
                })
                .join("\n")
                    + "\n"
            } else {
                String::new()
            };
            let copies = want / line.len();
            let (first, second) = (copies / 2, copies - copies / 2);
            let input = format!("{head}{}{error}{}", line.repeat(first), line.repeat(second));
            let runs = format!(
                "{shown}\n[spillway: the line above repeats {} more times]\nerror: disk full\n\
                 {shown}\n[spillway: the line above repeats {} more times]\n",
                first - 1,
                second - 1
            );
            let whole = spiller(&builder(budget), &store)
                .apply(input.as_bytes())
                .unwrap();
            assert!(first > 64 && second > 64, "{factor}: runs past the window");
            assert_eq!(whole.spilled, distinct, "{factor}, {distinct}");
            if distinct {
                assert!(
                    whole.content.ends_with(&runs),
                    "{factor}: {}",
                    whole.content
                );
            } else {
                assert_eq!(whole.content, runs, "{factor}");
            }
            no_escapes(&whole);
            for chunk in [1000, 61] {
                let o = apply_chunked(
                    &spiller(&builder(budget), &store),
                    input.as_bytes(),
                    &[chunk],
                );
                assert_eq!(o.content, whole.content, "{factor}, {distinct}, {chunk}");
            }
        }
    }
}

/// `seq 1 N` for an N whose text is `bytes` long or a little more.
fn seq_text(bytes: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut n = 1u64;
    while out.len() < bytes {
        out.extend_from_slice(format!("{n}\n").as_bytes());
        n += 1;
    }
    out
}

/// Text without escape sequences renders exactly as the raw render does,
/// at every size: just over the budget (the most common size of a failing
/// build), up to the window the render keeps, and past it; whole and
/// streamed in small pieces.
#[test]
fn plain_text_renders_exactly_as_raw_at_every_size() {
    let (_d, store) = temp_store();
    let cap = 32 << 10;
    let terminal = spiller(&builder(cap), &store);
    let mut raw_builder = builder(cap);
    raw_builder.render(Render::Raw);
    let raw = spiller(&raw_builder, &store);
    // From 1.03x (the tester's `seq 1 7000`) to well past the render's
    // window (3x the budget and 64 KiB).
    for bytes in [
        33_893,
        36_000,
        48 << 10,
        56 << 10,
        100 << 10,
        170 << 10,
        400 << 10,
    ] {
        let input = seq_text(bytes);
        let want = raw.apply(&input).unwrap();
        assert!(want.spilled);
        for got in [
            terminal.apply(&input).unwrap(),
            apply_chunked(&terminal, &input, &[4093, 65_537]),
        ] {
            assert_eq!(got.content, want.content, "{bytes} bytes");
            assert_eq!(got.omitted_range, want.omitted_range, "{bytes} bytes");
            assert_eq!(got.tail_bytes, want.tail_bytes, "{bytes} bytes");
        }
    }
}

/// Coloured output a little over the budget keeps the tail's share of the
/// budget, and with it an error 100 lines from the end.
#[test]
fn coloured_output_just_over_the_budget_keeps_its_tail_share() {
    let (_d, store) = temp_store();
    let cap = 32 << 10;
    let s = spiller(&builder(cap), &store);
    let mut input = Vec::new();
    let mut n = 0;
    // The rendered text (escapes gone) is about 10 % over the budget.
    let mut rendered = 0;
    while rendered < cap + cap / 10 {
        let plain = format!("   Compiling crate-{n} v0.1.{n}\n");
        rendered += plain.len();
        input.extend_from_slice(
            format!("\x1b[32m   Compiling\x1b[0m crate-{n} v0.1.{n}\n").as_bytes(),
        );
        n += 1;
    }
    let total = n;
    let error_at = total - 100;
    let mut lines: Vec<&[u8]> = input.split_inclusive(|&b| b == b'\n').collect();
    let error = b"\x1b[1;31merror[E0425]\x1b[0m: cannot find value `x` in this scope\n".to_vec();
    lines.insert(error_at, &error);
    let input = lines.concat();
    for o in [
        s.apply(&input).unwrap(),
        apply_chunked(&s, &input, &[1000, 7]),
    ] {
        no_escapes(&o);
        assert!(o.spilled);
        assert!(o.content.len() <= cap);
        assert!(
            o.content.contains("error[E0425]: cannot find value"),
            "the error 100 lines from the end was lost"
        );
        // The default head share is 30 %: the tail takes most of the rest.
        assert!(
            o.tail_bytes >= cap / 2,
            "tail of {} bytes under a budget of {cap}",
            o.tail_bytes
        );
    }
}

/// Lines of random length (1 to 60 bytes, distinct, no escapes): whatever
/// the head and the tail do not show lies inside the notice's line range,
/// in both renders, whole and streamed, at sizes from just over the budget
/// to far past it.
#[test]
fn the_notice_range_covers_everything_not_shown() {
    let (_d, store) = temp_store();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for (lines, cap) in [
        (1000, 8 << 10),
        (1000, 20 << 10),
        (3000, 8 << 10),
        (700, 16 << 10),
    ] {
        let mut input = Vec::new();
        for i in 0..lines {
            let len = 1 + (next() % 60) as usize;
            let body: String = format!("{i}:{}", "abcdefghij".repeat(6));
            input.extend_from_slice(&body.as_bytes()[..len.min(body.len())]);
            input.push(b'\n');
        }
        let starts: Vec<usize> = std::iter::once(0)
            .chain(
                input
                    .iter()
                    .enumerate()
                    .filter(|(_, &b)| b == b'\n')
                    .map(|(i, _)| i + 1),
            )
            .collect();
        for render in [Render::Terminal, Render::Raw] {
            let mut b = builder(cap);
            b.render(render);
            let s = spiller(&b, &store);
            for o in [
                s.apply(&input).unwrap(),
                apply_chunked(&s, &input, &[333, 4096]),
            ] {
                if !o.spilled {
                    continue;
                }
                let [first, last] = o.omitted_range.expect("a range");
                let head = &o.content.as_bytes()[..o.head_bytes];
                let tail = &o.content.as_bytes()[o.content.len() - o.tail_bytes..];
                assert!(input.starts_with(head), "{render:?} {cap}: head");
                assert!(input.ends_with(tail), "{render:?} {cap}: tail");
                let lo = starts[first as usize - 1];
                let hi = starts[last as usize];
                assert!(
                    lo <= head.len() && input.len() - tail.len() <= hi,
                    "{render:?} {cap}: lines {first}-{last} are bytes {lo}..{hi}, \
                     but {}..{} is not shown",
                    head.len(),
                    input.len() - tail.len()
                );
            }
        }
    }
}

/// Redraws (`ESC[1A ESC[2K`) right before error lines: every salient line
/// shown carries the number of the raw line it shows, whole and streamed,
/// from inside the window and far past it.
#[test]
fn salient_lines_after_redraws_carry_their_raw_line_numbers() {
    let (_d, store) = temp_store();
    for total in [900, 1_400, 6_000] {
        let mut input = Vec::new();
        for i in 0..total {
            if i % 7 == 3 {
                input.extend_from_slice(
                    format!("fetching {i}...\n\x1b[1A\x1b[2Kfetched {i}\n").as_bytes(),
                );
            } else if i % 7 == 4 {
                input.extend_from_slice(format!("npm ERR! code {i}\n").as_bytes());
            } else {
                input.extend_from_slice(format!("ok {i}\n").as_bytes());
            }
        }
        let raw: Vec<&[u8]> = input.split(|&b| b == b'\n').collect();
        let s = spiller(&builder(8 << 10), &store);
        for o in [
            s.apply(&input).unwrap(),
            apply_chunked(&s, &input, &[4093, 7]),
        ] {
            assert!(o.spilled);
            assert!(!o.salient_lines.is_empty(), "{total}: {}", o.content);
            for &n in &o.salient_lines {
                let line = std::str::from_utf8(raw[n as usize - 1]).unwrap();
                assert!(
                    line.starts_with("npm ERR! code "),
                    "{total}: line {n} is {line:?}"
                );
                let shown = format!("\n{n}:{line}");
                assert!(
                    o.content.contains(&format!("{shown}\n"))
                        || o.content.contains(&format!("{shown} [+")),
                    "{total}: line {n}: {}",
                    o.content
                );
            }
        }
    }
}

/// A CRLF file read through a tool: under the budget it comes back byte for
/// byte; over it, the head and the tail keep their `\r\n` endings, as the
/// raw render does.
#[test]
fn a_crlf_file_keeps_its_line_endings() {
    let (_d, store) = temp_store();
    let file: String = (0..600)
        .map(|i| format!("Line {i}, col A;col B\r\n"))
        .collect();
    let s = spiller(&builder(64 << 10), &store);
    let o = s.apply(file.as_bytes()).unwrap();
    assert!(!o.spilled);
    assert_eq!(o.content, file);
    let tight = builder(4 << 10);
    let raw = {
        let mut b = tight.clone();
        b.render(Render::Raw);
        spiller(&b, &store).apply(file.as_bytes()).unwrap()
    };
    for o in [
        spiller(&tight, &store).apply(file.as_bytes()).unwrap(),
        apply_chunked(&spiller(&tight, &store), file.as_bytes(), &[1, 4093]),
    ] {
        assert!(o.spilled);
        assert_eq!(o.content, raw.content);
        assert!(o.content.starts_with("Line 0, col A;col B\r\nLine 1,"));
        assert!(o.content.ends_with("Line 599, col A;col B\r\n"));
    }
}

/// A service log in which a warning that ends in the word `error` repeats
/// hundreds of times with different ids, and two real `ERROR` lines sit in
/// the middle: the block shows both errors and the warning once, with a
/// note on its other occurrences, and counts the lines and the shapes.
#[test]
fn error_lines_outrank_a_repeated_warning_and_shapes_fold() {
    let mut log = String::new();
    let mut warns = Vec::new();
    for i in 1..=3000u64 {
        let line = match i {
            1400 => "2015-07-29 19:04:29,071 - ERROR [LearnerHandler-/10.10.34.11:52225:LearnerHandler@562] - Unexpected exception causing shutdown while sock still open".to_owned(),
            2100 => "2015-07-29 19:21:46,001 - ERROR [CommitProcessor:1:NIOServerCnxn@180] - Unexpected Exception: java.nio.channels.CancelledKeyException".to_owned(),
            _ if i % 4 == 0 && i > 40 && i < 2960 => {
                warns.push(i);
                format!("2015-07-29 17:41:{:02},{:03} - WARN  [RecvWorker:{}:QuorumCnxManager$RecvWorker@762] - Connection broken for id {}, my id = 1, error = ", i % 60, i % 1000, 188978561024u64 + i, 188978561024u64 + i)
            }
            _ => format!("2015-07-29 17:41:{:02},{:03} - INFO  [main:QuorumPeer@{}] - tick {i}", i % 60, i % 1000, i % 900),
        };
        log.push_str(&line);
        log.push('\n');
    }
    let (_d, store) = temp_store();
    for o in [
        spiller(&builder(8000), &store)
            .apply(log.as_bytes())
            .unwrap(),
        apply_chunked(&spiller(&builder(8000), &store), log.as_bytes(), &[4093]),
    ] {
        assert!(o.salient_lines.contains(&1400), "{}", o.content);
        assert!(o.salient_lines.contains(&2100), "{}", o.content);
        let [first, last] = o.omitted_range.unwrap();
        let omitted_warns: Vec<u64> = warns
            .iter()
            .copied()
            .filter(|&n| n >= first && n <= last)
            .collect();
        // The warning's shape shows its first and last lines once each.
        let shown_warns: Vec<u64> = o
            .salient_lines
            .iter()
            .copied()
            .filter(|n| warns.contains(n))
            .collect();
        assert_eq!(
            shown_warns,
            [omitted_warns[0], *omitted_warns.last().unwrap()],
            "{}",
            o.content
        );
        let note = format!(
            " [+{} like it, lines {}-{}]\n",
            omitted_warns.len() - 2,
            omitted_warns[1],
            omitted_warns[omitted_warns.len() - 2]
        );
        assert!(o.content.contains(&note), "{note}: {}", o.content);
        let header = format!(
            "[spillway: {} omitted lines match error or warning patterns, 3 shapes; 4 shown as LINE:TEXT]\n",
            omitted_warns.len() + 2
        );
        assert!(o.content.contains(&header), "{header}: {}", o.content);
    }
}

/// The lines `line(1)`, `line(2)`, ... until the bytes they show, each with
/// its newline, reach `want`; `line(i)` is a line and how many of its bytes
/// are shown (fewer than its length when it holds colours).
fn lines_until(want: usize, line: impl Fn(u64) -> (String, usize)) -> Vec<String> {
    let mut lines = Vec::new();
    let mut size = 0;
    for i in 1.. {
        if size >= want {
            break;
        }
        let (text, shown) = line(i);
        size += shown + 1;
        lines.push(text);
    }
    lines
}

/// The index in `lines` of the line in the middle of what a preview of
/// them within `budget` omits, with no salient lines.
fn middle_of_omitted(lines: &[String], budget: usize, store: &Store) -> usize {
    let mut plain = builder(budget);
    plain.salient(Vec::<String>::new());
    let probe = spiller(&plain, store)
        .apply((lines.join("\n") + "\n").as_bytes())
        .unwrap();
    let [a, b] = probe.omitted_range.unwrap();
    ((a + b) / 2) as usize - 1
}

/// Outputs just over the budget (1.05x to 2x), the common case: the error
/// in the omitted middle is shown, a repeated warning at most twice, and
/// the header counts exactly the omitted lines that match.
#[test]
fn just_over_the_budget_the_block_counts_and_shows_the_omitted_middle() {
    let (_d, store) = temp_store();
    let budget = 8000usize;
    for factor in [1.05f64, 1.2, 1.5, 2.0] {
        let mut lines = lines_until((budget as f64 * factor) as usize, |i| {
            let line = if i.is_multiple_of(6) {
                format!("2026-12-05 03:00:{:02} WARN cache miss for key {i}", i % 60)
            } else {
                format!("2026-12-05 03:00:{:02} INFO served request {i}", i % 60)
            };
            let shown = line.len();
            (line, shown)
        });
        // The error goes in the middle of what the preview omits.
        let mid = middle_of_omitted(&lines, budget, &store);
        lines[mid] = "2026-12-05 03:00:00 ERROR database connection lost".to_owned();
        let input = lines.join("\n") + "\n";
        for o in [
            spiller(&builder(budget), &store)
                .apply(input.as_bytes())
                .unwrap(),
            apply_chunked(
                &spiller(&builder(budget), &store),
                input.as_bytes(),
                &[1000],
            ),
        ] {
            assert!(o.spilled, "{factor}");
            assert!(o.content.len() <= budget, "{factor}");
            let [first, last] = o.omitted_range.unwrap();
            assert!(
                first as usize <= mid + 1 && mid < last as usize,
                "{factor}: {first}-{last}, {} lines, {}",
                lines.len(),
                o.content
            );
            assert!(
                o.salient_lines.contains(&(mid as u64 + 1)),
                "{factor}: {}",
                o.content
            );
            let omitted = &lines[first as usize - 1..last as usize];
            let matching = omitted
                .iter()
                .filter(|l| l.contains(" WARN ") || l.contains(" ERROR "))
                .count();
            let warns_shown = o
                .salient_lines
                .iter()
                .filter(|&&n| lines[n as usize - 1].contains(" WARN "))
                .count();
            assert!(warns_shown <= 2, "{factor}: {}", o.content);
            let header =
                format!("[spillway: {matching} omitted lines match error or warning patterns, ");
            assert!(
                o.content.contains(&header),
                "{factor}: {header} {}",
                o.content
            );
        }
    }
}

/// Coloured output just over the budget (1.05x to 2x), the common case:
/// the last bytes kept for the tail hold all of it, so it is rendered once
/// (its colours read without the terminal's parser), and the error in the
/// omitted middle is shown with its line number and its text, the input
/// whole or cut into pieces as a stream.
#[test]
fn just_over_the_budget_a_coloured_error_in_the_middle_is_shown_with_its_line() {
    let (_d, store) = temp_store();
    let budget = 8000usize;
    for factor in [1.05f64, 1.2, 1.5, 2.0] {
        let mut lines = lines_until((budget as f64 * factor) as usize, |i| {
            let text = format!(" crate-{i} v0.1.{}", i % 9);
            // The budget is of the text shown, without the colours.
            let shown = "   Compiling".len() + text.len();
            (format!("\x1b[1m\x1b[32m   Compiling\x1b[0m{text}"), shown)
        });
        let mid = middle_of_omitted(&lines, budget, &store);
        lines[mid] = "\x1b[1m\x1b[31merror\x1b[0m\x1b[1m: linking failed\x1b[0m".to_owned();
        let input = lines.join("\n") + "\n";
        for chunk in [input.len(), 1000, 61] {
            let o = apply_chunked(
                &spiller(&builder(budget), &store),
                input.as_bytes(),
                &[chunk],
            );
            assert!(o.spilled, "{factor}");
            assert!(o.content.len() <= budget, "{factor}");
            assert_eq!(
                o.salient_lines,
                [mid as u64 + 1],
                "{factor}, {chunk}: {}",
                o.content
            );
            let shown = format!("\n{}:error: linking failed\n", mid + 1);
            assert!(
                o.content.contains(&shown),
                "{factor}, {chunk}: {}",
                o.content
            );
            no_escapes(&o);
        }
    }
}

/// Checks a salient block against the raw lines: every number shown is a
/// raw line that `is_error`, shown with `text` of it, and the header counts
/// exactly the omitted raw lines that `is_error`. Returns the content's
/// block lines.
fn block_matches_raw_lines(
    o: &Outcome,
    raw: &[&str],
    is_error: impl Fn(&str) -> bool,
    text: impl Fn(&str) -> String,
    what: &str,
) {
    let [first, last] = o.omitted_range.expect("spilled");
    let matching = raw[first as usize - 1..last as usize]
        .iter()
        .filter(|l| is_error(l))
        .count();
    let header = if matching == 1 {
        "[spillway: 1 omitted line matches error or warning patterns, ".to_owned()
    } else {
        format!("[spillway: {matching} omitted lines match error or warning patterns, ")
    };
    assert!(
        o.content.contains(&header),
        "{what}: {header}\n{}",
        o.content
    );
    assert!(!o.salient_lines.is_empty(), "{what}: {}", o.content);
    for &n in &o.salient_lines {
        let line = raw[n as usize - 1];
        assert!(
            is_error(line),
            "{what}: line {n} is {line:?}: {}",
            o.content
        );
        let shown = format!("\n{n}:{}", text(line));
        assert!(
            o.content.contains(&format!("{shown}\n")) || o.content.contains(&format!("{shown} [+")),
            "{what}: line {n} not shown as {shown:?}: {}",
            o.content
        );
    }
}

/// An input whose line `fatal` starts at byte `start`: numbered lines
/// before it (an `ERROR` one every 50 when `others`), `after` lines after.
fn straddling_log(start: usize, fatal: &str, others: bool, after: usize) -> String {
    let mut input = String::new();
    let mut n = 0;
    while input.len() + 11 <= start - 8 {
        n += 1;
        if others && n % 50 == 0 {
            input.push_str(&format!("ERROR {n:05}\n"));
        } else {
            input.push_str(&format!("info {n:05}\n"));
        }
    }
    // A filler line so that the fatal one starts at `start`.
    let fill = start - input.len() - 1;
    input.push_str(&"x".repeat(fill));
    input.push('\n');
    input.push_str(fatal);
    input.push('\n');
    for i in 0..after {
        if others && i % 50 == 0 {
            input.push_str(&format!("ERROR {i:05} later\n"));
        } else {
            input.push_str(&format!("info {i:05}\n"));
        }
    }
    input
}

/// An error line that straddles the budget's byte (the head collects that
/// many rendered bytes, and cuts the line there) is found whole, wherever
/// it starts around it, with many other errors or alone; and in an input
/// just over the budget (1.1x to 2x, rendered whole), it is shown whole,
/// in the tail or the block, never cut.
#[test]
fn an_error_line_across_the_heads_last_byte_is_found_whole() {
    let (_d, store) = temp_store();
    let budget = 32 << 10;
    let fatal = "FATAL: disk on fire, giving up";
    let s = spiller(&builder(budget), &store);
    for others in [false, true] {
        for start in (budget - 40..=budget + 2).step_by(3) {
            for after in [300, 3_000, 20_000] {
                let input = straddling_log(start, fatal, others, after);
                let raw: Vec<&str> = input.lines().collect();
                let fatal_line = raw.iter().position(|l| *l == fatal).unwrap() as u64 + 1;
                for o in [
                    s.apply(input.as_bytes()).unwrap(),
                    apply_chunked(&s, input.as_bytes(), &[4093, 7]),
                ] {
                    let what = format!("others {others}, at {start}, {after} after");
                    assert!(o.spilled, "{what}");
                    let whole = format!("{fatal_line}:{fatal}");
                    assert!(
                        o.content.lines().any(|l| l == fatal || l == whole),
                        "{what}: {}",
                        o.content
                    );
                    if after == 20_000 {
                        assert!(
                            o.salient_lines.contains(&fatal_line),
                            "{what}: {}",
                            o.content
                        );
                    }
                    if !o.salient_lines.is_empty() {
                        block_matches_raw_lines(
                            &o,
                            &raw,
                            |l| l.starts_with("FATAL") || l.starts_with("ERROR"),
                            |l| l.to_owned(),
                            &what,
                        );
                    }
                }
            }
        }
    }
}

/// Exact repeats of an error line are counted as the raw lines they are,
/// wherever they lie: near the head's cut and the tail's start (where the
/// rendered text has folded them) as in the middle.
#[test]
fn exact_repeats_of_an_error_are_counted_line_by_line_near_either_end() {
    let (_d, store) = temp_store();
    let error = "ERROR abc def failed";
    for (before, after) in [
        (3_000, 10_000),
        (30_000, 6_000),
        (30_000, 30_000),
        (2_500, 2_500),
    ] {
        let mut input = String::new();
        for i in 0..before {
            input.push_str(&format!("info {i}\n"));
        }
        for _ in 0..10 {
            input.push_str(error);
            input.push('\n');
        }
        for i in 0..after {
            input.push_str(&format!("info {i}\n"));
        }
        let raw: Vec<&str> = input.lines().collect();
        let s = spiller(&builder(32 << 10), &store);
        for o in [
            s.apply(input.as_bytes()).unwrap(),
            apply_chunked(&s, input.as_bytes(), &[4093, 7]),
        ] {
            let what = format!("{before} before, {after} after");
            let first = before as u64 + 1;
            assert_eq!(o.salient_lines, [first, first + 9], "{what}: {}", o.content);
            let note = format!(
                "\n{first}:{error} [+8 like it, lines {}-{}]\n{}:{error}\n",
                first + 1,
                first + 8,
                first + 9
            );
            assert!(o.content.contains(&note), "{what}: {note}\n{}", o.content);
            block_matches_raw_lines(&o, &raw, |l| l == error, |l| l.to_owned(), &what);
        }
    }
}

/// An OSC title or a DCS string may hold line ends: the salient lines after
/// one carry their raw line numbers, in the head's omitted end, the middle,
/// the tail's omitted start and an input rendered whole.
#[test]
fn line_ends_inside_escape_strings_keep_salient_line_numbers_raw() {
    let (_d, store) = temp_store();
    let error = "\x1b[31merror: linker failed with code 1\x1b[0m";
    let escapes = [
        "\x1b]0;build \n status\x07compiling",
        "\x1bPq\n#0;2;0;0;0\n\x1b\\compiling",
        "\x1b]0;build \n status, never terminated",
    ];
    for esc in escapes {
        for (lines, at) in [
            (20_000, 150),
            (20_000, 10_000),
            (20_000, 19_000),
            (400, 150),
        ] {
            let mut input = String::new();
            for i in 1..=lines {
                if i == at {
                    input.push_str(esc);
                } else if i == at + 4 {
                    input.push_str(error);
                } else {
                    input.push_str(&format!("line {i} fine"));
                }
                input.push('\n');
            }
            let raw: Vec<&str> = input.split('\n').collect();
            let s = spiller(&builder(4 << 10), &store);
            for o in [
                s.apply(input.as_bytes()).unwrap(),
                apply_chunked(&s, input.as_bytes(), &[4093, 7]),
            ] {
                let what = format!("{esc:?} at {at} of {lines}");
                let n = raw.iter().position(|l| *l == error).unwrap() as u64 + 1;
                assert_eq!(o.salient_lines, [n], "{what}: {}", o.content);
                block_matches_raw_lines(
                    &o,
                    &raw,
                    |l| l == error,
                    |_| "error: linker failed with code 1".to_owned(),
                    &what,
                );
            }
        }
    }
}
