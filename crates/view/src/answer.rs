//! What the API answers: JSON, or an error with its status.

use std::collections::HashMap;

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

/// A JSON answer.
pub(crate) fn reply(value: Value) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

/// An answer that is an error: its status and what to tell.
#[derive(Debug)]
pub(crate) struct Failure(StatusCode, String);

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        (
            self.0,
            [(header::CONTENT_TYPE, "application/json")],
            json!({ "error": self.1 }).to_string(),
        )
            .into_response()
    }
}

/// An error answer.
pub(crate) fn failure(status: StatusCode, message: String) -> Failure {
    Failure(status, message)
}

/// The whole number `key` gives, or `default` when it is absent.
pub(crate) fn number(
    q: &HashMap<String, String>,
    key: &str,
    default: usize,
) -> Result<usize, Failure> {
    match q.get(key) {
        None => Ok(default),
        Some(v) => v.parse().map_err(|_| {
            failure(
                StatusCode::BAD_REQUEST,
                format!("`{key}` is a whole number, not {v:?}"),
            )
        }),
    }
}
