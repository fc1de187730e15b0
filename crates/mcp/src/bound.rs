//! Bounding a `tools/call` result: its text blocks and its structured
//! content together within the policy's budget.

use serde_json::{json, Value};
use spillway::{Format, Outcome, PolicyError, Spiller, StoredObject};
use spillway_registry::turn::fair_shares;

use crate::tools::ToolNames;

/// `spiller`'s policy with another budget and format.
fn narrowed(spiller: &Spiller, budget: usize, format: Format) -> Result<Spiller, PolicyError> {
    spiller.with_budget(budget)?.with_format(format)
}

fn apply(spiller: &Spiller, budget: usize, format: Format, text: &[u8]) -> Option<Outcome> {
    let sp = narrowed(spiller, budget, format).ok()?;
    Some(match sp.apply(text) {
        Ok(o) => o,
        Err(e) => e.into_outcome(),
    })
}

/// Where a text that reaches the model sits in a result's `content`.
#[derive(Clone, Copy, Debug)]
enum Slot {
    /// `{"type": "text", "text": …}`
    Text(usize),
    /// An embedded resource, `{"type": "resource", "resource": {"text": …}}`.
    Resource(usize),
}

impl Slot {
    fn text<'a>(&self, blocks: &'a [Value]) -> &'a str {
        let v = match *self {
            Slot::Text(i) => blocks.get(i).and_then(|b| b.get("text")),
            Slot::Resource(i) => blocks
                .get(i)
                .and_then(|b| b.get("resource"))
                .and_then(|r| r.get("text")),
        };
        v.and_then(Value::as_str).unwrap_or_default()
    }

    fn set(&self, blocks: &mut [Value], text: String) {
        match *self {
            Slot::Text(i) => blocks[i]["text"] = Value::String(text),
            Slot::Resource(i) => blocks[i]["resource"]["text"] = Value::String(text),
        }
    }
}

/// The texts of `blocks` that reach the model.
fn slots(blocks: &[Value]) -> Vec<Slot> {
    let mut out = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        match b.get("type").and_then(Value::as_str) {
            Some("text") if b.get("text").is_some_and(Value::is_string) => out.push(Slot::Text(i)),
            Some("resource")
                if b.get("resource")
                    .and_then(|r| r.get("text"))
                    .is_some_and(Value::is_string) =>
            {
                out.push(Slot::Resource(i))
            }
            _ => {}
        }
    }
    out
}

/// Puts every text of `blocks` into one text block, where the first was:
/// an embedded resource's text comes after a line that names its URI, and
/// its block goes. Other blocks (images, audio, links) stay in place.
fn merge(blocks: &mut Vec<Value>, slots: &[Slot]) {
    let mut merged = String::new();
    for (n, slot) in slots.iter().enumerate() {
        if n > 0 && !merged.ends_with('\n') {
            merged.push('\n');
        }
        if let Slot::Resource(i) = *slot {
            let uri = blocks[i]["resource"]["uri"].as_str().unwrap_or_default();
            merged.push_str(&format!("[resource {uri}]\n"));
        }
        merged.push_str(slot.text(blocks));
    }
    let first = match slots[0] {
        Slot::Text(i) | Slot::Resource(i) => i,
    };
    let gone: std::collections::HashSet<usize> = slots
        .iter()
        .map(|s| match *s {
            Slot::Text(i) | Slot::Resource(i) => i,
        })
        .filter(|&i| i != first)
        .collect();
    blocks[first] = json!({"type": "text", "text": merged});
    let mut i = 0;
    blocks.retain(|_| {
        i += 1;
        !gone.contains(&(i - 1))
    });
}

/// What the texts take once bounded with `shares`: those within their
/// share whole, the others at least a notice.
fn planned(items: &[usize], shares: &[usize], least: usize) -> usize {
    items
        .iter()
        .zip(shares)
        .map(|(&n, &s)| if n <= s { n } else { s.max(least) })
        .sum()
}

/// Bounds a `tools/call` result in place, with `spiller`'s policy (whose
/// templates should name the spill tools): everything of it that reaches
/// the model (its text blocks, the text of its embedded resources, its
/// structured content) stays within the budget together. They share the
/// budget max-min fairly (one that needs less than an even share keeps all
/// of it); each that exceeds its share is stored whole and replaced by its
/// preview (a JSON document by a JSON preview). When there are too many
/// texts for each to hold a notice, they are first put together into one
/// text block, which is bounded as one. Other blocks and `isError` are left
/// as they are.
///
/// Structured content past its share becomes a JSON preview of the same
/// shape when the tool declares no `outputSchema` (`has_schema` false).
/// When it declares one, a preview (whose markers are strings) could break
/// the schema, so the structured content is removed and a text block says
/// where it is stored and how to read it. Returns whether anything changed.
pub fn bound_result(
    spiller: &Spiller,
    names: &ToolNames,
    result: &mut Value,
    has_schema: bool,
) -> bool {
    let budget = spiller.policy().max_inline_bytes();
    let least = spiller.min_budget();
    let empty = Vec::new();
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let mut texts = slots(blocks);
    let mut items: Vec<usize> = texts.iter().map(|s| s.text(blocks).len()).collect();
    let structured = result
        .get("structuredContent")
        .filter(|v| !v.is_null())
        .map(Value::to_string);
    if let Some(s) = &structured {
        items.push(s.len());
    }
    if items.iter().sum::<usize>() <= budget {
        return false;
    }
    let mut shares = fair_shares(&items, budget);
    if texts.len() > 1 && planned(&items, &shares, least) > budget {
        if let Some(blocks) = result.get_mut("content").and_then(Value::as_array_mut) {
            merge(blocks, &texts);
            texts = slots(blocks);
            items = texts.iter().map(|s| s.text(blocks).len()).collect();
            if let Some(s) = &structured {
                items.push(s.len());
            }
            shares = fair_shares(&items, budget);
        }
    }
    let mut changed = false;
    for (k, slot) in texts.iter().enumerate() {
        if items[k] <= shares[k] {
            continue;
        }
        let Some(blocks) = result.get_mut("content").and_then(Value::as_array_mut) else {
            continue;
        };
        let text = slot.text(blocks).to_owned();
        if let Some(o) = apply(spiller, shares[k].max(least), Format::Auto, text.as_bytes()) {
            slot.set(blocks, o.content);
            changed = true;
        }
    }
    if let Some(s) = structured {
        let k = items.len() - 1;
        if items[k] > shares[k] {
            let share = shares[k].max(least);
            let preview = if has_schema {
                typed_preview(spiller, names, &result["structuredContent"], &s, share)
            } else {
                json_preview(spiller, share, &s)
            };
            match preview.value {
                Some(v) => result["structuredContent"] = v,
                None => {
                    if let Some(obj) = result.as_object_mut() {
                        obj.remove("structuredContent");
                    }
                    let note = match (&preview.spill, &preview.store_error) {
                        (Some(spill), _) => format!(
                            "[spillway: the structured result ({} bytes) is past the budget and left out{}; it is stored: read it with {}(id=\"{}\", pointer=\"\")]",
                            s.len(),
                            if has_schema { ", as a preview might not match the tool's output schema" } else { "" },
                            names.read,
                            &spill.id.to_string()[..spillway::SHORT_ID_LEN]
                        ),
                        (None, error) => format!(
                            "[spillway: the structured result ({} bytes) is past the budget and left out; it could not be stored: {}]",
                            s.len(),
                            error.as_deref().unwrap_or_default()
                        ),
                    };
                    match result.get_mut("content").and_then(Value::as_array_mut) {
                        Some(blocks) => blocks.push(json!({"type": "text", "text": note})),
                        None => result["content"] = json!([{"type": "text", "text": note}]),
                    }
                }
            }
            changed = true;
        }
    }
    changed
}

/// Structured content cut down: the preview when there is one, and where
/// the whole went.
struct Structured {
    value: Option<Value>,
    spill: Option<StoredObject>,
    store_error: Option<String>,
}

/// The JSON preview of structured content (no output schema).
fn json_preview(spiller: &Spiller, budget: usize, text: &str) -> Structured {
    match apply(spiller, budget, Format::Json, text.as_bytes()) {
        Some(o) => Structured {
            value: o
                .format
                .is_json()
                .then(|| serde_json::from_str(&o.content).ok())
                .flatten(),
            spill: o.spill,
            store_error: o.store_error.map(|f| f.message),
        },
        None => Structured {
            value: None,
            spill: None,
            store_error: None,
        },
    }
}

/// A preview of structured content that keeps every value's type, for a
/// tool with an output schema: long strings keep a head and a tail with a
/// marker inside (still strings), long arrays keep their first and last
/// elements (still arrays, with no marker element among them), every key
/// stays. The whole is stored first; the markers name it. Valid for the
/// schema unless the schema constrains string patterns or array lengths.
fn typed_preview(
    spiller: &Spiller,
    names: &ToolNames,
    value: &Value,
    text: &str,
    budget: usize,
) -> Structured {
    let stored = match spiller
        .store()
        .put(text.as_bytes(), spiller.policy().write_options())
    {
        Ok(s) => s,
        Err(e) => {
            return Structured {
                value: None,
                spill: None,
                store_error: Some(e.to_string()),
            }
        }
    };
    let short = stored.id.to_string()[..spillway::SHORT_ID_LEN].to_owned();
    let mut v = value.clone();
    let mut fitted = None;
    for _ in 0..64 {
        let size = v.to_string().len();
        if size <= budget {
            fitted = Some(v);
            break;
        }
        let over = size - budget;
        if !shrink_largest(&mut v, over, &|p: &str, n: usize| {
            format!(
                "…[spillway: {n} bytes of this string omitted; read it with {}(id=\"{short}\", pointer=\"{p}\")]…",
                names.read
            )
        }) {
            break;
        }
    }
    Structured {
        value: fitted,
        spill: Some(stored),
        store_error: None,
    }
}

/// Shrinks the largest string or array below `v` by about `over` bytes
/// (at least half of it); false when nothing is left to shrink.
fn shrink_largest(v: &mut Value, over: usize, marker: &dyn Fn(&str, usize) -> String) -> bool {
    // Find the largest reducible item by its serialized size.
    fn walk(v: &Value, path: &mut String, best: &mut Option<(usize, String)>) {
        match v {
            // Shorter strings would not get shorter with a marker in them.
            Value::String(s) if s.len() > 512 && best.as_ref().is_none_or(|b| s.len() > b.0) => {
                *best = Some((s.len(), path.clone()));
            }
            Value::Array(a) => {
                if a.len() > 2 {
                    let size = v.to_string().len();
                    if best.as_ref().is_none_or(|b| size > b.0) {
                        *best = Some((size, path.clone()));
                    }
                }
                for (i, x) in a.iter().enumerate() {
                    let len = path.len();
                    path.push('/');
                    path.push_str(&i.to_string());
                    walk(x, path, best);
                    path.truncate(len);
                }
            }
            Value::Object(m) => {
                for (k, x) in m {
                    let len = path.len();
                    path.push('/');
                    path.push_str(&k.replace('~', "~0").replace('/', "~1"));
                    walk(x, path, best);
                    path.truncate(len);
                }
            }
            _ => {}
        }
    }
    let mut best = None;
    walk(v, &mut String::new(), &mut best);
    let Some((_, path)) = best else {
        return false;
    };
    let Some(target) = v.pointer_mut(&path) else {
        return false;
    };
    match target {
        Value::String(s) => {
            let len = s.len();
            let m = marker(&path, 0).len() + 16;
            // Cut to size when one cut can do it, else by half, so that the
            // largest values shrink in turn.
            let keep = len.saturating_sub(over + m).max(len / 2);
            let mut head = (keep * 3 / 10).min(len);
            while !s.is_char_boundary(head) {
                head -= 1;
            }
            let mut tail = len - (keep - keep * 3 / 10).min(len - head);
            while !s.is_char_boundary(tail) {
                tail += 1;
            }
            let omitted = tail - head;
            *s = format!("{}{}{}", &s[..head], marker(&path, omitted), &s[tail..]);
            true
        }
        Value::Array(a) => {
            let keep = (a.len() / 2).max(2);
            let front = keep.div_ceil(2);
            let back = keep - front;
            let n = a.len();
            a.drain(front..n - back);
            true
        }
        _ => false,
    }
}

/// Bounds a JSON-RPC error in place: its `message` and its `data` reach the
/// model too, so together they stay within the budget. Past it, both are
/// stored whole (as one JSON document) and the message becomes its preview
/// with a notice; `data` becomes a JSON preview, or goes (the notice names
/// where it is). Returns whether anything changed.
pub(crate) fn bound_error(spiller: &Spiller, names: &ToolNames, error: &mut Value) -> bool {
    let budget = spiller.policy().max_inline_bytes();
    let least = spiller.min_budget();
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let data = error
        .get("data")
        .filter(|d| !d.is_null())
        .map(Value::to_string);
    let items: Vec<usize> = std::iter::once(message.len())
        .chain(data.as_ref().map(String::len))
        .collect();
    if items.iter().sum::<usize>() <= budget {
        return false;
    }
    let shares = fair_shares(&items, budget);
    let mut changed = false;
    if message.len() > shares[0] {
        if let Some(o) = apply(
            spiller,
            shares[0].max(least),
            Format::Text,
            message.as_bytes(),
        ) {
            error["message"] = Value::String(o.content);
            changed = true;
        }
    }
    if let Some(d) = data {
        if d.len() > shares[1] {
            let preview = json_preview(spiller, shares[1], &d);
            let shown = error["message"].as_str().map_or(0, str::len);
            match preview.value {
                Some(v) if shown + v.to_string().len() <= budget => error["data"] = v,
                _ => {
                    if let Some(obj) = error.as_object_mut() {
                        obj.remove("data");
                    }
                    let note = match preview.spill {
                        Some(spill) => format!(
                            " [spillway: the error's data ({} bytes) is left out; read it with {}(id=\"{}\", pointer=\"\")]",
                            d.len(),
                            names.read,
                            &spill.id.to_string()[..spillway::SHORT_ID_LEN]
                        ),
                        None => format!(" [spillway: the error's data ({} bytes) is left out]", d.len()),
                    };
                    let m = error["message"].as_str().unwrap_or_default().to_owned();
                    error["message"] = Value::String(m + &note);
                }
            }
            changed = true;
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spiller(dir: &std::path::Path, budget: u64) -> (Spiller, ToolNames) {
        let names = ToolNames::with_prefix("");
        let policy = spillway::Policy::builder()
            .max_inline_bytes(budget)
            .templates(names.templates())
            .build()
            .unwrap();
        let store = spillway::Store::open(dir).unwrap();
        (Spiller::new(policy, store).unwrap(), names)
    }

    #[test]
    fn an_error_message_and_data_stay_within_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        let (sp, names) = spiller(dir.path(), 4096);
        let message: String = (0..5000).map(|i| format!("frame {i}\n")).collect();
        let data = json!({"trace": (0..5000).map(|i| format!("at f{i}")).collect::<Vec<_>>()});
        let mut e =
            json!({"code": -32603, "message": message.clone() + "the real cause", "data": data});
        assert!(bound_error(&sp, &names, &mut e));
        let m = e["message"].as_str().unwrap();
        let d = e.get("data").map_or(0, |d| d.to_string().len());
        assert!(m.len() + d <= 4096, "{} + {d}", m.len());
        assert!(m.ends_with("the real cause"), "{m}");
        assert!(m.contains("spill_read"), "{m}");
        assert_eq!(e["code"], -32603);
        // A small one is left alone.
        let mut small = json!({"code": 1, "message": "no", "data": [1, 2]});
        assert!(!bound_error(&sp, &names, &mut small));
    }
}
