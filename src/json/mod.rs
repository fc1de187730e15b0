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

use crate::ring::ByteRing;
pub(crate) use fit::{push_escaped, Hint};
use scan::{NotJson, Scanner};
use sketch::{Borrowed, Builder, Gate, Gated, Keep, Window};

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

/// The JSON side of a stage: the tokenizer and the sketch, whose window
/// is `W` (a ring the stream is copied into, or a whole input in memory).
pub(crate) struct JsonStage<W = ByteRing> {
    scanner: Scanner,
    builder: Builder<W>,
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

/// How much of a document the sketch keeps, for a preview of at most
/// `budget` bytes.
fn keep(budget: usize) -> Keep {
    Keep {
        head_cost: 2 * budget + SKETCH_FLOOR,
        window: 2 * budget + SKETCH_FLOOR,
        str_keep: budget,
        max_key: MAX_KEY.min(budget),
        keep_depth: KEEP_DEPTH,
    }
}

impl JsonStage {
    /// A stage for a preview of at most `budget` bytes of a stream.
    pub(crate) fn new(budget: usize) -> Self {
        JsonStage::with_builder(Builder::new(keep(budget)))
    }
}

impl<'a> JsonStage<Borrowed<'a>> {
    /// A stage for a preview of at most `budget` bytes of `input`, which is
    /// in memory: it is fed `input` from its start, in parts, and reads a
    /// value again where it is instead of from a copy. The same sketch as
    /// [`JsonStage::new`] makes of the same bytes fed in the same parts
    /// (the window moves a part at a time).
    pub(crate) fn whole(budget: usize, input: &'a [u8]) -> Self {
        let keep = keep(budget);
        JsonStage::with_builder(Builder::with_window(
            keep,
            Borrowed::new(input, keep.window),
        ))
    }
}

impl<W: Window> JsonStage<W> {
    fn with_builder(builder: Builder<W>) -> Self {
        JsonStage {
            scanner: Scanner::new(),
            builder,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What a stage makes of `doc`: its sketch (as its debug form) or why
    /// there is none.
    fn sketched<W: Window>(mut stage: JsonStage<W>, parts: &[&[u8]]) -> String {
        for p in parts {
            stage.feed(p);
        }
        match stage.finish() {
            Ok(s) => format!("{:?}", s.root),
            Err(e) => e,
        }
    }

    /// A whole input read where it is gets the sketch its stream gets,
    /// whatever the document holds past the window: values larger than
    /// it, long strings (escaped too) whose head is kept in time, members
    /// whose names only the window held, small records by the thousand,
    /// and an error far in.
    #[test]
    fn a_whole_input_is_sketched_as_its_stream_is() {
        let budget = 1000;
        let window = keep(budget).window;
        let records: String = (0..40_000)
            .map(|i| format!("{{\"id\":{i},\"name\":\"n{i}\",\"tags\":[\"a\",{i}]}}"))
            .collect::<Vec<_>>()
            .join(",");
        let long = "x".repeat(window + 5000);
        let escaped = "line\\n".repeat(window / 3);
        let big_array = (0..window / 3)
            .map(|i| (i % 10).to_string())
            .collect::<Vec<_>>()
            .join(",");
        // Children of 1,500 bytes: fewer of them fill the window than a
        // preview may show, so the window's edge decides which are kept.
        let wide: String = (0..2_000)
            .map(|i| format!("{{\"i\":{i},\"s\":\"{}\"}}", "w".repeat(1500 + i % 7)))
            .collect::<Vec<_>>()
            .join(",");
        let named: String = (0..2_000)
            .map(|i| format!("\"m{i}\":[\"{}\"]", "v".repeat(1500 + i % 5)))
            .collect::<Vec<_>>()
            .join(",");
        let docs: Vec<String> = vec![
            format!("{{\"items\":[{records}],\"n\":1}}"),
            format!("{{\"wide\":[{wide}],\"named\":{{{named}}}}}"),
            format!("[{records},\"{long}\",[{big_array}],{{\"k\":\"{escaped}\"}}]"),
            format!("{{\"a\":[{records}],\"big\":[{big_array}],\"s\":\"{long}\",\"e\":\"{escaped}\",\"z\":{{\"deep\":[[[{big_array}]]]}}}}"),
            format!("[{records},{{\"bad\":tru}}]"),
        ];
        for doc in &docs {
            let doc = doc.as_bytes();
            // The parts `Spiller::apply` feeds, and others: the window
            // moves a part at a time, so each is compared with a stream
            // of the same parts.
            for probe in [0, 1, 64 << 10, doc.len() / 2] {
                let parts = [&doc[..probe], &doc[probe..]];
                let whole = sketched(JsonStage::whole(budget, doc), &parts);
                let json = !doc.ends_with(b"tru}]");
                assert_eq!(whole.starts_with("Child"), json, "{whole:.200}");
                assert_eq!(
                    whole,
                    sketched(JsonStage::new(budget), &parts),
                    "probe {probe} of {} bytes",
                    doc.len()
                );
            }
        }
    }

    /// A small tail-side container read whole at once (the skim) leaves
    /// the sketch a token-by-token reading leaves, or the same error:
    /// records compact and pretty, with escapes, nested, empty, deeper
    /// than the skim reads, larger than its limit, numbers and strings cut
    /// by a part's end, and errors inside a record.
    #[test]
    fn a_skimmed_container_is_sketched_as_its_tokens_are() {
        let budget = 1000;
        let limit = keep(budget).window / 2;
        let record = |i: usize| {
            format!(
                "{{\"id\":{i},\"name\":\"t\\\"{i}\",\"ok\":{},\"ms\":-{i}.5e1,\"tags\":[\"u\",[],{{}},null]}}",
                i.is_multiple_of(3)
            )
        };
        let compact: Vec<String> = (0..3_000).map(record).collect();
        let pretty: Vec<String> = (0..1_500)
            .map(|i| {
                let v: serde_json::Value = serde_json::from_str(&record(i)).unwrap();
                serde_json::to_string_pretty(&v).unwrap()
            })
            .collect();
        let deep = format!("{}1{}", "[".repeat(70), "]".repeat(70));
        let large = format!("[\"{}\"]", "x".repeat(limit));
        let wide = format!("[{}0]", "7,".repeat(limit));
        let mut docs: Vec<String> = vec![
            format!("{{\"items\":[{}],\"n\":1}}", compact.join(",")),
            format!("{{\"items\":[\n  {}\n]}}", pretty.join(",\n  ")),
            format!(
                "[{},{deep},{large},{}]",
                compact[..500].join(","),
                compact[..500].join(", ")
            ),
            format!(
                "[{},{wide},{}]",
                compact[..500].join(","),
                compact[..500].join(",")
            ),
            format!(
                "{{\"a\":{{{}}}}}",
                (0..2_000)
                    .map(|i| format!("\"k{i}\":{}", record(i)))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        ];
        // An error inside a record far in, of each kind the skim gives up on.
        for bad in [
            "{\"id\":01}",
            "{\"id\" 1}",
            "[1,]",
            "{\"s\":\"a\x01\"}",
            "[tru]",
        ] {
            docs.push(format!("[{},{bad},1]", compact[..2_000].join(",")));
        }
        for doc in &docs {
            let doc = doc.as_bytes();
            for part in [doc.len(), 4096, 777, 61] {
                let parts: Vec<&[u8]> = doc.chunks(part).collect();
                let skimmed = sketched(JsonStage::new(budget), &parts);
                let mut stage = JsonStage::new(budget);
                stage.gate.no_skim = true;
                let tokens = sketched(stage, &parts);
                assert_eq!(skimmed, tokens, "parts of {part}");
            }
        }
    }
}
