//! `apply --json` against its schema, `schema/outcome.schema.json`: every
//! kind of outcome the CLI prints validates, and every field the schema
//! describes is seen with a value, so the schema describes no dead field.
//!
//! The validator below covers the part of JSON Schema the file uses (type,
//! enum, properties, required, additionalProperties, items, minItems,
//! maxItems, minimum, pattern, oneOf and local `$ref`), and refuses any
//! other keyword, so the schema cannot grow a rule this test skips.

#[path = "../../../tests/support/mod.rs"]
mod support;

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{json, Value};

fn schema() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../schema/outcome.schema.json"
    ))
    .expect("the schema file");
    serde_json::from_str(&text).expect("the schema is JSON")
}

/// The errors of `v` against `s`, each with the JSON Pointer where it is.
fn validate(root: &Value, s: &Value, v: &Value, at: &str, errors: &mut Vec<String>) {
    const KNOWN: &[&str] = &[
        "$schema",
        "$id",
        "$defs",
        "title",
        "description",
        "type",
        "enum",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minItems",
        "maxItems",
        "minimum",
        "pattern",
        "oneOf",
        "$ref",
    ];
    let s = s.as_object().expect("a schema is an object");
    for k in s.keys() {
        assert!(
            KNOWN.contains(&k.as_str()),
            "the schema uses `{k}`, which this test does not check"
        );
    }
    if let Some(r) = s.get("$ref") {
        let pointer = r
            .as_str()
            .unwrap()
            .strip_prefix('#')
            .expect("a local reference");
        let target = root.pointer(pointer).expect("the reference resolves");
        return validate(root, target, v, at, errors);
    }
    if let Some(t) = s.get("type") {
        let ok = match t.as_str().unwrap() {
            "object" => v.is_object(),
            "array" => v.is_array(),
            "string" => v.is_string(),
            "boolean" => v.is_boolean(),
            "null" => v.is_null(),
            "integer" => v.is_u64() || v.is_i64(),
            other => panic!("type {other} is not used"),
        };
        if !ok {
            errors.push(format!("{at}: {v} is not of type {t}"));
            return;
        }
    }
    if let Some(e) = s.get("enum") {
        if !e.as_array().unwrap().contains(v) {
            errors.push(format!("{at}: {v} is not one of {e}"));
        }
    }
    if let Some(min) = s.get("minimum") {
        if v.as_i64().is_some_and(|n| n < min.as_i64().unwrap()) {
            errors.push(format!("{at}: {v} is below {min}"));
        }
    }
    if let Some(p) = s.get("pattern") {
        let re = regex::Regex::new(p.as_str().unwrap()).unwrap();
        if v.as_str().is_some_and(|t| !re.is_match(t)) {
            errors.push(format!("{at}: {v} does not match {p}"));
        }
    }
    if let Some(items) = s.get("items") {
        let arr = v.as_array().unwrap();
        for (i, item) in arr.iter().enumerate() {
            validate(root, items, item, &format!("{at}/{i}"), errors);
        }
        let n = arr.len() as u64;
        if s.get("minItems").is_some_and(|m| n < m.as_u64().unwrap())
            || s.get("maxItems").is_some_and(|m| n > m.as_u64().unwrap())
        {
            errors.push(format!("{at}: {n} items"));
        }
    }
    if let Some(props) = s.get("properties") {
        let obj = v.as_object().unwrap();
        let props = props.as_object().unwrap();
        for req in s
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if !obj.contains_key(req.as_str().unwrap()) {
                errors.push(format!("{at}: `{req}` is missing"));
            }
        }
        for (k, val) in obj {
            match props.get(k) {
                Some(p) => validate(root, p, val, &format!("{at}/{k}"), errors),
                None if s.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    errors.push(format!("{at}: `{k}` is not in the schema"))
                }
                None => {}
            }
        }
    }
    if let Some(one_of) = s.get("oneOf") {
        let matching = one_of
            .as_array()
            .unwrap()
            .iter()
            .filter(|alt| {
                let mut e = Vec::new();
                validate(root, alt, v, at, &mut e);
                e.is_empty()
            })
            .count();
        if matching != 1 {
            errors.push(format!(
                "{at}: {v} matches {matching} of the oneOf alternatives"
            ));
        }
    }
}

fn errors_of(v: &Value) -> Vec<String> {
    let s = schema();
    let mut errors = Vec::new();
    validate(&s, &s, v, "", &mut errors);
    errors
}

fn apply(store: &Path, args: &[&str], input: &[u8]) -> Value {
    let mut all = vec!["apply", "--json"];
    all.extend_from_slice(args);
    let out = support::run_spillway(store, &all, input);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

/// Outcomes of every kind: verbatim, cut, rendered with salient lines, a
/// JSON preview and a JSON fallback, tokens, binary, invalid UTF-8, a
/// truncated and a deduplicated object, and a store that failed.
fn outcomes(dir: &Path) -> Vec<(&'static str, Value)> {
    let store = dir.join("store");
    let mut log = String::new();
    for i in 1..=3000 {
        if i == 1500 {
            log.push_str("\x1b[31merror[E0308]: mismatched types\x1b[0m\n");
        } else {
            log.push_str(&format!("\x1b[32mcompiling\x1b[0m crate {i}\n"));
        }
    }
    let doc = json!({ "results": (0..3000).map(|i| json!({ "test": i, "ok": i != 7 })).collect::<Vec<_>>() });
    let doc = doc.to_string();
    let plain: String = (1..=4000).map(|i| format!("line of text {i}\n")).collect();
    let mut binary = vec![b'x'; 50_000];
    binary[10] = 0;
    let invalid = [vec![b'a'; 40_000], vec![0xFF], vec![b'b'; 40_000]].concat();
    let not_a_dir = dir.join("a-file");
    std::fs::write(&not_a_dir, b"x").unwrap();
    vec![
        ("fits", apply(&store, &[], b"hello\n")),
        (
            "rendered, salient",
            apply(&store, &["--max-inline-bytes", "4KiB"], log.as_bytes()),
        ),
        (
            "JSON preview",
            apply(
                &store,
                &["--format", "json", "--max-inline-bytes", "2KiB"],
                doc.as_bytes(),
            ),
        ),
        (
            "JSON fallback",
            apply(&store, &["--format", "json"], plain.as_bytes()),
        ),
        (
            "tokens",
            apply(&store, &["--max-inline-tokens", "1000"], plain.as_bytes()),
        ),
        ("binary", apply(&store, &[], &binary)),
        ("invalid UTF-8", apply(&store, &[], &invalid)),
        (
            "truncated",
            apply(
                &store,
                &["--max-spill-bytes", "1KiB", "--compress", "none"],
                plain.as_bytes(),
            ),
        ),
        ("dedup", apply(&store, &[], plain.as_bytes())),
        ("store failed", apply(&not_a_dir, &[], plain.as_bytes())),
    ]
}

#[test]
fn every_kind_of_apply_json_outcome_validates_against_the_schema() {
    let dir = tempfile::tempdir().unwrap();
    for (case, v) in outcomes(dir.path()) {
        let errors = errors_of(&v);
        assert!(errors.is_empty(), "{case}: {errors:#?}");
    }
}

/// A field the schema describes but the CLI never fills would be a dead
/// promise: each nullable field is seen with a value, and each boolean true.
#[test]
fn every_field_the_schema_describes_is_seen_with_a_value() {
    let dir = tempfile::tempdir().unwrap();
    let all = outcomes(dir.path());
    let s = schema();
    let mut unseen: BTreeSet<String> = BTreeSet::new();
    let mut check = |props: &serde_json::Map<String, Value>, values: Vec<&Value>, prefix: &str| {
        for (k, p) in props {
            let seen = values
                .iter()
                .any(|v| match p.get("type").and_then(Value::as_str) {
                    Some("boolean") => v[k] == Value::Bool(true),
                    Some("array") => v[k].as_array().is_some_and(|a| !a.is_empty()),
                    _ => !v[k].is_null(),
                });
            if !seen {
                unseen.insert(format!("{prefix}{k}"));
            }
        }
    };
    check(
        s["properties"].as_object().unwrap(),
        all.iter().map(|(_, v)| v).collect(),
        "",
    );
    let spills: Vec<&Value> = all
        .iter()
        .map(|(_, v)| &v["spill"])
        .filter(|v| !v.is_null())
        .collect();
    check(
        s["$defs"]["stored_object"]["properties"]
            .as_object()
            .unwrap(),
        spills,
        "spill.",
    );
    assert!(unseen.is_empty(), "never seen with a value: {unseen:?}");
}

/// The validator finds what it should, so the tests above can fail.
#[test]
fn the_validator_refuses_what_the_schema_forbids() {
    let dir = tempfile::tempdir().unwrap();
    let good = apply(
        &dir.path().join("store"),
        &[],
        &"x\n".repeat(30_000).into_bytes(),
    );
    assert!(errors_of(&good).is_empty());
    let broken = |f: &dyn Fn(&mut Value)| {
        let mut v = good.clone();
        f(&mut v);
        errors_of(&v)
    };
    assert!(!broken(&|v| drop(v.as_object_mut().unwrap().remove("rendered"))).is_empty());
    assert!(!broken(&|v| v["extra"] = json!(1)).is_empty());
    assert!(!broken(&|v| v["format"] = json!("yaml")).is_empty());
    assert!(!broken(&|v| v["omitted_range"] = json!([1])).is_empty());
    assert!(!broken(&|v| v["total_bytes"] = json!(-1)).is_empty());
    assert!(!broken(&|v| v["spill"]["id"] = json!("blake3:xyz")).is_empty());
    assert!(!broken(&|v| v["spill"]["compression"] = json!("gzip")).is_empty());
    assert!(!broken(&|v| v["store_error_kind"] = json!("disk_on_fire")).is_empty());
    assert!(!broken(&|v| v["salient_lines"] = json!([0])).is_empty());
    assert!(!broken(&|v| v["tokenizer"] = json!("gpt2")).is_empty());
}
