//! JSON-aware previews: an over-budget JSON document becomes a smaller
//! document of the same shape, with markers that say what was elided and
//! the JSON Pointer that reads it back.
//!
//! The stage feeds the document to a push tokenizer ([`scan`]) as it
//! streams; a [`sketch`] keeps what a preview can use, in memory bounded by
//! the budget; at the end [`fit`] writes the preview within the budget. Input
//! that is not one JSON document falls back to the text preview.

use serde::{Deserialize, Serialize};

mod fit;
pub(crate) mod pointer;
pub(crate) mod scan;
pub(crate) mod sketch;

pub use pointer::{JsonPointer, PointerError};

pub(crate) use fit::{push_escaped, Hint};
use scan::{NotJson, Scanner};
use sketch::{Builder, Gate, Gated, Keep};

/// How the stage reads its input when building a preview.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Format {
    /// Lines of text: a head, a notice and a tail.
    #[default]
    Text,
    /// A JSON document: a preview that is itself JSON. Input that is not one
    /// JSON document gets the text preview, and the outcome says why
    /// (`json_error` in [`ContentFormat::Text`](crate::ContentFormat::Text)).
    Json,
    /// JSON when the whole input is one JSON document, else text; nothing
    /// is reported when it is not.
    Auto,
}

impl Format {
    /// The name used in configs and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Auto => "auto",
        }
    }
}

impl std::str::FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "text" => Ok(Format::Text),
            "json" => Ok(Format::Json),
            "auto" => Ok(Format::Auto),
            other => Err(format!(
                "unknown format {other:?} (expected text, json or auto)"
            )),
        }
    }
}

/// Containers nested deeper than this keep only their kind and size.
pub(crate) const KEEP_DEPTH: usize = 48;

/// Each side of the sketch may keep this much beyond twice the budget, so
/// that small values of a document that fits once compacted are all kept
/// (about 10,000 numbers a side).
pub(crate) const SKETCH_FLOOR: usize = 512 << 10;

/// Keys longer than this (raw bytes) send the document to the text preview.
pub(crate) const MAX_KEY: usize = 4096;

/// The JSON side of a stage: the tokenizer and the sketch.
pub(crate) struct JsonStage {
    scanner: Scanner,
    builder: Builder,
    gate: Gate,
}

/// A fitted JSON preview.
pub(crate) struct JsonPreview {
    pub content: String,
    pub elided_bytes: u64,
}

impl crate::offload::Feed for JsonStage {
    fn feed(&mut self, data: &[u8]) {
        JsonStage::feed(self, data);
    }
}

impl JsonStage {
    /// A stage for a preview of at most `budget` bytes.
    pub(crate) fn new(budget: usize) -> Self {
        JsonStage {
            scanner: Scanner::new(),
            builder: Builder::new(Keep {
                head_cost: 2 * budget + SKETCH_FLOOR,
                window: 2 * budget + SKETCH_FLOOR,
                str_keep: budget,
                max_key: MAX_KEY.min(budget),
                keep_depth: KEEP_DEPTH,
            }),
            gate: Gate::default(),
        }
    }

    /// Whether the input is still a JSON document so far.
    pub(crate) fn alive(&self) -> bool {
        self.scanner.error().is_none() && !self.builder.key_too_long
    }

    pub(crate) fn feed(&mut self, chunk: &[u8]) {
        // In pieces much smaller than the window: a tail-side string's
        // start is still in the window when it turns long.
        for piece in chunk.chunks(64 << 10) {
            if !self.alive() {
                return;
            }
            self.builder.window.push(piece);
            let mut gated = Gated {
                gate: &mut self.gate,
                builder: &mut self.builder,
            };
            self.scanner.feed(piece, &mut gated);
        }
    }

    /// Ends the input and fits the preview, or says why there is none.
    /// Ends the document: its sketch, or why there is no JSON preview.
    pub(crate) fn finish(mut self) -> Result<JsonSketch, String> {
        if self.builder.key_too_long {
            return Err(format!("a member name is longer than {MAX_KEY} bytes"));
        }
        let mut gated = Gated {
            gate: &mut self.gate,
            builder: &mut self.builder,
        };
        if let Err(NotJson { at }) = self.scanner.finish(&mut gated) {
            return Err(format!("not one JSON document (at byte {at})"));
        }
        match self.builder.into_root() {
            Some(root) => Ok(JsonSketch { root }),
            None => Err("not one JSON document".into()),
        }
    }
}

/// What a JSON preview is fitted from.
pub(crate) struct JsonSketch {
    root: sketch::Child,
}

impl JsonSketch {
    /// The preview within `budget` bytes.
    pub(crate) fn fit(
        &self,
        budget: usize,
        head_percent: u8,
        hint: &dyn Hint,
    ) -> Result<JsonPreview, String> {
        let mut fitter = fit::Fitter::new(hint, head_percent);
        let mut content = String::new();
        if !fitter.root(&self.root, budget, &mut content) {
            return Err("the budget is too small for a JSON preview".into());
        }
        debug_assert!(content.len() <= budget, "{} > {budget}", content.len());
        Ok(JsonPreview {
            content,
            elided_bytes: fitter.elided.bytes,
        })
    }
}

/// Finds the raw byte range of the value at `pointer` in a document fed in
/// chunks.
pub(crate) struct PointerSearch<'a> {
    scanner: Scanner,
    find: pointer::Find<'a>,
}

/// Why a pointer search found nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SearchError {
    /// The document is not JSON.
    NotJson(u64),
    /// The pointer names nothing in it; this many tokens matched.
    Missing(usize),
}

impl<'a> PointerSearch<'a> {
    pub(crate) fn new(pointer: &'a JsonPointer) -> Self {
        PointerSearch {
            scanner: Scanner::new(),
            find: pointer::Find::new(pointer),
        }
    }

    /// Feeds a chunk; true once the value was found (no more input needed).
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> bool {
        if !self.find.done() {
            self.scanner.feed(chunk, &mut self.find);
        }
        self.find.done() || self.scanner.error().is_some()
    }

    pub(crate) fn finish(mut self) -> Result<(u64, u64), SearchError> {
        if let Some(range) = self.find.found {
            return Ok(range);
        }
        if let Err(e) = self.scanner.finish(&mut self.find) {
            return Err(SearchError::NotJson(e.at));
        }
        match self.find.found {
            Some(range) => Ok(range),
            None => Err(SearchError::Missing(self.find.deepest)),
        }
    }
}
