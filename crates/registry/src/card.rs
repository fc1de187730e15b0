//! Result cards: a projection of the durable log, one card per outer call.
//!
//! A card's content is the durable `tool/result` content and nothing else:
//! no separate result presenter, no metadata that could go stale. Nested
//! dispatches produce no cards. Old logs need no migration: a card reads
//! what the log holds.

use serde::Serialize;
use serde_json::Value;

use super::events::Event;
use super::Block;

/// One card per outer tool call.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Card {
    /// The call's id.
    pub call_id: String,
    /// The call's description, else the tool's name.
    pub title: String,
    /// Always `"execute"`.
    pub kind: &'static str,
    /// The code for `run_code`, else the arguments.
    pub raw_input: Value,
    /// The durable result content; `None` while the call is pending.
    pub content: Option<Vec<Block>>,
    /// Whether the content is an error.
    pub is_error: bool,
}

/// Projects a session's events into cards.
pub fn cards(events: &[Event]) -> Vec<Card> {
    let mut out: Vec<Card> = Vec::new();
    for e in events {
        match e {
            Event::ToolCall {
                call_id,
                tool,
                description,
                args,
            } => {
                let raw_input = match (tool.as_str(), args.get("code")) {
                    ("run_code", Some(code)) => code.clone(),
                    _ => args.clone(),
                };
                out.push(Card {
                    call_id: call_id.clone(),
                    title: description.clone().unwrap_or_else(|| tool.clone()),
                    kind: "execute",
                    raw_input,
                    content: None,
                    is_error: false,
                });
            }
            Event::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => {
                if let Some(card) = out.iter_mut().rev().find(|c| &c.call_id == call_id) {
                    card.content = Some(content.clone());
                    card.is_error = *is_error;
                }
            }
            // Nested dispatches are events, never cards.
            Event::CodeDispatchStart { .. } | Event::CodeDispatch { .. } | Event::Turn { .. } => {}
        }
    }
    out
}

/// What a host sends a UI for a result: the content, once. There is no view
/// payload that could repeat it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct HostFrame {
    /// `"tool/result"`.
    pub event: &'static str,
    /// The call's id.
    pub call_id: String,
    /// The durable content.
    pub content: Vec<Block>,
    /// Whether it is an error.
    pub is_error: bool,
}

impl HostFrame {
    /// The frame for a `tool/result` event.
    pub fn for_event(e: &Event) -> Option<HostFrame> {
        match e {
            Event::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => Some(HostFrame {
                event: "tool/result",
                call_id: call_id.clone(),
                content: content.clone(),
                is_error: *is_error,
            }),
            _ => None,
        }
    }
}
