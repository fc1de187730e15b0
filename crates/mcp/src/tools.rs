//! The tools spillway adds over MCP, and reading stored objects as
//! resources.

use serde_json::{json, Value};
use spillway::{IdPrefix, NoticeTemplates, Selection, Store};
use spillway_registry::tools::{SpillGrep, SpillRead};
use spillway_registry::ToolError;

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
        let braces = |s: &str| s.replace('{', "{{").replace('}', "}}");
        let read = braces(&self.read);
        let mut t = NoticeTemplates::default();
        let stored = format!(
            "Output stored; read it with {read}(id=\"{{short_id}}\", {{read_unit}}=\"{{read_range}}\") or search it with {}(id=\"{{short_id}}\", pattern=…)",
            braces(&self.grep)
        );
        if let Ok(s) = stored.parse() {
            t.stored = s;
        }
        if let Ok(p) = format!("{read}(id=\"{{short_id}}\", pointer=\"{{pointer}}\")").parse() {
            t.pointer = p;
        }
        t
    }

    /// The tool definitions, as `tools/list` gives them.
    pub(crate) fn definitions(&self) -> Vec<Value> {
        vec![
            json!({
                "name": self.read,
                "title": "Read stored output",
                "description": "Reads output that was too long to show in full and was stored: the lines A to B (\"lines\": \"A:B\", 1-based, inclusive), the bytes A to B (\"bytes\": \"A:B\", 0-based, half-open), or the value at a JSON Pointer of a stored JSON document (\"pointer\": \"/items/3\"). The answer fits the budget; when it does not hold everything, its last line gives the exact range that continues.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "The id the notice printed (blake3:… or a prefix of at least 8 hex digits)."},
                        "lines": {"type": "string", "description": "A:B, A: or :B"},
                        "bytes": {"type": "string", "description": "A:B, A: or :B"},
                        "pointer": {"type": "string", "description": "A JSON Pointer, such as /items/3"}
                    },
                    "required": ["id"]
                },
                "annotations": {"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}
            }),
            json!({
                "name": self.grep,
                "title": "Search stored output",
                "description": "Searches output that was stored with a regular expression (Rust regex syntax): matching lines as N:text, context lines as N-text, as grep -n prints them. The answer fits the budget; when matches are left, its last line gives the from_line that continues.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "The id the notice printed."},
                        "pattern": {"type": "string", "description": "A regular expression."},
                        "context": {"type": "integer", "minimum": 0, "description": "Lines of context before and after each match."},
                        "max_count": {"type": "integer", "minimum": 0, "description": "Stop after this many matching lines."},
                        "ignore_case": {"type": "boolean"},
                        "from_line": {"type": "integer", "minimum": 1, "description": "Start at this line (a continuation gives it)."}
                    },
                    "required": ["id", "pattern"]
                },
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

/// `resources/read` of `spillway://<id or prefix>`: the whole object, as
/// text when it is UTF-8, else as a base64 blob.
pub(crate) fn read_resource(store: &Store, uri: &str) -> Result<Value, String> {
    let id_text = uri.strip_prefix(SCHEME).ok_or("not a spillway:// URI")?;
    let id = match id_text.parse() {
        Ok(id) => id,
        Err(_) => {
            let prefix: IdPrefix = id_text
                .parse()
                .map_err(|e: spillway::IdError| e.to_string())?;
            store.resolve(&prefix).map_err(|e| e.to_string())?
        }
    };
    let bytes = store
        .read(&id, &Selection::All)
        .map_err(|e| e.to_string())?;
    let content = match String::from_utf8(bytes) {
        Ok(text) => json!({"uri": uri, "mimeType": "text/plain", "text": text}),
        Err(e) => {
            json!({"uri": uri, "mimeType": "application/octet-stream", "blob": base64(e.as_bytes())})
        }
    };
    Ok(json!({"contents": [content]}))
}

/// The resource template stored objects answer to.
pub(crate) fn resource_template() -> Value {
    json!({
        "uriTemplate": "spillway://{id}",
        "name": "stored output",
        "description": "Output spillway stored because it was too long to show; the id is the one a notice printed.",
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
