//! DeepSeek Harness session logs, read as this crate's events.
//!
//! DeepSeek Harness's JSONL session backend (uncompressed) writes a header
//! line `{"type":"session","version":…,"id":…}`, then one line per event,
//! `{"type":…,"seq":…,"time":…,"data":{…}}`. Four of its event types are
//! the ones this crate writes, with other field names:
//!
//! - `tool/call`: `data.callId`, `data.name`, and `data.arguments`, the
//!   model's arguments as a JSON string (a `run_code` call's `description`
//!   is among them);
//! - `tool/result`: `data.message.content[0]`, a `tool-result` block with
//!   `toolCallId`, `content` and `isError` (or `data.error`);
//! - `tool/code-dispatch-start` and `tool/code-dispatch`: `subCallId`,
//!   `parentCallId`, `name`, `arguments` (a value), and when settled
//!   `content` and `isError`.
//!
//! Every other line (messages, chunk rows, turns, steps) has no card and is
//! skipped. Content blocks other than text (an image is an attachment
//! reference, not bytes) become a text line that names them.

use serde::Deserialize;
use serde_json::Value;

use crate::events::Event;
use crate::Block;

#[derive(Deserialize)]
struct Line {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    data: Value,
}

/// Whether `line` is a DeepSeek Harness session header.
pub(crate) fn is_header(line: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Header {
        #[serde(rename = "type")]
        kind: String,
        id: Value,
    }
    serde_json::from_slice::<Header>(line).is_ok_and(|h| h.kind == "session" && h.id.is_string())
}

/// The event a DeepSeek Harness line holds, if it is one of the four a card
/// shows.
///
/// # Errors
///
/// The line is not JSON, or one of the four lacks a field it needs.
pub(crate) fn event(line: &[u8]) -> Result<Option<Event>, String> {
    let l: Line = serde_json::from_slice(line).map_err(|e| e.to_string())?;
    let d = &l.data;
    let text = |key: &str| -> Result<String, String> {
        d.get(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| format!("a {} without a string `{key}`", l.kind))
    };
    Ok(Some(match l.kind.as_str() {
        "tool/call" => {
            let raw = d.get("arguments").cloned().unwrap_or(Value::Null);
            // The model's arguments as it wrote them: a JSON string, shown
            // as the string when it is not JSON.
            let args = match &raw {
                Value::String(s) => serde_json::from_str(s).unwrap_or(raw),
                _ => raw,
            };
            Event::ToolCall {
                call_id: text("callId")?,
                tool: text("name")?,
                description: args
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                args,
            }
        }
        "tool/result" => {
            let block = d
                .pointer("/message/content/0")
                .ok_or("a tool/result without message.content[0]")?;
            let call_id = block
                .get("toolCallId")
                .and_then(Value::as_str)
                .ok_or("a tool/result block without a string `toolCallId`")?;
            let is_error = block.get("isError").and_then(Value::as_bool) == Some(true)
                || d.get("error").is_some_and(|e| !e.is_null());
            Event::ToolResult {
                call_id: call_id.to_owned(),
                content: blocks(block.get("content")),
                is_error,
                spills: Vec::new(),
            }
        }
        "tool/code-dispatch-start" => Event::CodeDispatchStart {
            sub_call_id: text("subCallId")?,
            parent_call_id: text("parentCallId")?,
            tool: text("name")?,
            args: d.get("arguments").cloned().unwrap_or(Value::Null),
        },
        "tool/code-dispatch" => Event::CodeDispatch {
            sub_call_id: text("subCallId")?,
            parent_call_id: text("parentCallId")?,
            tool: text("name")?,
            args: d.get("arguments").cloned().unwrap_or(Value::Null),
            content: blocks(d.get("content")),
            is_error: d.get("isError").and_then(Value::as_bool) == Some(true),
            spills: Vec::new(),
        },
        _ => return Ok(None),
    }))
}

/// DeepSeek Harness content blocks as this crate's.
fn blocks(content: Option<&Value>) -> Vec<Block> {
    let one = |b: &Value| match (b.get("type").and_then(Value::as_str), b.get("text")) {
        (Some("text"), Some(Value::String(t))) => Block::text(t.clone()),
        (Some("image"), _) => Block::text(format!(
            "[image attachment {}]",
            b.pointer("/attachment/id")
                .and_then(Value::as_str)
                .unwrap_or("(no id)")
        )),
        (Some(kind), _) => Block::text(format!("[{kind} block]")),
        (None, _) => Block::text(b.to_string()),
    };
    match content {
        Some(Value::Array(list)) => list.iter().map(one).collect(),
        Some(Value::String(s)) => vec![Block::text(s.clone())],
        Some(Value::Null) | None => Vec::new(),
        Some(other) => vec![Block::text(other.to_string())],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(v: Value) -> Vec<u8> {
        serde_json::to_vec(&v).unwrap()
    }

    #[test]
    fn the_four_card_events_read_as_this_crates_and_others_are_skipped() {
        assert!(is_header(&line(
            json!({"type": "session", "version": 0, "id": "s1", "delegationDepth": 0})
        )));
        assert!(!is_header(&line(
            json!({"format": "spillway-session", "version": 1})
        )));
        let call = event(&line(
            json!({"type": "tool/call", "seq": 3, "time": 1, "data": {
            "turn": 1, "step": 1, "callId": "c1", "name": "run_code",
            "arguments": "{\"code\":\"return 1\",\"description\":\"one\"}"}}),
        ))
        .unwrap()
        .unwrap();
        assert_eq!(
            call,
            Event::ToolCall {
                call_id: "c1".into(),
                tool: "run_code".into(),
                description: Some("one".into()),
                args: json!({"code": "return 1", "description": "one"}),
            }
        );
        let result = event(&line(json!({"type": "tool/result", "seq": 4, "time": 1, "data": {
            "turn": 1, "step": 1, "message": {"id": "m", "role": "user", "source": {},
            "content": [{"type": "tool-result", "toolCallId": "c1", "isError": true,
                "content": [{"type": "text", "text": "boom"}, {"type": "image", "attachment": {"id": "a1"}}]}]}}})))
        .unwrap()
        .unwrap();
        assert_eq!(
            result,
            Event::ToolResult {
                call_id: "c1".into(),
                content: vec![Block::text("boom"), Block::text("[image attachment a1]")],
                is_error: true,
                spills: Vec::new(),
            }
        );
        let settled = event(&line(json!({"type": "tool/code-dispatch", "seq": 5, "time": 1, "data": {
            "rootCallId": "c1", "parentCallId": "c1", "subCallId": "c1:code:0", "name": "bash",
            "arguments": {"command": "ls"}, "isError": false, "content": [{"type": "text", "text": "a"}]}})))
        .unwrap()
        .unwrap();
        assert!(
            matches!(settled, Event::CodeDispatch { ref sub_call_id, .. } if sub_call_id == "c1:code:0")
        );
        assert_eq!(
            event(&line(
                json!({"type": "turn/start", "seq": 1, "time": 1, "data": {"turn": 1}})
            ))
            .unwrap(),
            None
        );
        assert!(event(&line(json!({"type": "tool/call", "data": {"name": "x"}}))).is_err());
        assert!(event(b"{not json").is_err());
    }
}
