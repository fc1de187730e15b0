use super::*;

/// Collects the rendered text and the spans.
#[derive(Default)]
struct Text {
    out: String,
    spans: Vec<(String, Span)>,
    /// The rows the terminal made, before its end.
    made: u64,
}

impl LineOut for Text {
    fn line(&mut self, text: &str, newline: bool, span: Span) {
        self.out.push_str(text);
        if newline {
            self.out.push('\n');
        }
        self.spans.push((text.to_owned(), span));
    }
}

fn render_chunks(input: &[u8], chunk: usize) -> Text {
    let mut t = Terminal::new();
    let mut sink = Text::default();
    for c in input.chunks(chunk.max(1)) {
        t.feed(&mut sink, c);
    }
    t.finish(&mut sink);
    sink
}

fn render(input: &[u8]) -> String {
    render_chunks(input, input.len().max(1)).out
}

#[test]
fn escapes_are_removed_and_text_kept() {
    assert_eq!(render(b"\x1b[31mred\x1b[0m plain\n"), "red plain\n");
    // OSC 8 hyperlink keeps its text; an OSC title goes.
    assert_eq!(
        render(b"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x1b]0;title\x07ok\n"),
        "link ok\n"
    );
    // DCS and APC strings go, and lone escapes.
    assert_eq!(render(b"a\x1bP1$r\x1b\\b\x1b_apc\x1b\\c\x1b=d\n"), "abcd\n");
    assert_eq!(
        render(b"private \x1b[?25lmode\x1b[?25h\n"),
        "private mode\n"
    );
}

#[test]
fn carriage_returns_overwrite_the_line() {
    assert_eq!(render(b"10%\r50%\r100%\n"), "100%\n");
    assert_eq!(
        render(b"Progress: [#   ] 1%\rProgress: [####] 100%\n"),
        "Progress: [####] 100%\n"
    );
    // A shorter frame leaves the end of a longer one, as on a terminal...
    assert_eq!(render(b"abcdef\rxy\n"), "xycdef\n");
    // ...unless the line is erased first.
    assert_eq!(render(b"abcdef\r\x1b[Kxy\n"), "xy\n");
    assert_eq!(render(b"abcdef\r\x1b[2Kxy\n"), "xy\n");
    // CRLF is a line end, kept as written.
    assert_eq!(render(b"one\r\ntwo\r\n"), "one\r\ntwo\r\n");
}

#[test]
fn backspace_and_moves_within_the_line() {
    assert_eq!(render(b"abc\x08\x08X\n"), "aXc\n");
    assert_eq!(render(b"abcdef\x1b[3DXY\n"), "abcXYf\n");
    assert_eq!(render(b"ab\x1b[3Cc\n"), "ab   c\n");
    assert_eq!(render(b"abcdef\x1b[2GX\n"), "aXcdef\n");
    assert_eq!(render(b"abcdef\x1b[1G\x1b[2X\n"), "  cdef\n");
    assert_eq!(render(b"abcdef\x1b[1G\x1b[2P\n"), "cdef\n");
    assert_eq!(render(b"abc\x1b[1G\x1b[2@\n"), "  abc\n");
    assert_eq!(render(b"abcdef\x1b[3G\x1b[1K\n"), "   def\n");
}

#[test]
fn cursor_up_redraws_within_the_window() {
    // Two layers drawn, then redrawn in place, as docker pull does.
    let input =
        b"layer1: waiting\nlayer2: waiting\n\x1b[2A\x1b[2Klayer1: done\n\x1b[2Klayer2: done\n";
    assert_eq!(render(input), "layer1: done\nlayer2: done\n");
    // ESC 7 / ESC 8 save and restore.
    let input = b"a\n\x1b7b\nc\n\x1b8\x1b[Kx\n";
    assert_eq!(render(input), "a\nx\nc\n");
    // Erase below the cursor.
    let input = b"a\nb\nc\n\x1b[2A\x1b[Jz\n";
    assert_eq!(render(input), "a\nz\n");
}

#[test]
fn a_move_past_the_window_keeps_the_lines_as_written() {
    let mut input = Vec::new();
    for i in 0..(WINDOW + 10) {
        input.extend_from_slice(format!("line {i}\n").as_bytes());
    }
    input.extend_from_slice(b"tail");
    input.extend_from_slice(format!("\x1b[{}Aredraw\n", WINDOW + 5).as_bytes());
    let out = render(&input);
    assert!(out.starts_with("line 0\nline 1\n"));
    assert!(
        out.ends_with(&format!("line {}\ntail\nredraw\n", WINDOW + 9)),
        "{out}"
    );
}

#[test]
fn controls_and_c1_codes_never_reach_the_output() {
    let out = render(b"a\x07b\x00c\x0ed\x7fe\xc2\x9bf\n");
    assert_eq!(out, "abcdef\n");
    assert!(!render(b"\x1b[31\n\x1b]0;x\nmore\n").contains('\x1b'));
}

#[test]
fn invalid_utf8_becomes_replacement_characters() {
    assert_eq!(render(b"a\xffb\n"), "a\u{FFFD}b\n");
}

#[test]
fn plain_text_is_unchanged_and_exact() {
    let mut input = String::new();
    for i in 0..500 {
        input.push_str(&format!("plain line {i}\twith a tab\n"));
    }
    input.push_str("no newline at the end");
    let t = render_chunks(input.as_bytes(), input.len());
    assert_eq!(t.out, input);
    for (text, span) in &t.spans {
        assert!(span.exact, "{text}");
        assert_eq!(
            &input.as_bytes()[span.raw as usize..span.raw as usize + text.len()],
            text.as_bytes()
        );
        let line = 1 + input.as_bytes()[..span.raw as usize]
            .iter()
            .filter(|&&b| b == b'\n')
            .count() as u64;
        assert_eq!(span.line, line, "{text}");
    }
}

#[test]
fn rendering_does_not_depend_on_chunking() {
    let mut input = Vec::new();
    for i in 0..300 {
        match i % 7 {
            0 => input.extend_from_slice(format!("\x1b[32mok\x1b[0m {i}\n").as_bytes()),
            1 => input.extend_from_slice(format!("{i}%\r{}%\r\x1b[Kdone {i}\n", i + 1).as_bytes()),
            2 => input.extend_from_slice("ünïcödé line\n".as_bytes()),
            3 => input.extend_from_slice(b"a\nb\n\x1b[2A\x1b[Kc\n\n"),
            _ => input.extend_from_slice(format!("plain {i}\n").as_bytes()),
        }
    }
    input.extend_from_slice(&[b'x'; 40_000]);
    input.extend_from_slice(b"\rshort\n");
    let whole = render_chunks(&input, input.len());
    for chunk in [1, 2, 3, 7, 64, 1000, 4096] {
        let t = render_chunks(&input, chunk);
        assert!(t.out == whole.out, "chunk {chunk} renders differently");
        assert_eq!(t.spans.len(), whole.spans.len(), "chunk {chunk}");
    }
}

#[test]
fn long_lines_are_handed_on_in_pieces() {
    let input = vec![b'y'; MAX_ROW * 3 + 5];
    let t = render_chunks(&input, 1000);
    assert_eq!(t.out.len(), input.len());
    assert!(t.spans.len() >= 3);
    assert!(t.spans.iter().all(|(s, _)| s.len() <= MAX_ROW));
}

#[test]
fn spans_name_the_raw_lines() {
    let input = b"\x1b[1mone\x1b[0m\n50%\r100%\nthree\n";
    let t = render_chunks(input, input.len());
    let lines: Vec<(String, u64, u64)> = t
        .spans
        .iter()
        .map(|(s, sp)| (s.clone(), sp.line, sp.raw))
        .collect();
    assert_eq!(
        lines,
        [
            ("one".to_owned(), 1, 0),
            ("100%".to_owned(), 2, 12),
            ("three".to_owned(), 3, 21)
        ]
    );
}

#[test]
fn an_unterminated_string_ends_after_256_bytes() {
    let mut input = b"ab\x1b]0;".to_vec();
    input.extend_from_slice(&[b'x'; 300]);
    input.extend_from_slice(b"\r\x1b[Kdone\nnext\n");
    for chunk in [1, 7, 100, input.len()] {
        let out = render_chunks(&input, chunk).out;
        assert_eq!(out, "done\nnext\n", "chunk {chunk}");
    }
}

#[test]
fn cursor_moves_right_stop_at_a_terminal_width() {
    let out = render(b"a\x1b[60000Cb\n");
    assert_eq!(out.len(), TERMINAL_WIDTH + 2, "{} bytes", out.len());
    assert!(out.starts_with('a') && out.ends_with("b\n"));
    let out = render(b"a\x1b[60000Gb\n");
    assert_eq!(out.len(), TERMINAL_WIDTH + 2);
    // A move within the width is kept as it is.
    assert_eq!(render(b"a\x1b[3Cb\n"), "a   b\n");
    assert_eq!(render(b"a\x1b[5Gb\n"), "a   b\n");
    // Past the width, a move right goes nowhere; a move left still works.
    let long = "x".repeat(600);
    let out = render(format!("{long}\x1b[10Cy\x1b[3Dz\n").as_bytes());
    assert_eq!(out, format!("{}zxy\n", "x".repeat(598)));
}

/// After a cursor-up redraw, the next line is written on a row the cursor
/// came back down to: it carries the raw line it comes from, not the line
/// where that row was started, and the spans still cover every raw byte.
#[test]
fn a_line_after_a_redraw_names_its_own_raw_line() {
    let mut input = Vec::new();
    for i in 1..=10 {
        input.extend_from_slice(format!("step {i}\n").as_bytes());
    }
    // Line 11 is redrawn by line 12; line 13 is the error; line 14 plain.
    input.extend_from_slice(b"building...\n\x1b[1A\x1b[2Kbuilt\nnpm ERR! code 1\nafter\n");
    let raw_line_of = |needle: &[u8]| {
        let at = input
            .windows(needle.len())
            .position(|w| w == needle)
            .unwrap();
        (1 + bytecount::count(&input[..at], b'\n') as u64, at as u64)
    };
    for chunk in [input.len(), 1, 5, 13] {
        let t = render_chunks(&input, chunk);
        let find = |text: &str| {
            t.spans
                .iter()
                .find(|(s, _)| s == text)
                .map(|(_, sp)| *sp)
                .unwrap_or_else(|| panic!("{text} not rendered: {:?}", t.out))
        };
        let err = find("npm ERR! code 1");
        assert_eq!(
            (err.line, err.raw),
            raw_line_of(b"npm ERR!"),
            "chunk {chunk}"
        );
        assert!(err.starts_line);
        let after = find("after");
        assert_eq!((after.line, after.raw), raw_line_of(b"after"));
        // The spans tile the raw input, in order.
        let mut at = 0;
        for (_, sp) in &t.spans {
            assert_eq!(sp.raw, at, "chunk {chunk}: {:?}", t.spans);
            at = sp.raw_end;
        }
        assert_eq!(at, input.len() as u64);
    }
}

/// `\r\n` is a line ending and is kept as written, whatever the chunking;
/// a `\r` that returns to the line's start still redraws it.
#[test]
fn crlf_line_endings_are_kept() {
    let input = b"first line\r\nsecond\r\n50%\r100%\r\nlast\r\n";
    for chunk in 1..=input.len() {
        let t = render_chunks(input, chunk);
        assert_eq!(
            t.out, "first line\r\nsecond\r\n100%\r\nlast\r\n",
            "chunk {chunk}"
        );
        assert!(t.spans[0].1.exact && t.spans[1].1.exact, "chunk {chunk}");
        assert!(!t.spans[2].1.exact);
    }
    // A CRLF file renders as its bytes, spans exact.
    let file: String = (0..3000).map(|i| format!("row {i}\r\n")).collect();
    let t = render_chunks(file.as_bytes(), 4093);
    assert_eq!(t.out, file);
    assert!(t.spans.iter().all(|(_, s)| s.exact));
    // A lone `\r` at the very end is a return, not kept.
    assert_eq!(render(b"done\r"), "done");
}

/// Bidirectional controls are shown as code points, never passed on, on
/// the fast path and the slow one; other characters led by the same byte
/// (dashes, quotes, arrows) pass as they are.
#[test]
fn bidi_controls_are_shown_not_obeyed() {
    let controls = [
        '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}', '\u{2067}',
        '\u{2068}', '\u{2069}',
    ];
    for c in controls {
        for input in [
            format!("access {c}level\n"),
            format!("\x1b[1mred\x1b[0m {c}x\n"),
        ] {
            for chunk in 1..=input.len() {
                let out = render_chunks(input.as_bytes(), chunk).out;
                assert!(!out.contains(c), "{c:?} passed: {out:?}");
                assert!(
                    out.contains(&format!("<U+{:04X}>", u32::from(c))),
                    "{out:?}"
                );
            }
        }
    }
    let plain = "a – b “c” → d ✓ │ e …\n".repeat(100);
    let t = render_chunks(plain.as_bytes(), 4093);
    assert_eq!(t.out, plain);
    assert!(t.spans.iter().all(|(_, s)| s.exact));
}

fn render_shortcuts(input: &[u8], chunk: usize, shortcuts: bool) -> Text {
    let mut t = Terminal::new();
    t.shortcuts = shortcuts;
    let mut sink = Text::default();
    for c in input.chunks(chunk.max(1)) {
        t.feed(&mut sink, c);
    }
    sink.made = t.screen.made();
    t.finish(&mut sink);
    sink
}

/// Lines a copy of which the parser is skipped for (text and colours),
/// and lines it must not be (cursor moves, erases, returns, a saved
/// cursor, strings, controls, bidirectional controls, bytes that are not
/// UTF-8, long ones, a line cut by the end).
static LINES: &[&[u8]] = &[
    b"\x1b[32m   Compiling\x1b[0m crate v0.1.0 (r\xc3\xa9sum\xc3\xa9 \xe2\x9c\x93)\n",
    b"\x1b[1m\x1b[33mwarning\x1b[0m: unused `x`\n",
    b"plain line\n",
    b"\x1b[1;2;3;4;5;6;7;89m sixteen parameter bytes\n",
    b"\x1b[1;2;3;4;5;6;7;890m seventeen\n",
    b"50%\r\x1b[32mdone\x1b[0m\n",
    b"\x1b[38:5:1mcolon\n",
    b"text \x1b[0;",
    b"\xc2\xa9 2026, no colour\n",
    b"\x1b[31mred\tafter a tab\n",
    b"\x1b[38;5;196mcolour 256\x1b[0m\n",
    b"\x1b[m\n",
    b"\n",
    b"\xe4\xb8\xad\xe6\x96\x87 wide \x1b[1mbold\n",
    b"\x1b[1A\x1b[2Kup and erased\n",
    b"10%\r50%\n",
    b"\x1b[31mred \xe2\x80\xae reversed\n",
    b"\x1b7saved\x1b8 restored\n",
    // A cursor saved, and restored lines (and copies) later.
    b"\x1b7\n",
    b"\x1b8back\n",
    // Lines as long as others, which end up where a copy of them would be,
    // and are not copies: other text, a `\r\n`, a row that does not start
    // its line (the cursor moved past the window).
    b"\x1b[33mwarn: disk 91%\n",
    b"\x1b[33mwarn: disk 92%\n",
    b"\x1b[3mwarn: disk 91%\r\n",
    b"\x1b[1;22;33mwarn: disk 91%\n",
    b"x\x1b[999A\x1b[mwarn: disk 91%\n",
    b"\x1b]0;title\x07text\n",
    b"\x1b[1;2;3;4;5;6;7;8;9;10;11;12;13;14;15;16;17;18;19;20m many\n",
    b"\xff not UTF-8\n",
    b"\x1b[Kerased\n",
    b"\x1b[3Cmoved\n",
    b"no line end",
];

proptest::proptest! {
    /// Colours and copies of a line rendered without the parser make the
    /// rows the parser makes: the same text and spans for any lines,
    /// copies and chunks (lines cut by a chunk, or by a region's end, past
    /// 16 KiB; runs of copies that fill the window).
    #[test]
    fn copies_of_a_line_render_as_the_parser_renders_them(
        lines in proptest::collection::vec(
            (0..LINES.len() + 1, 1..300usize, proptest::bool::ANY),
            0..30,
        ),
        // Small chunks cut copies; large ones hold runs that fill the
        // window (more than 64 copies in a region).
        chunk in proptest::prop_oneof![1..400usize, 400..40_000usize],
    ) {
        let mut input = Vec::new();
        for &(i, copies, coloured) in &lines {
            let long;
            let line: &[u8] = match LINES.get(i) {
                Some(l) => l,
                // Longer than a line kept for its copies.
                None => {
                    long = [&b"\x1b[2m"[..], &[b'x'; 300], b"\n"].concat();
                    &long
                }
            };
            for _ in 0..copies {
                if coloured {
                    input.extend_from_slice(b"\x1b[0m");
                }
                input.extend_from_slice(line);
            }
        }
        let fast = render_shortcuts(&input, chunk, true);
        let slow = render_shortcuts(&input, chunk, false);
        proptest::prop_assert_eq!(&fast.out, &slow.out);
        proptest::prop_assert_eq!(&fast.spans, &slow.spans);
    }
}

/// A stream of one coloured line is rendered once by the parser: its
/// copies take the line kept, and still make their own rows and spans.
#[test]
fn a_repeated_coloured_line_is_kept_once_and_each_copy_has_its_row() {
    let line = b"\x1b[32m   Compiling\x1b[0m crate v0.1.0\n";
    let input = line.repeat(1000);
    let mut t = Terminal::new();
    let mut sink = Text::default();
    t.feed(&mut sink, &input);
    assert!(t.last_line.as_ref().is_some_and(|r| r.raw == line));
    t.finish(&mut sink);
    assert_eq!(sink.spans.len(), 1000);
    for (k, (text, span)) in sink.spans.iter().enumerate() {
        assert_eq!(text, "   Compiling crate v0.1.0");
        assert_eq!(span.line, k as u64 + 1);
        assert!(!span.exact);
    }
    assert_eq!(
        sink.spans,
        render_shortcuts(&input, input.len(), false).spans
    );
}
/// Runs of copies long enough to fill the window, after any line and
/// before any line (a cursor saved before them and restored after; a line
/// as long as the copies just above them), make the rows and spans the
/// parser makes, whole or in chunks.
#[test]
fn runs_of_copies_that_fill_the_window_render_as_the_parser_renders_them() {
    for &before in LINES {
        for &copied in LINES {
            for copies in [65, 64 * 3 + 1] {
                for save_between in [false, true] {
                    // The cursor saved before the line before the copies,
                    // or between it and them.
                    let save = b"\x1b7\n";
                    let mut input = Vec::new();
                    input.extend_from_slice(if save_between { b"" } else { save });
                    input.extend_from_slice(before);
                    input.extend_from_slice(if save_between { save } else { b"" });
                    input.extend_from_slice(&copied.repeat(copies));
                    input.extend_from_slice(before);
                    input.extend_from_slice(b"\x1b8back\n");
                    compare_chunks(&input);
                }
            }
        }
    }
}

/// Renders `input` whole and in pieces of 1,000 bytes, with and without
/// the shortcuts past the parser, and checks both make the same.
fn compare_chunks(input: &[u8]) {
    for chunk in [input.len(), 1000] {
        let fast = render_shortcuts(input, chunk, true);
        let slow = render_shortcuts(input, chunk, false);
        assert_eq!(fast.out, slow.out, "{:?}", String::from_utf8_lossy(input));
        assert_eq!(
            fast.spans,
            slow.spans,
            "{:?}",
            String::from_utf8_lossy(input)
        );
        assert_eq!(fast.made, slow.made, "{:?}", String::from_utf8_lossy(input));
    }
}
