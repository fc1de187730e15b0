//! Salient lines: the lines of an omitted middle that look like errors, so
//! that a preview can show them between its head and its tail.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

/// The built-in patterns: error lines of common compilers, test runners,
/// package managers and runtimes. Case-sensitive, ASCII word boundaries.
pub const DEFAULT_SALIENT: &[&str] = &[
    // error: …, error[E0308]: …, ERROR …
    r"(?-u:\b)(?:error|ERROR)(?-u:\b)",
    // Error: …, ValueError: …, TypeError …
    r"Error(?-u:\b)",
    // Exception in thread …, NullPointerException
    r"Exception(?-u:\b)",
    // pytest FAILED, go test --- FAIL, jest FAIL, FAILURE
    r"(?-u:\b)(?:FAILED|FAIL|FAILURE|Failed)(?-u:\b)",
    r"^Traceback \(most recent call last\)",
    r"panicked at",
    r"(?-u:\b)panic:",
    // git fatal:, FATAL …
    r"(?-u:\b)(?:fatal|FATAL|Fatal)(?-u:\b)",
    r"npm ERR!",
    r"Segmentation fault|core dumped",
    r"undefined reference to|command not found|No such file or directory|Permission denied",
];

/// The default share of the budget salient lines may take, in percent.
pub const DEFAULT_SALIENT_PERCENT: u8 = 20;

/// A salient line is shown cut to at most this many bytes.
pub(crate) const MAX_SALIENT_LINE: usize = 512;

/// A set of salient patterns, compiled once.
#[derive(Clone)]
pub struct SalientPatterns {
    patterns: Arc<[String]>,
    regex: Option<(regex::Regex, regex::bytes::Regex)>,
}

impl PartialEq for SalientPatterns {
    fn eq(&self, other: &Self) -> bool {
        self.patterns == other.patterns
    }
}

impl Eq for SalientPatterns {}

impl fmt::Debug for SalientPatterns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.patterns.iter()).finish()
    }
}

impl Default for SalientPatterns {
    /// The built-in patterns, compiled once a process.
    fn default() -> Self {
        static BUILT_IN: std::sync::OnceLock<SalientPatterns> = std::sync::OnceLock::new();
        BUILT_IN
            .get_or_init(
                || match SalientPatterns::new(DEFAULT_SALIENT.iter().copied()) {
                    Ok(p) => p,
                    // The built-in patterns are constants covered by tests.
                    Err(e) => panic!("built-in salient patterns: {e}"),
                },
            )
            .clone()
    }
}

/// A salient pattern that does not compile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SalientError {
    /// The pattern.
    pub pattern: String,
    /// What the regex engine said.
    pub error: String,
}

impl fmt::Display for SalientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "salient pattern {:?} is not a valid regular expression: {}",
            self.pattern, self.error
        )
    }
}

impl std::error::Error for SalientError {}

/// The regex crate's message (which draws a caret under the pattern) on
/// one line.
pub(crate) fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.chars().all(|c| c == '^'))
        .map(|l| l.trim_end_matches(':'))
        .collect::<Vec<_>>()
        .join(": ")
}

impl SalientPatterns {
    /// Compiles `patterns` (Rust regex syntax, matched against each line
    /// with `^` and `$` at line ends). No patterns: no salient lines.
    ///
    /// # Errors
    ///
    /// [`SalientError`] naming the first pattern that does not compile.
    pub fn new<I, S>(patterns: I) -> Result<SalientPatterns, SalientError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let patterns: Vec<String> = patterns
            .into_iter()
            .map(|p| p.as_ref().to_owned())
            .collect();
        for p in &patterns {
            regex::Regex::new(p).map_err(|e| SalientError {
                pattern: p.clone(),
                error: one_line(&e.to_string()),
            })?;
        }
        let regex = if patterns.is_empty() {
            None
        } else {
            let joined: Vec<String> = patterns.iter().map(|p| format!("(?:{p})")).collect();
            let all = format!("(?m:{})", joined.join("|"));
            let err = |e: regex::Error| SalientError {
                pattern: all.clone(),
                error: one_line(&e.to_string()),
            };
            Some((
                regex::Regex::new(&all).map_err(err)?,
                regex::bytes::Regex::new(&all).map_err(err)?,
            ))
        };
        Ok(SalientPatterns {
            patterns: patterns.into(),
            regex,
        })
    }

    /// No patterns: salient lines are off.
    pub fn none() -> SalientPatterns {
        SalientPatterns {
            patterns: Arc::from(Vec::new()),
            regex: None,
        }
    }

    /// The patterns, as given.
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    /// Whether there are no patterns.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Whether these are the built-in patterns.
    pub fn is_default(&self) -> bool {
        self.patterns.len() == DEFAULT_SALIENT.len()
            && self
                .patterns
                .iter()
                .zip(DEFAULT_SALIENT)
                .all(|(a, b)| a == b)
    }

    pub(crate) fn matcher(&self) -> Option<Matcher> {
        self.regex
            .clone()
            .map(|(regex, bytes)| Matcher { regex, bytes })
    }
}

/// Finds the lines that match.
#[derive(Clone, Debug)]
pub(crate) struct Matcher {
    regex: regex::Regex,
    /// The same patterns over raw bytes (the omitted middle is matched
    /// as it streams, before it is rendered).
    bytes: regex::bytes::Regex,
}

impl Matcher {
    /// The ranges of the lines of `text` that match (without their `\n`).
    pub(crate) fn lines<'a>(&'a self, text: &'a str) -> impl Iterator<Item = Range<usize>> + 'a {
        let mut pos = 0;
        std::iter::from_fn(move || {
            if pos > text.len() {
                return None;
            }
            let m = self.regex.find_at(text, pos)?;
            let b = text.as_bytes();
            let start = memchr::memrchr(b'\n', &b[..m.start()]).map_or(0, |i| i + 1);
            let end = memchr::memchr(b'\n', &b[m.start()..]).map_or(b.len(), |i| m.start() + i);
            pos = end + 1;
            Some(start..end)
        })
    }
}

impl Matcher {
    /// The ranges of the lines of raw `text` that match (without their
    /// `\n`).
    pub(crate) fn raw_lines<'a>(
        &'a self,
        text: &'a [u8],
    ) -> impl Iterator<Item = Range<usize>> + 'a {
        let mut pos = 0;
        std::iter::from_fn(move || {
            if pos > text.len() {
                return None;
            }
            let m = self.bytes.find_at(text, pos)?;
            let start = memchr::memrchr(b'\n', &text[..m.start()]).map_or(0, |i| i + 1);
            let end =
                memchr::memchr(b'\n', &text[m.start()..]).map_or(text.len(), |i| m.start() + i);
            pos = end + 1;
            Some(start..end)
        })
    }

    /// Whether one raw line matches.
    pub(crate) fn raw_is_match(&self, line: &[u8]) -> bool {
        self.bytes.is_match(line)
    }
}

/// A salient line: its rendered text (cut to [`MAX_SALIENT_LINE`]), its raw
/// line number and raw span.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Candidate {
    pub text: String,
    pub line: u64,
    pub raw: u64,
    pub raw_end: u64,
}

impl Candidate {
    pub(crate) fn new(text: &str, line: u64, raw: u64, raw_end: u64) -> Candidate {
        let text = if text.len() > MAX_SALIENT_LINE {
            let mut end = MAX_SALIENT_LINE - '…'.len_utf8();
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            format!("{}…", &text[..end])
        } else {
            text.to_owned()
        };
        Candidate {
            text,
            line,
            raw,
            raw_end,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_patterns_find_the_usual_errors() {
        let m = SalientPatterns::default().matcher().unwrap();
        let hits = [
            "error[E0308]: mismatched types",
            "error: could not compile `demo`",
            "FAILED tests/test_x.py::test_y - assert 1 == 2",
            "--- FAIL: TestThing (0.00s)",
            "Traceback (most recent call last):",
            "thread 'main' panicked at src/main.rs:2:5:",
            "fatal: repository 'x' does not exist",
            "Exception in thread \"main\" java.lang.NullPointerException",
            "ValueError: invalid literal",
            "npm ERR! code E404",
            "2026-01-01 ERROR connection refused",
        ];
        for h in hits {
            assert_eq!(m.lines(h).count(), 1, "{h}");
        }
        let misses = [
            "   Compiling serde v1.0.0",
            "test result: ok. 10 passed; 0 failed",
            "0 errors, 2 warnings",
            "ErrorBoundary rendered",
        ];
        for h in misses {
            assert_eq!(m.lines(h).count(), 0, "{h}");
        }
    }

    #[test]
    fn lines_are_found_once_each_with_their_ranges() {
        let m = SalientPatterns::new(["x"]).unwrap().matcher().unwrap();
        let text = "a\nxx x\nb\nx";
        let got: Vec<_> = m.lines(text).map(|r| &text[r]).collect();
        assert_eq!(got, ["xx x", "x"]);
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
    fn long_lines_are_cut_at_a_character_boundary() {
        let long = "é".repeat(600);
        let c = Candidate::new(&long, 3, 0, 1200);
        assert!(c.text.len() <= MAX_SALIENT_LINE);
        assert!(c.text.ends_with('…'));
    }
}
