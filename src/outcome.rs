//! [`Outcome`]: what a stage made of one output, grouped for Rust, and
//! written flat for everyone else (`schema/outcome.schema.json`, wire
//! format 1: the JSON of `spillway apply --json` and of both packages).

use serde::ser::{Serialize, SerializeStruct, Serializer};

use crate::store::{StoreError, StoreErrorKind, StoredObject};
use crate::tokens::Tokenizer;

/// What a stage produced: the model-facing text and the facts behind it.
///
/// Serialized with serde, it is the flat object of wire format 1
/// (`schema/outcome.schema.json`), the stable JSON output of
/// `spillway apply --json`: the groups below spread into their fields
/// (`store_error` and `store_error_kind`; `format` and `json_error`;
/// `content_tokens` and `tokenizer`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Outcome {
    /// Whether the content is a preview rather than the input verbatim.
    pub spilled: bool,
    /// The model-facing text.
    pub content: String,
    /// Bytes in the input.
    pub total_bytes: u64,
    /// Lines in the input (a last line without `\n` counts).
    pub total_lines: u64,
    /// `content[..head_bytes]` is a prefix of the input (of its lossy
    /// decoding when the input is not UTF-8; of its rendering when
    /// [`rendered`](Self::rendered)). 0 for a JSON preview.
    pub head_bytes: usize,
    /// The last `tail_bytes` bytes of `content` are a suffix of the input
    /// (as for `head_bytes`). 0 for a JSON preview.
    pub tail_bytes: usize,
    /// Raw input bytes that are in neither the head nor the tail (for a
    /// JSON preview, the raw bytes its markers stand for).
    pub omitted_bytes: u64,
    /// Raw input lines with at least one omitted byte (0 for a JSON
    /// preview, whose markers each say where their part is).
    pub omitted_lines: u64,
    /// The first and last of those lines, 1-based, inclusive.
    pub omitted_range: Option<[u64; 2]>,
    /// Whether the input is not valid UTF-8 (it is stored byte-exact).
    pub invalid_utf8: bool,
    /// Whether the input contains NUL bytes (the content is a description).
    pub binary: bool,
    /// The stored full output, when it was stored.
    pub spill: Option<StoredObject>,
    /// Why the full output could not be stored, when it could not.
    pub store_error: Option<StoreFailure>,
    /// What the content is: text, or a JSON preview.
    pub format: ContentFormat,
    /// Whether the terminal render changed the text
    /// ([`Render::Terminal`](crate::Render::Terminal): escape sequences
    /// removed, overwritten frames dropped, repeats folded, invalid UTF-8
    /// replaced). Then `head_bytes` and `tail_bytes` count rendered text,
    /// while every other count, range and the stored object are of the raw
    /// input.
    pub rendered: bool,
    /// The raw line numbers of the salient lines the preview shows between
    /// its head and its notice.
    pub salient_lines: Vec<u64>,
    /// The content's length in tokens, when the policy has a token budget.
    pub tokens: Option<TokenCount>,
}

/// Why the full output could not be stored.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreFailure {
    /// The store's error, as a line of text.
    pub message: String,
    /// What kind of failure it was, for a harness to branch on.
    pub kind: StoreErrorKind,
}

impl StoreFailure {
    pub(crate) fn of(e: &StoreError) -> StoreFailure {
        StoreFailure {
            message: e.to_string(),
            kind: e.kind(),
        }
    }
}

/// What the content is.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ContentFormat {
    /// Text: the input, or a preview of head, notice and tail.
    Text {
        /// With a JSON format in the policy, why the input got the text
        /// preview instead (it is not one JSON document, or the budget
        /// cannot hold a JSON preview).
        json_error: Option<String>,
    },
    /// A JSON preview: a document of the input's shape with markers where
    /// values were elided.
    Json,
}

impl ContentFormat {
    /// Plain text, with nothing to say about JSON.
    pub const TEXT: ContentFormat = ContentFormat::Text { json_error: None };

    /// Whether the content is a JSON preview.
    pub fn is_json(&self) -> bool {
        matches!(self, ContentFormat::Json)
    }

    /// The format's name on the wire: `text` or `json`.
    pub fn name(&self) -> &'static str {
        match self {
            ContentFormat::Text { .. } => "text",
            ContentFormat::Json => "json",
        }
    }

    /// Why a JSON preview was asked for and not given, if it was.
    pub fn json_error(&self) -> Option<&str> {
        match self {
            ContentFormat::Text { json_error } => json_error.as_deref(),
            ContentFormat::Json => None,
        }
    }
}

/// A count of tokens and the tokenizer that counted them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TokenCount {
    /// How many tokens.
    pub count: u64,
    /// Counted with.
    pub tokenizer: Tokenizer,
}

impl TokenCount {
    pub(crate) fn new(count: u64, tokenizer: Tokenizer) -> TokenCount {
        TokenCount { count, tokenizer }
    }
}

impl Outcome {
    /// Whether the content is the input unchanged: nothing omitted, nothing
    /// rendered differently.
    pub fn is_verbatim(&self) -> bool {
        !self.spilled && !self.rendered
    }

    /// Whether the store was asked to keep the output and could not.
    pub fn store_failed(&self) -> bool {
        self.store_error.is_some()
    }
}

impl Serialize for Outcome {
    /// The flat object of wire format 1, field for field as
    /// `schema/outcome.schema.json` describes it.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut o = s.serialize_struct("Outcome", 20)?;
        o.serialize_field("spilled", &self.spilled)?;
        o.serialize_field("content", &self.content)?;
        o.serialize_field("total_bytes", &self.total_bytes)?;
        o.serialize_field("total_lines", &self.total_lines)?;
        o.serialize_field("head_bytes", &self.head_bytes)?;
        o.serialize_field("tail_bytes", &self.tail_bytes)?;
        o.serialize_field("omitted_bytes", &self.omitted_bytes)?;
        o.serialize_field("omitted_lines", &self.omitted_lines)?;
        o.serialize_field("omitted_range", &self.omitted_range)?;
        o.serialize_field("invalid_utf8", &self.invalid_utf8)?;
        o.serialize_field("binary", &self.binary)?;
        o.serialize_field("spill", &self.spill)?;
        let failure = self.store_error.as_ref();
        o.serialize_field("store_error", &failure.map(|f| &f.message))?;
        o.serialize_field("store_error_kind", &failure.map(|f| f.kind))?;
        o.serialize_field("format", self.format.name())?;
        o.serialize_field("json_error", &self.format.json_error())?;
        o.serialize_field("rendered", &self.rendered)?;
        o.serialize_field("salient_lines", &self.salient_lines)?;
        o.serialize_field("content_tokens", &self.tokens.map(|t| t.count))?;
        o.serialize_field("tokenizer", &self.tokens.map(|t| t.tokenizer))?;
        o.end()
    }
}
