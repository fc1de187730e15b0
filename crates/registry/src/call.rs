//! What a call is and what it gives: the call, its content blocks, its
//! result and how a tool fails.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use spillway::{ContentId, Outcome};

use crate::code_failure::CodeRunFailed;

/// One content block of a tool result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
#[non_exhaustive]
pub enum Block {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// Its MIME type.
        #[serde(rename = "mimeType")]
        mime_type: String,
        /// Its bytes, base64.
        data: String,
    },
}

impl Block {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Block::Text { text: text.into() }
    }

    /// The text, for a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Block::Text { text } => Some(text),
            Block::Image { .. } => None,
        }
    }
}

/// A tool call, as the model made it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCall {
    /// The call's id.
    pub id: String,
    /// The tool's name.
    pub tool: String,
    /// The arguments.
    pub args: Value,
    /// What the call is for (a card's title).
    pub description: Option<String>,
    /// When the call must have answered, whatever its tool's own limits
    /// say: a front end that spent part of a call's time before the call
    /// (listing the tools its program may call) gives the rest here. Not
    /// recorded.
    #[serde(skip)]
    pub deadline: Option<std::time::Instant>,
}

impl ToolCall {
    /// A call of `tool` with `args`.
    pub fn new(id: impl Into<String>, tool: impl Into<String>, args: Value) -> Self {
        ToolCall {
            id: id.into(),
            tool: tool.into(),
            args,
            description: None,
            deadline: None,
        }
    }

    /// With a deadline: the call answers by `at`, sooner than its tool's
    /// own limits when they reach past it.
    pub fn deadline(mut self, at: std::time::Instant) -> Self {
        self.deadline = Some(at);
        self
    }

    /// With a description.
    pub fn describe(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// What a caller gets back: the same content the durable event holds.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ToolResult {
    /// The call's id.
    pub call_id: String,
    /// The final content.
    pub content: Vec<Block>,
    /// Whether it is an error.
    pub is_error: bool,
    /// Facts about the content; never a copy of it.
    pub meta: ResultMeta,
}

/// Facts about a result's content.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ResultMeta {
    /// Objects the content references.
    pub spills: Vec<ContentId>,
    /// Bytes of the content before the spill stage bounded it.
    pub total_bytes: Option<u64>,
}

/// What a tool produced.
#[derive(Debug)]
#[non_exhaustive]
// One per call, moved once: boxing the outcome would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum Rendered {
    /// Content blocks held in memory.
    Blocks(Vec<Block>),
    /// Text that was streamed through a spill stage.
    Streamed(Outcome),
    /// A JSON value: the model gets it as compact JSON text (bounded as
    /// any text), a program gets the value itself.
    Json(Value),
}

/// Why a tool call failed. Becomes error content.
#[derive(Debug)]
#[non_exhaustive]
pub enum ToolError {
    /// A pre-execute policy said no.
    Denied(String),
    /// No tool has this name.
    UnknownTool(String),
    /// The arguments are wrong.
    InvalidArgs(String),
    /// A `run_code` program failed.
    CodeRunFailed(CodeRunFailed),
    /// The tool failed.
    Failed(String),
    /// The tool failed, and its output, streamed through the spill stage,
    /// says how (a command's output and its status line): the result is
    /// that bounded output, marked as an error.
    Output(Box<Outcome>),
    /// What the tool needs is gone (the MCP server behind it died): a
    /// program that called it fails, as a caught error would hide it.
    Unavailable(String),
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolError::Denied(r) => write!(f, "denied: {r}"),
            ToolError::UnknownTool(t) => write!(f, "unknown tool {t:?}"),
            ToolError::InvalidArgs(r) => write!(f, "invalid arguments: {r}"),
            ToolError::CodeRunFailed(e) => e.fmt(f),
            ToolError::Failed(r) | ToolError::Unavailable(r) => f.write_str(r),
            ToolError::Output(o) => f.write_str(&o.content),
        }
    }
}

impl std::error::Error for ToolError {}

pub(crate) fn text_of(blocks: &[Block]) -> Option<String> {
    let mut out = String::new();
    for (i, b) in blocks.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(b.as_text()?);
    }
    Some(out)
}

/// The text of every text block, joined with newlines; `None` when there is
/// no text block.
pub(crate) fn joined_text(blocks: &[Block]) -> Option<String> {
    let texts: Vec<&str> = blocks.iter().filter_map(Block::as_text).collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

/// `blocks` with its text blocks replaced by one block of `preview`, where
/// the first text block was; every other block stays, in order.
pub(crate) fn replace_text(blocks: Vec<Block>, preview: String) -> Vec<Block> {
    let mut preview = Some(preview);
    blocks
        .into_iter()
        .filter_map(|b| match b.as_text() {
            Some(_) => preview.take().map(Block::text),
            None => Some(b),
        })
        .collect()
}
