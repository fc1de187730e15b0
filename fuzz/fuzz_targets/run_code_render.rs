//! Arbitrary JSON values, deeply nested too, through the run_code renderer
//! and the stage: the rendering is the value's JSON, and the stage's rules
//! hold for it.
#![no_main]

use arbitrary::{Arbitrary, Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};
use spillway::Spiller;
use spillway_registry::run_code::{render, RunCodeOutput};

mod common;
use common::support;

fn value(u: &mut Unstructured<'_>, depth: u32) -> Result<Value> {
    let kind = if depth > 24 {
        u.int_in_range(0..=3)?
    } else {
        u.int_in_range(0..=5)?
    };
    Ok(match kind {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => serde_json::Number::from_f64(u.arbitrary()?).map_or(Value::Null, Value::Number),
        3 => Value::String(u.arbitrary()?),
        4 => {
            let n = u.int_in_range(0..=4)?;
            Value::Array((0..n).map(|_| value(u, depth + 1)).collect::<Result<_>>()?)
        }
        _ => {
            let n = u.int_in_range(0..=4)?;
            let mut m = Map::new();
            for _ in 0..n {
                m.insert(u.arbitrary()?, value(u, depth + 1)?);
            }
            Value::Object(m)
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(p) = common::Params::arbitrary(&mut u) else {
        return;
    };
    let Ok(logs) = Vec::<String>::arbitrary(&mut u) else {
        return;
    };
    let Ok(mut v) = value(&mut u, 0) else { return };
    // Mostly shallow, so the target runs fast; one input in 16 nests up to
    // 200,000 levels, far past any recursion limit.
    let deep = u.ratio(1u8, 16u8).unwrap_or(false);
    let wraps: u32 = u
        .int_in_range(0..=if deep { 200_000 } else { 64 })
        .unwrap_or(0);
    let shallow = v.clone();
    for _ in 0..wraps {
        v = Value::Array(vec![v]);
    }
    let out = RunCodeOutput {
        logs,
        result: Some(v),
    };
    let mut text = Vec::new();
    render(&out, &mut text).expect("rendering into memory");
    // The result part is the value's JSON, wrapped `wraps` times.
    if !matches!(shallow, Value::String(_)) {
        let want = serde_json::to_string(&shallow).expect("shallow value");
        let wrapped = format!(
            "{}{want}{}",
            "[".repeat(wraps as usize),
            "]".repeat(wraps as usize)
        );
        assert!(
            text.ends_with(wrapped.as_bytes()),
            "rendering is not the value's JSON"
        );
    }
    let store = common::store();
    let policy = p.policy(store, text.len());
    let spiller = Spiller::new(policy.clone(), store.clone()).expect("policy fits");
    let o = spiller.apply(&text).expect("preview mode never fails");
    support::check_rules(&text, &policy, &o);
    drop(out);
    common::clean(store);
});
