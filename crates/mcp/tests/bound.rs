//! Bounding `tools/call` results: the budget shared by the text blocks and
//! the structured content, other blocks untouched.

use serde_json::{json, Value};
use spillway::{Policy, Spiller, Store};
use spillway_mcp::{bound_result, ToolNames};

fn spiller(dir: &std::path::Path, budget: u64) -> (Spiller, ToolNames) {
    let names = ToolNames::with_prefix("x_");
    let policy = Policy::builder()
        .max_inline_bytes(budget)
        .templates(names.templates())
        .build()
        .unwrap();
    (
        Spiller::new(policy, Store::open(dir).unwrap()).unwrap(),
        names,
    )
}

fn lines(n: usize, tag: &str) -> String {
    (0..n).map(|i| format!("{tag} line {i}\n")).collect()
}

fn text_len(v: &Value) -> usize {
    let blocks = v["content"].as_array().unwrap();
    let texts: usize = blocks
        .iter()
        .filter_map(|b| b["text"].as_str())
        .map(str::len)
        .sum();
    texts
        + v.get("structuredContent")
            .map_or(0, |s| s.to_string().len())
}

#[test]
fn a_small_result_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (sp, names) = spiller(dir.path(), 4096);
    let mut r = json!({"content": [{"type": "text", "text": "hi"}], "structuredContent": {"a": 1}});
    let before = r.clone();
    assert!(!bound_result(&sp, &names, &mut r, false));
    assert_eq!(r, before);
}

#[test]
fn text_blocks_share_the_budget_and_other_blocks_stay() {
    let dir = tempfile::tempdir().unwrap();
    let (sp, names) = spiller(dir.path(), 4096);
    let image = json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"});
    let mut r = json!({
        "content": [
            {"type": "text", "text": "a short caption"},
            image,
            {"type": "text", "text": lines(20_000, "first")},
            {"type": "text", "text": lines(20_000, "second")},
        ],
        "isError": true,
    });
    assert!(bound_result(&sp, &names, &mut r, false));
    assert_eq!(r["isError"], true);
    assert_eq!(r["content"][0]["text"], "a short caption");
    assert_eq!(r["content"][1], image);
    for i in [2, 3] {
        let t = r["content"][i]["text"].as_str().unwrap();
        assert!(t.contains("x_spill_read(id=\"blake3:"), "{t}");
    }
    assert!(r["content"][3]["text"]
        .as_str()
        .unwrap()
        .ends_with("second line 19999\n"));
    assert!(text_len(&r) <= 4096, "{}", text_len(&r));
}

#[test]
fn structured_content_without_a_schema_becomes_a_json_preview() {
    let dir = tempfile::tempdir().unwrap();
    let (sp, names) = spiller(dir.path(), 4096);
    let rows: Vec<Value> = (0..5000).map(|i| json!({"id": i, "ok": i != 7})).collect();
    let mut r = json!({"content": [], "structuredContent": {"rows": rows, "total": 5000}});
    assert!(bound_result(&sp, &names, &mut r, false));
    let sc = &r["structuredContent"];
    assert_eq!(sc["total"], 5000);
    assert_eq!(sc["rows"][0], json!({"id": 0, "ok": true}));
    assert!(sc.to_string().contains("elements omitted"));
    assert!(text_len(&r) <= 4096);
}

#[test]
fn structured_content_with_a_schema_keeps_every_type() {
    let dir = tempfile::tempdir().unwrap();
    let (sp, names) = spiller(dir.path(), 4096);
    let rows: Vec<Value> = (0..5000).map(|i| json!({"id": i, "ok": i != 7})).collect();
    let log = lines(10_000, "log");
    let mut r =
        json!({"content": [], "structuredContent": {"rows": rows, "log": log, "total": 5000}});
    assert!(bound_result(&sp, &names, &mut r, true));
    let sc = &r["structuredContent"];
    assert_eq!(sc["total"], 5000);
    // No marker where an object should be: every row is still a row.
    let kept = sc["rows"].as_array().unwrap();
    assert!(kept.len() >= 2 && kept.len() < 5000);
    assert!(kept
        .iter()
        .all(|row| row["id"].is_u64() && row["ok"].is_boolean()));
    assert_eq!(kept[0]["id"], 0);
    assert_eq!(kept.last().unwrap()["id"], 4999);
    let log = sc["log"].as_str().unwrap();
    assert!(
        log.starts_with("log line 0\n") && log.ends_with("log line 9999\n"),
        "{log}"
    );
    assert!(log.contains("x_spill_read(id=\"blake3:"));
    assert!(sc.to_string().len() <= 4096, "{}", sc.to_string().len());
}

/// The text an embedded resource holds reaches the model too.
fn all_text_len(v: &Value) -> usize {
    let resources: usize = v["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["resource"]["text"].as_str())
        .map(str::len)
        .sum();
    text_len(v) + resources
}

#[test]
fn a_thousand_text_blocks_stay_within_the_budget_together() {
    let dir = tempfile::tempdir().unwrap();
    for (blocks, size) in [(1000, 2000), (12, 700), (3, 3000)] {
        let (sp, names) = spiller(dir.path(), 4096);
        let image = json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"});
        let mut content: Vec<Value> = (0..blocks)
            .map(|i| json!({"type": "text", "text": format!("block {i} {}\n", "x".repeat(size))}))
            .collect();
        content.insert(1, image.clone());
        let mut r = json!({ "content": content });
        assert!(bound_result(&sp, &names, &mut r, false));
        assert!(
            all_text_len(&r) <= 4096,
            "{blocks} blocks: {}",
            all_text_len(&r)
        );
        // The image stays; the last block's end is still shown.
        assert!(r["content"].as_array().unwrap().contains(&image));
        let shown: String = r["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect();
        assert!(shown.contains(&format!("block {} ", blocks - 1)), "{shown}");
        assert!(shown.contains("spill_read"), "a notice names the read tool");
    }
}

#[test]
fn an_embedded_resource_is_bounded_like_text() {
    let dir = tempfile::tempdir().unwrap();
    let (sp, names) = spiller(dir.path(), 4096);
    let big = lines(40_000, "resource");
    let mut r = json!({"content": [
        {"type": "text", "text": "here it is"},
        {"type": "resource", "resource": {"uri": "file:///log.txt", "mimeType": "text/plain", "text": big}},
    ]});
    assert!(bound_result(&sp, &names, &mut r, false));
    assert!(all_text_len(&r) <= 4096, "{}", all_text_len(&r));
    let res = &r["content"][1]["resource"];
    assert_eq!(res["uri"], "file:///log.txt");
    let text = res["text"].as_str().unwrap();
    assert!(text.ends_with("resource line 39999\n"), "{text}");
    assert_eq!(r["content"][0]["text"], "here it is");
}
