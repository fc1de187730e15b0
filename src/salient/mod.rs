//! Salient lines: the lines of an omitted middle that look like errors, so
//! that a preview can show them between its head and its tail.

use std::fmt;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use regex_automata::meta;
use regex_automata::Input;
use serde::{Deserialize, Serialize};

pub(crate) mod shape;

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

/// The built-in patterns and their ranks: error lines of common compilers,
/// test runners, package managers, runtimes and loggers, then their
/// warnings, then lines that merely contain a telling word. Case-sensitive
/// unless marked; ASCII word boundaries.
pub const DEFAULT_SALIENT: &[(SalientRank, &str)] = &[
    // Levels: ERROR, FATAL, SEVERE (java.util.logging), CRITICAL (Python),
    // PANIC; bracketed (`[error]`, `[core:error]`), logfmt (`level=error`),
    // JSON (`"level":"error"`, pino's 50 and 60).
    (
        SalientRank::Error,
        r"(?-u:\b)(?:ERROR|FATAL|SEVERE|CRITICAL|PANIC)(?-u:\b)",
    ),
    (
        SalientRank::Error,
        r"\[(?:error|fatal|crit|critical|alert|emerg|panic)\]|:(?:error|crit|alert|emerg)\]",
    ),
    (
        SalientRank::Error,
        r#"(?-u:\b)(?:level|lvl|severity)=["']?(?i:error|err|fatal|critical|crit|panic|emerg|alert)(?-u:\b)"#,
    ),
    (
        SalientRank::Error,
        r#""(?:level|lvl|severity)"[ \t]*:[ \t]*(?:"(?i:error|err|fatal|critical|crit|panic|emerg|alert)"|(?:50|60)(?-u:\b))"#,
    ),
    // logcat's E and F: `MM-DD hh:mm:ss.mmm  PID  TID E Tag: …` and
    // `E/Tag( PID): …`.
    (SalientRank::Error, r"[0-9] [EF] [^ :]+: "),
    (
        SalientRank::Error,
        r"^[EF]/[^ \t(:]+[ \t]*(?:\([ \t]*[0-9]+\))?: ",
    ),
    // Compilers: `error: …`, `error[E0308]: …`, `x.c:3:5: error: …`,
    // `fatal error: …`, `x.ts(3,5): error TS2304: …`, MSVC's `error C2065:`.
    (
        SalientRank::Error,
        r"(?:^|: )(?:fatal )?error(?:\[[A-Za-z]*[0-9]+\])?:|(?-u:\b)error (?:TS|C|CS)[0-9]+:",
    ),
    // Failing tests: pytest's `FAILED …`, go's `--- FAIL:` and `FAIL pkg`,
    // jest's `FAIL file`, unittest's `FAIL: test`, cargo's and unittest's `… FAILED` and
    // `test result: FAILED`, TAP's `not ok`, the runners' crosses.
    (
        SalientRank::Error,
        r"^(?:--- )?FAIL(?:ED)?(?:[: \t]|\r?$)|^not ok [0-9]+|[ \t](?:FAILED|FAIL|ERROR)\r?$|^test result: FAILED|(?:✕|✗) ",
    ),
    // Runtimes: tracebacks, exceptions, panics, crashes.
    (SalientRank::Error, r"^Traceback \(most recent call last\)"),
    (
        SalientRank::Error,
        r"(?:Error|Exception)(?::|[ \t]*\r?$)|^Exception in thread |^Caused by: ",
    ),
    (SalientRank::Error, r"panicked at|(?-u:\b)panic: "),
    (SalientRank::Error, r"Segmentation fault|core dumped"),
    // Tools: git's `fatal:`, npm's `ERR!`, make's `***`, apt's `E:`, the
    // shell and the linker.
    (
        SalientRank::Error,
        r"^fatal: |^npm (?:ERR!|error) |^make(?:\[[0-9]+\])?: \*\*\*|^E: |command not found|undefined reference to",
    ),
    // Warnings: the same places, one rank down.
    (SalientRank::Warning, r"(?-u:\b)(?:WARN|WARNING)(?-u:\b)"),
    (SalientRank::Warning, r"\[(?:warn|warning)\]|:warn\]"),
    (
        SalientRank::Warning,
        r#"(?-u:\b)(?:level|lvl|severity)=["']?(?i:warn|warning)(?-u:\b)"#,
    ),
    (
        SalientRank::Warning,
        r#""(?:level|lvl|severity)"[ \t]*:[ \t]*(?:"(?i:warn|warning)"|40(?-u:\b))"#,
    ),
    (
        SalientRank::Warning,
        r"[0-9] W [^ :]+: |^W/[^ \t(:]+[ \t]*(?:\([ \t]*[0-9]+\))?: ",
    ),
    (
        SalientRank::Warning,
        r"(?:^|: )warning(?:\[[^\]]*\])?:|(?-u:\b)warning (?:TS|C|CS)[0-9]+:|^npm (?:WARN|warn) |Warning: ",
    ),
    // Words: a line that mentions an error without saying it is one.
    (SalientRank::Word, r"(?-u:\b)error(?-u:\b)|Error(?-u:\b)"),
    (SalientRank::Word, r"Exception(?-u:\b)"),
    (
        SalientRank::Word,
        r"(?-u:\b)(?:FAILED|FAIL|FAILURE|Failed)(?-u:\b)",
    ),
    (SalientRank::Word, r"(?-u:\b)(?:fatal|Fatal)(?-u:\b)"),
    (
        SalientRank::Word,
        r"No such file or directory|Permission denied",
    ),
];

/// Literals one of which every line the built-in patterns match holds
/// (`the_gate_passes_every_line_the_built_in_patterns_match` checks it):
/// with the built-in patterns, only the lines they are in are searched,
/// and one vectorized search finds them all. Those of three bytes are for
/// logcat's levels (`… 1234 E tag: `, `E/tag`) and apt's `E: `; a literal
/// that starts with `\n` also holds at the text's start.
const GATE: &[&str] = &[
    "ERROR",
    "FATAL",
    "SEVERE",
    "CRITICAL",
    "PANIC",
    "error",
    "fatal",
    "Fatal",
    "crit",
    "alert",
    "emerg",
    "panic",
    "level",
    "lvl=",
    "lvl\"",
    "severity",
    "FAIL",
    "Failed",
    "not ok",
    "✕ ",
    "✗ ",
    "Traceback",
    "Error",
    "Exception",
    "Caused by: ",
    "Segmentation fault",
    "core dumped",
    "ERR!",
    ": ***",
    "command not found",
    "undefined reference to",
    "WARN",
    "warn",
    "Warning",
    "No such file or directory",
    "Permission denied",
    " E ",
    " F ",
    " W ",
    "\nE/",
    "\nF/",
    "\nW/",
    "\nE: ",
];

/// The default share of the budget salient lines may take, in percent.
pub const DEFAULT_SALIENT_PERCENT: u8 = 20;

/// A salient line is shown cut to at most this many bytes.
pub(crate) const MAX_SALIENT_LINE: usize = 512;

/// One salient pattern and the rank of the lines it matches.
///
/// In a config it is a string (a pattern of rank `error`) or a table with
/// `pattern` and `rank` (`error`, `warning` or `word`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SalientPattern {
    pattern: String,
    rank: SalientRank,
}

impl SalientPattern {
    /// A pattern (Rust regex syntax, matched against each line with `^` and
    /// `$` at line ends) of the given rank.
    pub fn new(pattern: impl Into<String>, rank: SalientRank) -> SalientPattern {
        SalientPattern {
            pattern: pattern.into(),
            rank,
        }
    }

    /// The regular expression, as given.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// The rank of the lines it matches.
    pub fn rank(&self) -> SalientRank {
        self.rank
    }
}

impl From<&str> for SalientPattern {
    /// A pattern of rank [`SalientRank::Error`].
    fn from(p: &str) -> Self {
        SalientPattern::new(p, SalientRank::Error)
    }
}

impl From<String> for SalientPattern {
    /// A pattern of rank [`SalientRank::Error`].
    fn from(p: String) -> Self {
        SalientPattern::new(p, SalientRank::Error)
    }
}

impl From<&String> for SalientPattern {
    /// A pattern of rank [`SalientRank::Error`].
    fn from(p: &String) -> Self {
        SalientPattern::new(p.as_str(), SalientRank::Error)
    }
}

impl From<&SalientPattern> for SalientPattern {
    fn from(p: &SalientPattern) -> Self {
        p.clone()
    }
}

impl Serialize for SalientPattern {
    /// A string when the rank is `error`; else `{pattern, rank}`.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.rank == SalientRank::Error {
            s.serialize_str(&self.pattern)
        } else {
            Ranked {
                pattern: self.pattern.clone(),
                rank: self.rank,
            }
            .serialize(s)
        }
    }
}

/// The table form of a salient pattern.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Ranked {
    pattern: String,
    #[serde(default = "error_rank")]
    rank: SalientRank,
}

fn error_rank() -> SalientRank {
    SalientRank::Error
}

impl<'de> Deserialize<'de> for SalientPattern {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = SalientPattern;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a regular expression, or a table with `pattern` and `rank`")
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<SalientPattern, E> {
                Ok(SalientPattern::from(v))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<SalientPattern, A::Error> {
                let r = Ranked::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(SalientPattern::new(r.pattern, r.rank))
            }
        }
        d.deserialize_any(Visit)
    }
}

/// A set of salient patterns, compiled once.
#[derive(Clone)]
pub struct SalientPatterns {
    patterns: Arc<[SalientPattern]>,
    matcher: Option<Matcher>,
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
            .get_or_init(|| match SalientPatterns::new(built_in()) {
                Ok(mut p) => {
                    p.matcher = p.matcher.map(Matcher::gated);
                    p
                }
                // The built-in patterns are constants covered by tests.
                Err(e) => panic!("built-in salient patterns: {e}"),
            })
            .clone()
    }
}

fn built_in() -> impl Iterator<Item = SalientPattern> {
    DEFAULT_SALIENT
        .iter()
        .map(|&(rank, p)| SalientPattern::new(p, rank))
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

/// Compiles `patterns` into one multi-line search.
fn compile(patterns: &[&str]) -> Result<meta::Regex, String> {
    meta::Regex::builder()
        .syntax(regex_automata::util::syntax::Config::new().multi_line(true))
        .build_many(patterns)
        .map_err(|e| one_line(&e.to_string()))
}

impl SalientPatterns {
    /// Compiles `patterns` (Rust regex syntax, matched against each line
    /// with `^` and `$` at line ends; a bare string ranks as
    /// [`SalientRank::Error`]). No patterns: no salient lines.
    ///
    /// # Errors
    ///
    /// [`SalientError`] naming the first pattern that does not compile.
    pub fn new<I, P>(patterns: I) -> Result<SalientPatterns, SalientError>
    where
        I: IntoIterator<Item = P>,
        P: Into<SalientPattern>,
    {
        let patterns: Vec<SalientPattern> = patterns.into_iter().map(Into::into).collect();
        for p in &patterns {
            regex::Regex::new(&p.pattern).map_err(|e| SalientError {
                pattern: p.pattern.clone(),
                error: one_line(&e.to_string()),
            })?;
        }
        let matcher = if patterns.is_empty() {
            None
        } else {
            Some(Matcher::new(&patterns).map_err(|error| {
                SalientError {
                    pattern: patterns
                        .iter()
                        .map(|p| p.pattern.as_str())
                        .collect::<Vec<_>>()
                        .join(" | "),
                    error,
                }
            })?)
        };
        Ok(SalientPatterns {
            patterns: patterns.into(),
            matcher,
        })
    }

    /// No patterns: salient lines are off.
    pub fn none() -> SalientPatterns {
        SalientPatterns {
            patterns: Arc::from(Vec::new()),
            matcher: None,
        }
    }

    /// The patterns, as given.
    pub fn patterns(&self) -> &[SalientPattern] {
        &self.patterns
    }

    /// Whether there are no patterns.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Whether these are the built-in patterns.
    pub fn is_default(&self) -> bool {
        self.patterns.len() == DEFAULT_SALIENT.len() && self.patterns.iter().cloned().eq(built_in())
    }

    pub(crate) fn matcher(&self) -> Option<Matcher> {
        self.matcher.clone()
    }
}

/// Finds the lines that match, and their ranks.
#[derive(Clone, Debug)]
pub(crate) struct Matcher {
    /// Every pattern in one search; a match's pattern id gives its rank.
    all: meta::Regex,
    ranks: Arc<[SalientRank]>,
    /// The patterns of each rank above [`SalientRank::Word`], to raise a
    /// line whose first match ranks lower than another it holds.
    errors: Option<meta::Regex>,
    warnings: Option<meta::Regex>,
    /// With the built-in patterns: what a matching line holds.
    gate: Option<Arc<Gate>>,
    /// Search states given back by searchers that are done, for the next
    /// ones: making one costs far more than a small output's whole scan.
    spare: Arc<Mutex<Vec<Caches>>>,
}

/// The most search states a matcher keeps for reuse.
const SPARE_CACHES: usize = 8;

/// A search for the lines that may match, far cheaper than the patterns:
/// the literals of [`GATE`] together.
#[derive(Debug)]
struct Gate(aho_corasick::packed::Searcher);

impl Gate {
    /// The first candidate at or after `pos`, a line start: where a
    /// literal starts, or, for one that starts with the `\n` before a line,
    /// where that line starts.
    fn next(&self, text: &[u8], pos: usize) -> Option<usize> {
        if pos == 0
            && [&b"E/"[..], b"F/", b"W/", b"E: "]
                .iter()
                .any(|p| text.starts_with(p))
        {
            return Some(0);
        }
        // From the `\n` before `pos`, which a literal may start with.
        let from = pos.saturating_sub(1);
        let span = aho_corasick::Span::from(from..text.len());
        let m = self.0.find_in(text, span)?;
        Some(m.start() + usize::from(text[m.start()] == b'\n'))
    }
}

/// Where a search of the gate got to: its next candidate, and where it
/// was searched from.
#[derive(Default)]
struct Cursor(Option<(usize, Option<usize>)>);

impl Cursor {
    /// The next candidate at or after `pos`, reusing the last answer while
    /// it still holds.
    fn next(&mut self, pos: usize, search: impl FnOnce() -> Option<usize>) -> Option<usize> {
        match self.0 {
            Some((from, Some(at))) if from <= pos && at >= pos => Some(at),
            Some((from, None)) if from <= pos => None,
            _ => {
                let at = search();
                self.0 = Some((pos, at));
                at
            }
        }
    }
}

impl Matcher {
    fn new(patterns: &[SalientPattern]) -> Result<Matcher, String> {
        // Higher ranks first: of two matches that start together, the
        // higher-ranked one is reported.
        let mut sorted: Vec<&SalientPattern> = patterns.iter().collect();
        sorted.sort_by_key(|p| std::cmp::Reverse(p.rank));
        let all = compile(
            &sorted
                .iter()
                .map(|p| p.pattern.as_str())
                .collect::<Vec<_>>(),
        )?;
        let of = |rank| -> Result<Option<meta::Regex>, String> {
            let set: Vec<&str> = sorted
                .iter()
                .filter(|p| p.rank == rank)
                .map(|p| p.pattern.as_str())
                .collect();
            if set.is_empty() {
                Ok(None)
            } else {
                compile(&set).map(Some)
            }
        };
        Ok(Matcher {
            all,
            ranks: sorted.iter().map(|p| p.rank).collect(),
            errors: of(SalientRank::Error)?,
            warnings: of(SalientRank::Warning)?,
            gate: None,
            spare: Arc::default(),
        })
    }

    /// Adds the built-in patterns' gate (where the machine can search
    /// for its literals together).
    fn gated(mut self) -> Matcher {
        self.gate = aho_corasick::packed::Config::new()
            .builder()
            .extend(GATE)
            .build()
            .map(|s| Arc::new(Gate(s)));
        self
    }

    /// The search state of this matcher's regexes, for one searcher at a
    /// time: searching with it spares each search a trip to the regexes'
    /// shared pool of caches (slow from any thread but the first). One a
    /// searcher gave back is reused; give it back with
    /// [`give_back`](Self::give_back) when done.
    pub(crate) fn caches(&self) -> Caches {
        let reused = self.spare.lock().unwrap_or_else(|e| e.into_inner()).pop();
        reused.unwrap_or_else(|| Caches {
            all: self.all.create_cache(),
            errors: self.errors.as_ref().map(meta::Regex::create_cache),
            warnings: self.warnings.as_ref().map(meta::Regex::create_cache),
        })
    }

    /// How many search states wait for reuse.
    #[cfg(test)]
    pub(crate) fn spare_len(&self) -> usize {
        self.spare.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Keeps `caches` (from [`caches`](Self::caches)) for the next searcher.
    pub(crate) fn give_back(&self, caches: Caches) {
        let mut spare = self.spare.lock().unwrap_or_else(|e| e.into_inner());
        if spare.len() < SPARE_CACHES {
            spare.push(caches);
        }
    }

    /// The first line at or after `pos` (a line start) that matches, and
    /// the pattern of its first match.
    fn find(
        &self,
        text: &[u8],
        mut pos: usize,
        cur: &mut Cursor,
        cache: &mut meta::Cache,
    ) -> Option<(Range<usize>, usize)> {
        let Some(gate) = &self.gate else {
            let m = self
                .all
                .search_with(cache, &Input::new(text).range(pos..))?;
            let start = memchr::memrchr(b'\n', &text[..m.start()]).map_or(0, |i| i + 1);
            let end =
                memchr::memchr(b'\n', &text[m.start()..]).map_or(text.len(), |i| m.start() + i);
            return Some((start..end, m.pattern().as_usize()));
        };
        while pos < text.len() {
            let g = cur.next(pos, || gate.next(text, pos))?;
            let start = memchr::memrchr(b'\n', &text[pos..g]).map_or(pos, |i| pos + i + 1);
            let end = memchr::memchr(b'\n', &text[g..]).map_or(text.len(), |i| g + i);
            // Which pattern matches first needs only the match's end.
            let input = Input::new(text).range(start..end);
            if let Some(m) = self.all.search_half_with(cache, &input) {
                return Some((start..end, m.pattern().as_usize()));
            }
            pos = end + 1;
        }
        None
    }

    /// The rank of a line whose first match ranks `first`: a level or a
    /// compiler's prefix comes first in its line and says what the line
    /// is; a line whose first match is a mere word takes the highest rank
    /// it holds.
    fn raise(&self, line: &[u8], first: SalientRank, caches: &mut Caches) -> SalientRank {
        if first > SalientRank::Word {
            return first;
        }
        let input = Input::new(line).earliest(true);
        let holds = |r: &Option<meta::Regex>, c: &mut Option<meta::Cache>| match (r, c) {
            (Some(r), Some(c)) => r.search_half_with(c, &input).is_some(),
            _ => false,
        };
        if holds(&self.errors, &mut caches.errors) {
            SalientRank::Error
        } else if holds(&self.warnings, &mut caches.warnings) {
            SalientRank::Warning
        } else {
            first
        }
    }

    /// The ranges of the lines of `text` that match (without their `\n`),
    /// with their ranks.
    pub(crate) fn lines<'a>(
        &'a self,
        text: &'a [u8],
        caches: &'a mut Caches,
    ) -> impl Iterator<Item = (Range<usize>, SalientRank)> + 'a {
        let mut pos = 0;
        let mut cur = Cursor::default();
        std::iter::from_fn(move || {
            if pos > text.len() {
                return None;
            }
            let (line, pattern) = self.find(text, pos, &mut cur, &mut caches.all)?;
            pos = line.end + 1;
            let rank = self.raise(&text[line.clone()], self.ranks[pattern], caches);
            Some((line, rank))
        })
    }

    /// The rank of one line, if it matches.
    pub(crate) fn line_rank(&self, line: &[u8], caches: &mut Caches) -> Option<SalientRank> {
        let (_, pattern) = self.find(line, 0, &mut Cursor::default(), &mut caches.all)?;
        Some(self.raise(line, self.ranks[pattern], caches))
    }
}

/// A [`Matcher`]'s search state ([`Matcher::caches`]).
#[derive(Debug)]
pub(crate) struct Caches {
    all: meta::Cache,
    errors: Option<meta::Cache>,
    warnings: Option<meta::Cache>,
}

/// A salient line: its rendered text (cut to [`MAX_SALIENT_LINE`]), its raw
/// line number and raw span, its rank and its shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Candidate {
    pub text: String,
    pub line: u64,
    pub raw: u64,
    pub raw_end: u64,
    pub rank: SalientRank,
    pub shape: u64,
}

impl Candidate {
    /// A line of rendered `text`; its shape is the shape of the whole text.
    pub(crate) fn new(
        text: &str,
        line: u64,
        raw: (u64, u64),
        rank: SalientRank,
        shape: u64,
    ) -> Candidate {
        // A CRLF line's `\r` is its line ending, not its text.
        let text = text.trim_end_matches('\r');
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
            raw: raw.0,
            raw_end: raw.1,
            rank,
            shape,
        }
    }
}

/// The salient lines of one shape in one part of the input, in order:
/// how many, the first and the last (the ones a preview can show), and the
/// line numbers next to them (for the note on the rest). `L` is a shown
/// line: a [`Candidate`], or the raw bytes of one while the middle streams.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Group<L = Candidate> {
    pub rank: SalientRank,
    pub count: u64,
    pub first: L,
    /// The second line's number, when there are two or more.
    pub second: Option<u64>,
    /// The last but one line's number, when there are two or more.
    pub before_last: Option<u64>,
    /// The last line, when there are two or more.
    pub last: Option<L>,
}

impl<L> Group<L> {
    /// The same group with its lines turned into `M`s.
    pub(crate) fn map<M>(&self, mut f: impl FnMut(&L) -> M) -> Group<M> {
        Group {
            rank: self.rank,
            count: self.count,
            first: f(&self.first),
            second: self.second,
            before_last: self.before_last,
            last: self.last.as_ref().map(f),
        }
    }
}

impl Group {
    /// One line.
    pub(crate) fn one(c: Candidate) -> Group {
        Group {
            rank: c.rank,
            count: 1,
            first: c,
            second: None,
            before_last: None,
            last: None,
        }
    }

    pub(crate) fn shape(&self) -> u64 {
        self.first.shape
    }

    /// The group's last line.
    pub(crate) fn last_line(&self) -> &Candidate {
        self.last.as_ref().unwrap_or(&self.first)
    }

    /// Appends `later`, the lines of the same shape that come after these.
    pub(crate) fn then(&mut self, later: Group) {
        self.second = self.second.or(Some(later.first.line));
        self.before_last = if later.count >= 2 {
            later.before_last
        } else {
            Some(self.last_line().line)
        };
        self.rank = self.rank.max(later.rank);
        self.count += later.count;
        self.last = Some(later.last.unwrap_or(later.first));
    }
}

#[cfg(test)]
mod tests {
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
