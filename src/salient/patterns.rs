//! What a user configures: the built-in patterns, a pattern and its rank,
//! and the compiled set.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{Matcher, SalientRank};

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

/// One salient pattern and the rank of the lines it matches.
///
/// In a config it is a string (a pattern of rank `error`) or a table with
/// `pattern` and `rank` (`error`, `warning` or `word`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SalientPattern {
    pub(super) pattern: String,
    pub(super) rank: SalientRank,
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
            .get_or_init(|| {
                // Constants (`the_built_in_patterns_compile` checks them):
                // compiled when a line first needs them.
                let patterns: Arc<[SalientPattern]> = built_in().collect();
                let matcher = Matcher::lazy(&patterns).gated(&patterns);
                SalientPatterns {
                    patterns,
                    matcher: Some(matcher),
                }
            })
            .clone()
    }
}

pub(super) fn built_in() -> impl Iterator<Item = SalientPattern> {
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
            super::matcher::check(&p.pattern).map_err(|error| SalientError {
                pattern: p.pattern.clone(),
                error,
            })?;
        }
        let matcher = if patterns.is_empty() {
            None
        } else {
            Some(Matcher::checked(&patterns).map_err(|error| {
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
