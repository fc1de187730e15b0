//! A text's escape sequences removed, its lines kept: what the salient
//! patterns read of coloured output.
//!
//! The byte loop here is the definition. Where the processor has the
//! instructions for it, blocks of 64 bytes are stripped first
//! (`super::vector`): a block's control sequences found by masks, its text
//! packed together in one instruction. A block leaves to the byte loop
//! every escape that is not a control sequence, and one that may go on
//! past the block; both paths give the same bytes
//! (`the_blocks_strip_as_the_byte_loop_does`).

#[cfg(target_arch = "x86_64")]
use super::vector;
use crate::preview::{csi_end, escape_len, MAX_ESCAPE};
use crate::word;

/// `src` without its escape sequences (as the preview's cut rules read
/// them), so that a colour code does not glue itself to a word the
/// patterns look for. Every line end is kept, those inside an escape
/// string (an OSC title or a DCS may hold some) too: the text has the raw
/// bytes' lines, so a line found in it is numbered as the raw line.
pub(crate) fn strip(src: &[u8], out: &mut Vec<u8>) {
    strip_with(src, out, Blocks::detect());
}

/// How a text is stripped before the byte loop takes over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Blocks {
    /// Byte by byte only.
    None,
    /// Blocks of 64 with the processor's vector instructions.
    #[cfg(target_arch = "x86_64")]
    Vector,
}

impl Blocks {
    fn detect() -> Blocks {
        #[cfg(target_arch = "x86_64")]
        if vector::available() {
            return Blocks::Vector;
        }
        Blocks::None
    }
}

fn strip_with(src: &[u8], out: &mut Vec<u8>, blocks: Blocks) {
    // The text is never longer than the raw bytes (an escape string's
    // line ends are fewer than its bytes): it is written into room for
    // all of them, eight bytes a store, and cut to its length at the end.
    // The room is zeroed only where it grows (this buffer lives as long as
    // a stream's scan).
    out.resize(src.len().max(out.len()), 0);
    let n = src.len();
    let (mut i, mut o) = (0, 0);
    loop {
        match blocks {
            Blocks::None => {}
            // Up to an escape it leaves here, or the last bytes.
            #[cfg(target_arch = "x86_64")]
            Blocks::Vector => (i, o) = vector::strip_blocks(src, out, i, o),
        }
        // Escapes come a few bytes apart in coloured output: eight bytes
        // at a time, each word stored whole (the bytes past an escape in
        // it are written over next), find the next one sooner than a
        // vectorized search's setup and copy its text without a call.
        while let (Some(w), Some(to)) = (src.get(i..i + 8), out.get_mut(o..o + 8)) {
            to.copy_from_slice(w);
            match esc_at(w) {
                None => {
                    i += 8;
                    o += 8;
                }
                Some(k) => {
                    i += k;
                    o += k;
                    break;
                }
            }
        }
        while i < n && src[i] != 0x1B {
            out[o] = src[i];
            i += 1;
            o += 1;
        }
        if i == n {
            break;
        }
        let j = i;
        if src.get(j + 1) == Some(&b'[') {
            // A control sequence (a colour: most escapes), read here as
            // `escape_len` reads it, at most `MAX_ESCAPE` bytes. Its bytes
            // are printable: it holds no line end.
            let s = &src[j..n.min(j + MAX_ESCAPE)];
            i = j + csi_end(s).unwrap_or(s.len());
            continue;
        }
        let len = escape_len(&src[j..]).unwrap_or(n - j);
        i = j + len.max(1);
        // Only a string (an OSC title, a DCS) may hold a line end.
        let held = bytecount::count(&src[j..i], b'\n');
        out[o..o + held].fill(b'\n');
        o += held;
    }
    out.truncate(o);
}

/// Where the first ESC of the eight bytes of `w` is, if they hold one.
#[inline]
fn esc_at(w: &[u8]) -> Option<usize> {
    word::first(word::equal(word::le_word(w), 0x1B))
}

/// [`strip`] as first written, one vectorized search an escape: the oracle
/// it is checked against.
#[cfg(test)]
fn strip_by_search(src: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut i = 0;
    while let Some(e) = memchr::memchr(0x1B, &src[i..]) {
        out.extend_from_slice(&src[i..i + e]);
        let j = i + e;
        let len = escape_len(&src[j..]).unwrap_or(src.len() - j);
        i = j + len.max(1);
        let held = bytecount::count(&src[j..i], b'\n');
        out.resize(out.len() + held, b'\n');
    }
    out.extend_from_slice(&src[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A control sequence longer than any escape is read to be.
    static LONG_CSI: [u8; 302] = {
        let mut s = [b';'; 302];
        s[0] = 0x1B;
        s[1] = b'[';
        s
    };

    /// The first ESC of eight bytes is found in any place, whatever the
    /// others are (another ESC after it, or bytes next to it in value).
    #[test]
    fn esc_at_finds_the_first_esc_in_any_place() {
        for at in 0..8 {
            for b in 0..=255u8 {
                for other in 0..8 {
                    for b2 in [0x1Bu8, 0x1A, 0x1C, 0, 0x9B, 0xFF, b'x'] {
                        for fill in [0u8, 0x1A, 0x1C, 0x9B, 0xFF, b'x'] {
                            let mut w = [fill; 8];
                            w[other] = b2;
                            w[at] = b;
                            assert_eq!(esc_at(&w), w.iter().position(|&c| c == 0x1B), "{w:x?}");
                        }
                    }
                }
            }
        }
    }

    /// The ways a text is stripped on this machine: byte by byte, and in
    /// blocks where the processor can.
    fn ways() -> Vec<Blocks> {
        let mut ways = vec![Blocks::None];
        if Blocks::detect() != Blocks::None {
            ways.push(Blocks::detect());
        }
        ways
    }

    /// Pieces of text and escapes of every kind: colours, a control
    /// sequence with intermediate bytes, one ended by a byte that is not
    /// final, one cut by the next escape, cut ones, strings with line ends,
    /// text with and without line ends.
    fn piece() -> impl Strategy<Value = &'static [u8]> {
        prop_oneof![
            Just(&b"\x1b[1m"[..]),
            Just(&b"\x1b[33m"[..]),
            Just(&b"\x1b[0"[..]),
            Just(&b"\x1b]0;title\n\x07"[..]),
            Just(&b"\x1bP1\n2\x1b\\"[..]),
            Just(&b"\x1b(B"[..]),
            Just(&b"\x1b"[..]),
            Just(&b"\x1b["[..]),
            Just(&b"\n"[..]),
            Just(&b"warning: x"[..]),
            Just(&b"\r"[..]),
            Just(&b"\x1b]8;;\x1b\\"[..]),
            Just(&b"\x1b[38;5;9\n"[..]),
            Just(&LONG_CSI[..]),
            Just(&b"a text of 23 bytes here"[..]),
            Just(&b"E"[..]),
            Just(&b"\x1b[1 q"[..]),
            Just(&b"\x1b[?25l"[..]),
            Just(&b"\x1b[2;\x7f"[..]),
            Just(&b"\x1b[\xc3\xa9"[..]),
            Just(&b"\x1b[38;2;255;255;255m"[..]),
            Just(&b"\x1b[1;2;3;4;5"[..]),
            Just(&b"\x1b[\x1b[m"[..]),
            Just(&b"\x1b\x1b[0m"[..]),
            Just(&b"[[["[..]),
        ]
    }

    proptest! {
        /// Text of escapes of every kind, cut anywhere, with line ends
        /// inside strings and between them, strips as the search for each
        /// escape strips it, each way, into a buffer that held anything.
        #[test]
        fn strip_is_strip_by_search(
            parts in proptest::collection::vec(piece(), 0..40),
            left in 0..64usize,
        ) {
            let src = parts.concat();
            let mut want = Vec::new();
            strip_by_search(&src, &mut want);
            for way in ways() {
                // Into a buffer that holds other bytes, more or fewer.
                let mut a = vec![b'#'; left];
                strip_with(&src, &mut a, way);
                prop_assert_eq!(&a, &want, "{:?}", way);
                strip_with(&src, &mut a, way);
                prop_assert_eq!(&a, &want, "{:?}", way);
            }
        }

        /// Long texts (many blocks, escapes at every place of a block and
        /// across two) and bytes of any value strip the same each way.
        #[test]
        fn the_blocks_strip_as_the_byte_loop_does(
            parts in proptest::collection::vec(
                prop_oneof![
                    4 => piece().prop_map(<[u8]>::to_vec),
                    1 => proptest::collection::vec(any::<u8>(), 0..80),
                    1 => proptest::collection::vec(
                        prop_oneof![Just(0x1Bu8), Just(b'['), Just(b'm'), Just(b';'), Just(b'1'), Just(b' ')],
                        0..80,
                    ),
                ],
                0..120,
            ),
        ) {
            let src = parts.concat();
            let mut want = Vec::new();
            strip_with(&src, &mut want, Blocks::None);
            let mut oracle = Vec::new();
            strip_by_search(&src, &mut oracle);
            prop_assert_eq!(&want, &oracle);
            for way in ways() {
                let mut got = Vec::new();
                strip_with(&src, &mut got, way);
                prop_assert_eq!(&got, &want, "{:?}", way);
            }
        }
    }

    /// Coloured lines, each escape at each place of a block: the blocks
    /// give what the byte loop gives, and both give the text alone.
    #[test]
    fn coloured_lines_strip_to_their_text_at_every_offset() {
        for pad in 0..70 {
            let mut src = vec![b'x'; pad];
            let mut text = src.clone();
            for k in 0..40 {
                let word = format!("word{k} ");
                src.extend_from_slice(format!("\x1b[1m\x1b[3{}m{word}\x1b[0m", k % 8).as_bytes());
                text.extend_from_slice(word.as_bytes());
                if k % 7 == 6 {
                    src.push(b'\n');
                    text.push(b'\n');
                }
            }
            for way in ways() {
                let mut got = Vec::new();
                strip_with(&src, &mut got, way);
                assert_eq!(got, text, "{way:?}, {pad} bytes before");
            }
        }
    }
}
