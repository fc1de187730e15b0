//! How a `run_code` program fails: the limit it hit, or what it threw
//! (re-exported by `run_code`; here so that a call's error can hold it
//! without the call importing the tool).

use std::fmt;

use spillway::Outcome;

/// Which limit a program ran past.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Limit {
    /// The wall-time limit.
    WallTime,
    /// The memory limit.
    Memory,
    /// The stack limit (recursion too deep).
    Stack,
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Limit::WallTime => "wall-time limit",
            Limit::Memory => "memory limit",
            Limit::Stack => "stack limit",
        })
    }
}

/// Why a program failed: it threw, ran past a limit, was cancelled, or the
/// runtime failed. Error code `CODE_RUN_FAILED`.
///
/// A runtime returns it from [`CodeRuntime::run`]; the `run_code` tool
/// then writes it as the last line of the program's output, after the
/// logs so far, and bounds the whole like any output ([`Self::output`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CodeRunFailed {
    /// What went wrong.
    pub message: String,
    /// The limit the program ran past, if that is why it failed.
    pub limit: Option<Limit>,
    /// The bounded content: the logs so far and this error, as the spill
    /// stage left them. Set by the `run_code` tool.
    pub output: Option<Box<Outcome>>,
}

impl CodeRunFailed {
    /// The error code.
    pub const CODE: &'static str = "CODE_RUN_FAILED";

    /// A failure.
    pub fn new(message: impl Into<String>) -> Self {
        CodeRunFailed {
            message: message.into(),
            limit: None,
            output: None,
        }
    }

    /// A failure for running past `limit`.
    pub fn limit(limit: Limit, message: impl Into<String>) -> Self {
        CodeRunFailed {
            message: message.into(),
            limit: Some(limit),
            output: None,
        }
    }
}

impl fmt::Display for CodeRunFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.output {
            Some(o) => f.write_str(&o.content),
            None => write!(f, "{}: {}", Self::CODE, self.message),
        }
    }
}

impl std::error::Error for CodeRunFailed {}
