//! `tools/call` results of any shape (text blocks, images, structured
//! content, with and without an output schema) through the MCP proxy's
//! bounding: no panic; blocks that are not text stay as they were, in
//! their order; `isError` is kept; the text blocks stay text, one for one,
//! or all put together into one where the first was (when there are too
//! many for each to hold a notice); at most one note follows; and
//! structured content, when kept, is JSON (it is a `Value`) whose
//! top-level type is unchanged.
#![no_main]

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Map, Value};
use spillway::{Policy, Spiller};
use spillway_mcp::{bound_result, ToolNames};

mod common;

/// A value of at most about `room` bytes as JSON.
fn value(u: &mut Unstructured<'_>, depth: u32, room: &mut usize) -> Result<Value> {
    let kind = if depth > 12 {
        u.int_in_range(0..=4)?
    } else {
        u.int_in_range(0..=6)?
    };
    let v = match kind {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => json!(u.arbitrary::<i64>()?),
        3 => Value::String(u.arbitrary()?),
        4 => {
            let n = u.int_in_range(0..=4000usize)?.min(*room / 18);
            Value::String("long line of text\n".repeat(n))
        }
        5 => {
            let x = value(u, depth + 1, room)?;
            let size = x.to_string().len() + 1;
            let n = u.int_in_range(0..=300usize)?.min(*room / size);
            *room -= n * size;
            Value::Array(vec![x; n])
        }
        _ => {
            let n = u.int_in_range(0..=6)?;
            let mut m = Map::new();
            for _ in 0..n {
                m.insert(u.arbitrary()?, value(u, depth + 1, room)?);
            }
            Value::Object(m)
        }
    };
    if let Value::String(s) = &v {
        *room = room.saturating_sub(s.len());
    }
    Ok(v)
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(budget) = u.int_in_range(600u64..=16384) else {
        return;
    };
    let Ok(has_schema) = u.arbitrary::<bool>() else {
        return;
    };
    let Ok(n) = u.int_in_range(0..=5) else { return };
    let mut blocks = Vec::new();
    for i in 0..n {
        let Ok(kind) = u.int_in_range(0..=2) else {
            return;
        };
        blocks.push(match kind {
            0 => json!({"type": "image", "data": format!("AAAA{i}"), "mimeType": "image/png"}),
            1 => {
                let Ok(text) = u.arbitrary::<String>() else {
                    return;
                };
                json!({"type": "text", "text": text})
            }
            _ => {
                let Ok(lines) = u.int_in_range(0..=20000) else {
                    return;
                };
                json!({"type": "text", "text": "x line\n".repeat(lines)})
            }
        });
    }
    let mut room = 4 << 20;
    let Ok(structured) = value(&mut u, 0, &mut room) else {
        return;
    };
    let Ok(is_error) = u.arbitrary::<bool>() else {
        return;
    };
    let mut result = json!({"content": blocks, "isError": is_error});
    let with_structured = u.arbitrary::<bool>().unwrap_or(false);
    if with_structured {
        result["structuredContent"] = structured.clone();
    }
    let before = result.clone();
    let names = ToolNames::with_prefix("p_");
    let store = common::store();
    common::clean(store);
    let policy = Policy::builder()
        .max_inline_bytes(budget)
        .templates(names.templates())
        .durability(spillway::Durability::Relaxed)
        .build()
        .unwrap();
    let spiller = Spiller::new(policy, store.clone()).unwrap();
    bound_result(&spiller, &names, &mut result, has_schema);
    assert_eq!(result["isError"], before["isError"]);
    let got = result["content"].as_array().unwrap();
    let had = before["content"].as_array().unwrap();
    let is_text = |b: &&Value| b["type"] == "text";
    let others = |v: &[Value]| {
        v.iter()
            .filter(|b| !is_text(b))
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(
        others(got),
        others(had),
        "blocks that are not text stay, in order"
    );
    assert!(got.iter().filter(is_text).all(|b| b["text"].is_string()));
    let texts_had = had.iter().filter(is_text).count();
    let texts_got = got.iter().filter(is_text).count();
    if texts_got < texts_had {
        // Put together: one text block where the first text was, and
        // perhaps a note at the end.
        assert!(
            texts_got == 1 || texts_got == 2,
            "{texts_got} of {texts_had}"
        );
        let first = had.iter().position(|b| is_text(&b)).unwrap();
        assert_eq!(got[first]["type"], "text");
        assert_eq!(got.len(), had.len() - texts_had + texts_got);
    } else {
        // One for one (or two put together, then a note); one note may
        // follow.
        assert!(got.len() == had.len() || got.len() == had.len() + 1);
    }
    if let Some(sc) = result.get("structuredContent") {
        let old = &before["structuredContent"];
        let kind = |v: &Value| std::mem::discriminant(v);
        assert_eq!(kind(sc), kind(old), "the structure keeps its type");
    }
});
