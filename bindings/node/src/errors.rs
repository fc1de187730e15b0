//! Rust errors as JavaScript errors with stable codes. The reason carries the
//! code, then U+001F, then the Rust message; `lib/errors.js` turns that into
//! an `Error` whose `code` is the code and whose `message` is the message.

use spillway::{PolicyError, StoreError};

/// The separator between a code and the message in a native error's reason.
const SEP: char = '\u{1f}';

/// An error with `code` and `message`.
pub fn coded(code: &str, message: impl std::fmt::Display) -> napi::Error {
    napi::Error::from_reason(format!("{code}{SEP}{message}"))
}

/// The code of a policy error.
pub fn policy_code(e: &PolicyError) -> &'static str {
    match e {
        PolicyError::BudgetTooSmall { .. } => "ERR_SPILLWAY_BUDGET_TOO_SMALL",
        PolicyError::BudgetTooLarge { .. } => "ERR_SPILLWAY_BUDGET_TOO_LARGE",
        PolicyError::LinesTooSmall { .. } => "ERR_SPILLWAY_LINES_TOO_SMALL",
        PolicyError::HeadPercent(_) => "ERR_SPILLWAY_HEAD_PERCENT",
        PolicyError::SpillCeilingZero | PolicyError::SpillCeilingTooLarge { .. } => {
            "ERR_SPILLWAY_MAX_SPILL_BYTES"
        }
        PolicyError::ZstdLevel { .. } | PolicyError::LevelWithoutZstd => "ERR_SPILLWAY_LEVEL",
        PolicyError::Template { .. } => "ERR_SPILLWAY_NOTICE_TEMPLATE",
        _ => "ERR_SPILLWAY_POLICY",
    }
}

/// A policy error, coded.
pub fn policy(e: PolicyError) -> napi::Error {
    coded(policy_code(&e), e)
}

/// A store error: `ERR_SPILLWAY_STORE`, the kind after a second separator.
pub fn store(e: StoreError) -> napi::Error {
    napi::Error::from_reason(format!(
        "ERR_SPILLWAY_STORE{SEP}{}{SEP}{e}",
        e.kind().name()
    ))
}
