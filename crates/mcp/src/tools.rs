//! The tools spillway adds over MCP, and reading stored objects as
//! resources.

use serde_json::{json, Value};
use spillway::{ByteRange, IdPrefix, NoticeTemplates, Selection, Store};
use spillway_registry::tools::{SpillGrep, SpillRead};
use spillway_registry::{Tool, ToolError};

/// The names of the two tools that read stored output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolNames {
    /// Reads a line or byte range, or a JSON Pointer, of a stored object.
    pub read: String,
    /// Searches a stored object with a regular expression.
    pub grep: String,
}

impl ToolNames {
    /// `{prefix}spill_read` and `{prefix}spill_grep`.
    pub fn with_prefix(prefix: &str) -> Self {
        ToolNames {
            read: format!("{prefix}spill_read"),
            grep: format!("{prefix}spill_grep"),
        }
    }

    /// The notice templates whose read hints name these tools.
    pub fn templates(&self) -> NoticeTemplates {
        let t = NoticeTemplates::default();
        t.clone().with_read_hint(&self.read_hint()).unwrap_or(t)
    }

    /// The read hint that names these tools.
    pub fn read_hint(&self) -> spillway::ReadHint {
        spillway::ReadHint::Tool {
            read: self.read.clone(),
            grep: Some(self.grep.clone()),
        }
    }

    /// The tool definitions, as `tools/list` gives them.
    pub(crate) fn definitions(&self) -> Vec<Value> {
        vec![
            json!({
                "name": self.read,
                "title": "Read stored output",
                "description": "Reads output that was too long to show in full and was stored: the lines A to B (\"lines\": \"A:B\", 1-based, inclusive), the bytes A to B (\"bytes\": \"A:B\", 0-based, half-open), or the value at a JSON Pointer of a stored JSON document (\"pointer\": \"/items/3\"). The answer fits the budget; when it does not hold everything, its last line gives the exact range that continues.",
                "inputSchema": SpillRead.input_schema(),
                "annotations": {"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}
            }),
            json!({
                "name": self.grep,
                "title": "Search stored output",
                "description": "Searches output that was stored with a regular expression (Rust regex syntax): matching lines as N:text, context lines as N-text, as grep -n prints them. The answer fits the budget; when matches are left, its last line gives the from_line that continues.",
                "inputSchema": SpillGrep.input_schema(),
                "annotations": {"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}
            }),
        ]
    }

    /// Answers a call of one of these tools; `None` for another tool.
    pub(crate) fn call(
        &self,
        store: &Store,
        budget: usize,
        name: &str,
        args: &Value,
    ) -> Option<Value> {
        let answer = if name == self.read {
            SpillRead::read(store, budget, args)
        } else if name == self.grep {
            SpillGrep::search(store, budget, args)
        } else {
            return None;
        };
        Some(match answer {
            Ok(text) => tool_result(text, false),
            Err(e) => tool_result(tool_error(&e), true),
        })
    }
}

fn tool_error(e: &ToolError) -> String {
    e.to_string()
}

/// A `tools/call` result of one text block.
pub(crate) fn tool_result(text: String, is_error: bool) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": is_error})
}

/// The URI scheme of stored objects as resources: `spillway://<id>`.
pub(crate) const SCHEME: &str = "spillway://";

/// `resources/read` of `spillway://<id or prefix>[?bytes=A:B]`: at most
/// `page` bytes of the object from byte A (0 when not given), read as
/// [`Store::page`] pages it: as text up to the first byte that is not
/// UTF-8 (never a character cut), and a page that starts with such bytes
/// as a base64 blob. When the object holds more, a second content item names the URI
/// of the next page (also in `_meta`, as `spillway/next`): the pages put
/// together are the object, no byte skipped or repeated.
pub(crate) fn read_resource(store: &Store, uri: &str, page: usize) -> Result<Value, String> {
    let rest = uri.strip_prefix(SCHEME).ok_or("not a spillway:// URI")?;
    let (id_text, query) = match rest.split_once('?') {
        Some((id, q)) => (id, Some(q)),
        None => (rest, None),
    };
    let range = match query {
        None => ByteRange::from(0),
        Some(q) => {
            let r = q
                .strip_prefix("bytes=")
                .ok_or("the only query a spillway:// URI takes is ?bytes=A:B")?;
            r.parse::<ByteRange>().map_err(|e| e.to_string())?
        }
    };
    let id = match id_text.parse() {
        Ok(id) => id,
        Err(_) => {
            let prefix: IdPrefix = id_text
                .parse()
                .map_err(|e: spillway::IdError| e.to_string())?;
            store.resolve(&prefix).map_err(|e| e.to_string())?
        }
    };
    // Room for the note that names the next page.
    let budget = page.saturating_sub(NOTE_ROOM).max(MIN_PAGE);
    let page = store
        .page(&id, &Selection::Bytes(range), budget)
        .map_err(|e| e.to_string())?;
    // Text pages end at a character boundary; a page of bytes that are
    // not UTF-8 goes as a blob.
    let (content, shown) = match std::str::from_utf8(&page.data) {
        Ok(text) => (
            json!({"uri": uri, "mimeType": "text/plain", "text": text}),
            page.data.len(),
        ),
        Err(e) if e.valid_up_to() > 0 => {
            let n = e.valid_up_to();
            let text = std::str::from_utf8(&page.data[..n]).unwrap_or_default();
            (
                json!({"uri": uri, "mimeType": "text/plain", "text": text}),
                n,
            )
        }
        Err(_) => (
            json!({"uri": uri, "mimeType": "application/octet-stream", "blob": base64(&page.data)}),
            page.data.len(),
        ),
    };
    let next = range.start() + shown as u64;
    if shown == page.data.len() && page.next.is_none() {
        return Ok(json!({"contents": [content]}));
    }
    let to = range.end().map_or(String::new(), |e| e.to_string());
    let next_uri = format!("{SCHEME}{id_text}?bytes={next}:{to}");
    let note = format!(
        "[spillway: bytes {}-{next} of {} shown; the next page is {next_uri}]",
        range.start(),
        page.object_bytes
    );
    Ok(json!({
        "contents": [content, {"uri": next_uri, "mimeType": "text/plain", "text": note}],
        "_meta": {"spillway/next": next_uri}
    }))
}

/// The smallest page `resources/read` gives, whatever the budget.
const MIN_PAGE: usize = 64;

/// What a page leaves of the budget for the note naming the next one.
const NOTE_ROOM: usize = 256;

/// The resource template stored objects answer to.
pub(crate) fn resource_template() -> Value {
    json!({
        "uriTemplate": "spillway://{id}",
        "name": "stored output",
        "description": "Output spillway stored because it was too long to show; the id is the one a notice printed. A read gives one page of the object; spillway://{id}?bytes=A:B reads from byte A, and a page that does not end the object names the next one.",
        "mimeType": "text/plain"
    })
}

fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= c.len() {
                out.push(char::from(A[(n >> shift & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::base64;

    #[test]
    fn base64_matches_the_rfc_examples() {
        for (raw, want) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(raw.as_bytes()), want);
        }
    }
}
