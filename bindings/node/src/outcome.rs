//! The outcome as a JavaScript object: the fields of `spillway apply
//! --json`, in camelCase.

use napi_derive::napi;

/// A stored object (`spill` in `apply --json`).
#[napi(object)]
pub struct JsStoredObject {
    /// `blake3:` and 64 hex digits.
    pub id: String,
    /// Its file.
    pub path: String,
    /// Its size before compression.
    pub bytes: f64,
    /// Its size on disk.
    pub stored_bytes: f64,
    /// `none` or `zstd`.
    pub compression: String,
    /// Whether it holds less than the output (`maxSpillBytes`).
    pub truncated: bool,
    /// Whether this write found it already stored.
    pub dedup: bool,
}

impl From<&spillway::StoredObject> for JsStoredObject {
    fn from(o: &spillway::StoredObject) -> Self {
        JsStoredObject {
            id: o.id.to_string(),
            path: o.path.to_string_lossy().into_owned(),
            bytes: o.bytes as f64,
            stored_bytes: o.stored_bytes as f64,
            compression: o.encoding.name().to_string(),
            truncated: o.truncated,
            dedup: o.dedup,
        }
    }
}

/// What a policy made of an output.
#[napi(object)]
pub struct JsOutcome {
    /// Whether the content is a preview rather than the input verbatim.
    pub spilled: bool,
    /// The model-facing text.
    pub content: String,
    /// Bytes in the input.
    pub total_bytes: f64,
    /// Lines in the input.
    pub total_lines: f64,
    /// UTF-8 bytes of `content` that start the input.
    pub head_bytes: f64,
    /// UTF-8 bytes of `content` that end the input.
    pub tail_bytes: f64,
    /// Input bytes in neither.
    pub omitted_bytes: f64,
    /// Input lines with an omitted byte.
    pub omitted_lines: f64,
    /// The first and last omitted line, 1-based, inclusive.
    pub omitted_range: Option<Vec<f64>>,
    /// Whether the input is not valid UTF-8.
    pub invalid_utf8: bool,
    /// Whether the input holds NUL bytes.
    pub binary: bool,
    /// The stored full output.
    pub spill: Option<JsStoredObject>,
    /// Why it could not be stored.
    pub store_error: Option<String>,
    /// The kind of that failure.
    pub store_error_kind: Option<String>,
    /// `json` when the content is a JSON preview, else `text`.
    pub format: String,
    /// With `format: 'json'` in the policy: why the text preview was used.
    pub json_error: Option<String>,
    /// Whether the terminal render changed the text.
    pub rendered: bool,
    /// Raw line numbers of the salient lines shown.
    pub salient_lines: Vec<f64>,
    /// The content's length in tokens, with a token budget.
    pub content_tokens: Option<f64>,
    /// The tokenizer those tokens were counted with.
    pub tokenizer: Option<String>,
}

impl From<spillway::Outcome> for JsOutcome {
    fn from(o: spillway::Outcome) -> Self {
        JsOutcome {
            spill: o.spill.as_ref().map(JsStoredObject::from),
            spilled: o.spilled,
            total_bytes: o.total_bytes as f64,
            total_lines: o.total_lines as f64,
            head_bytes: o.head_bytes as f64,
            tail_bytes: o.tail_bytes as f64,
            omitted_bytes: o.omitted_bytes as f64,
            omitted_lines: o.omitted_lines as f64,
            omitted_range: o.omitted_range.map(|[a, b]| vec![a as f64, b as f64]),
            invalid_utf8: o.invalid_utf8,
            binary: o.binary,
            store_error_kind: o.store_error.as_ref().map(|f| f.kind.name().to_string()),
            store_error: o.store_error.map(|f| f.message),
            format: o.format.name().to_string(),
            json_error: o.format.json_error().map(str::to_owned),
            rendered: o.rendered,
            salient_lines: o.salient_lines.iter().map(|&n| n as f64).collect(),
            content_tokens: o.tokens.map(|t| t.count as f64),
            tokenizer: o.tokens.map(|t| t.tokenizer.name().to_string()),
            content: o.content,
        }
    }
}

/// Why a finished stage failed (the policy said `fail` and the store failed).
#[napi(object)]
pub struct JsFailure {
    /// `ERR_SPILLWAY_STORE`.
    pub code: String,
    /// The store error's kind.
    pub kind: String,
    /// The Rust message.
    pub message: String,
}

/// A finished stage: its outcome, and the failure that comes with it in
/// `fail` mode (the outcome is the bounded preview all the same).
#[napi(object)]
pub struct StageResult {
    /// The outcome.
    pub outcome: JsOutcome,
    /// The store failure, when the policy says to fail on one.
    pub failure: Option<JsFailure>,
}

impl From<Result<spillway::Outcome, spillway::FinishError>> for StageResult {
    fn from(r: Result<spillway::Outcome, spillway::FinishError>) -> Self {
        match r {
            Ok(o) => StageResult {
                outcome: o.into(),
                failure: None,
            },
            Err(e) => {
                let failure = JsFailure {
                    code: "ERR_SPILLWAY_STORE".into(),
                    kind: e.store_error().kind().name().into(),
                    message: e.to_string(),
                };
                StageResult {
                    outcome: e.into_outcome().into(),
                    failure: Some(failure),
                }
            }
        }
    }
}
