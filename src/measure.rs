//! Byte, line, NUL and UTF-8 accounting over a stream, whatever its chunking.
//!
//! Lines: a line is a run of bytes ending in `\n`, or the last run of a
//! non-empty input that does not end in `\n`. So `""` has 0 lines, `"a"` and
//! `"a\n"` have 1, and `"a\nb"` has 2.

/// Running totals over everything fed so far.
#[derive(Clone, Debug, Default)]
pub(crate) struct Measure {
    bytes: u64,
    newlines: u64,
    last: Option<u8>,
    nul: bool,
    utf8: Utf8State,
}

#[derive(Clone, Debug, Default)]
struct Utf8State {
    invalid: bool,
    /// The start of a multi-byte sequence cut by the end of the last chunk.
    pending: [u8; 4],
    pending_len: u8,
}

/// The length of the UTF-8 sequence a lead byte starts (0 for a byte that
/// cannot start one).
pub(crate) fn utf8_width(lead: u8) -> usize {
    match lead {
        0x00..=0x7F => 1,
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => 0,
    }
}

impl Utf8State {
    fn feed(&mut self, mut chunk: &[u8]) {
        if self.invalid {
            return;
        }
        if self.pending_len > 0 {
            let have = usize::from(self.pending_len);
            let width = utf8_width(self.pending[0]);
            let need = width - have;
            let take = need.min(chunk.len());
            let mut seq = self.pending;
            seq[have..have + take].copy_from_slice(&chunk[..take]);
            let seq = &seq[..have + take];
            match std::str::from_utf8(seq) {
                Ok(_) => {}
                // Still a valid prefix, cut by the end of this chunk too.
                Err(e) if e.error_len().is_none() => {
                    self.pending[have..have + take].copy_from_slice(&chunk[..take]);
                    self.pending_len += take as u8;
                    return;
                }
                Err(_) => {
                    self.invalid = true;
                    return;
                }
            }
            self.pending_len = 0;
            chunk = &chunk[take..];
        }
        match simdutf8::compat::from_utf8(chunk) {
            Ok(_) => {}
            Err(e) if e.error_len().is_none() => {
                let rest = &chunk[e.valid_up_to()..];
                self.pending[..rest.len()].copy_from_slice(rest);
                self.pending_len = rest.len() as u8;
            }
            Err(_) => self.invalid = true,
        }
    }

    fn is_valid(&self) -> bool {
        !self.invalid && self.pending_len == 0
    }
}

impl Measure {
    pub(crate) fn new() -> Self {
        Measure::default()
    }

    /// Accounts for the next chunk of the stream.
    pub(crate) fn feed(&mut self, chunk: &[u8]) {
        let Some(&last) = chunk.last() else { return };
        self.bytes += chunk.len() as u64;
        self.newlines += bytecount::count(chunk, b'\n') as u64;
        self.last = Some(last);
        if !self.nul {
            self.nul = memchr::memchr(0, chunk).is_some();
        }
        self.utf8.feed(chunk);
    }

    /// Bytes fed so far.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// `\n` bytes fed so far.
    pub(crate) fn newlines(&self) -> u64 {
        self.newlines
    }

    /// Lines, as defined in the module docs.
    pub(crate) fn lines(&self) -> u64 {
        self.newlines + u64::from(self.last.is_some_and(|b| b != b'\n'))
    }

    /// Whether a NUL byte was seen (the input is binary).
    pub(crate) fn has_nul(&self) -> bool {
        self.nul
    }

    /// Whether everything fed so far is valid UTF-8 and ends on a character
    /// boundary.
    pub(crate) fn valid_utf8(&self) -> bool {
        self.utf8.is_valid()
    }
}

/// Lines in `bytes`, as defined in the module docs.
pub(crate) fn count_lines(bytes: &[u8]) -> u64 {
    let newlines = bytecount::count(bytes, b'\n') as u64;
    newlines + u64::from(bytes.last().is_some_and(|&b| b != b'\n'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measure_split(input: &[u8], cuts: &[usize]) -> Measure {
        let mut m = Measure::new();
        let mut at = 0;
        for &c in cuts {
            let c = c.clamp(at, input.len());
            m.feed(&input[at..c]);
            at = c;
        }
        m.feed(&input[at..]);
        m
    }

    #[test]
    fn lines_follow_the_definition() {
        for (text, lines) in [
            ("", 0),
            ("a", 1),
            ("a\n", 1),
            ("a\nb", 2),
            ("\n\n", 2),
            ("a\r\nb\r\n", 2),
        ] {
            let mut m = Measure::new();
            m.feed(text.as_bytes());
            assert_eq!(m.lines(), lines, "{text:?}");
            assert_eq!(count_lines(text.as_bytes()), lines, "{text:?}");
        }
    }

    #[test]
    fn utf8_state_matches_std_at_every_split() {
        let samples: [&[u8]; 8] = [
            "héllo wörld 😀 ✓".as_bytes(),
            b"\xF0\x9F\x98",
            b"ok\xC3",
            b"\xE2\x82\xAC\xE2\x82",
            b"\xED\xA0\x80",
            b"\xC0\xAF",
            b"a\xFFb",
            b"\xF4\x90\x80\x80",
        ];
        for s in samples {
            let want = std::str::from_utf8(s).is_ok();
            for i in 0..=s.len() {
                for j in i..=s.len() {
                    let m = measure_split(s, &[i, j]);
                    assert_eq!(m.valid_utf8(), want, "{s:?} split at {i},{j}");
                }
            }
            // One byte at a time.
            let cuts: Vec<usize> = (0..s.len()).collect();
            assert_eq!(measure_split(s, &cuts).valid_utf8(), want, "{s:?} bytewise");
        }
    }

    #[test]
    fn nul_and_counts_survive_any_split() {
        let s = b"line one\nline\0two\nend";
        for i in 0..=s.len() {
            let m = measure_split(s, &[i]);
            assert!(m.has_nul());
            assert_eq!(m.bytes(), s.len() as u64);
            assert_eq!(m.lines(), 3);
            assert_eq!(m.newlines(), 2);
        }
    }
}
