//! Code Mode end to end: an outer `run_code` program makes two nested `bash`
//! calls that really run `echo`, logs what it captured and returns
//! `CODE_ONE+CODE_TWO`. Prints the session log, and the one card a UI
//! projects from it; then runs a flood of output through a small budget and
//! reads it back with `spill_read`.
//!
//! ```sh
//! cargo run --example code_mode
//! ```

use std::sync::Arc;

use serde_json::{json, Value};
use spillway::{Policy, Spiller, Store};
use spillway_registry::card::cards;
use spillway_registry::events::{replay_file, LogSync, SessionLog};
use spillway_registry::run_code::{CodeHost, CodeRunFailed, RunCode};
use spillway_registry::tools::{Bash, SpillRead};
use spillway_registry::{Registry, ToolCall};

/// The "interpreter": this example's programs are Rust functions named by
/// their code. A real harness plugs in its JavaScript or WASM sandbox.
fn runtime(code: &str, host: &mut CodeHost<'_, '_>) -> Result<Option<Value>, CodeRunFailed> {
    match code {
        "const a = await tools.bash({command: 'echo CODE_ONE'});\n\
         const b = await tools.bash({command: 'echo CODE_TWO'});\n\
         print('captured: ' + a.trim()); print('captured: ' + b.trim());\n\
         return a.trim() + '+' + b.trim();" => {
            let a = host
                .call("bash", json!({"command": "echo CODE_ONE"}))
                .map_err(|e| host.fail(e))?;
            let b = host
                .call("bash", json!({"command": "echo CODE_TWO"}))
                .map_err(|e| host.fail(e))?;
            host.log(format!("captured: {}", a.trim()));
            host.log(format!("captured: {}", b.trim()));
            Ok(Some(Value::String(format!("{}+{}", a.trim(), b.trim()))))
        }
        "for (let i = 0; i < 20000; i++) print('line ' + i);" => {
            for i in 0..20_000 {
                host.log(format!("line {i}"));
            }
            Ok(None)
        }
        other => Err(host.fail(format!("this example cannot run {other:?}"))),
    }
}

type Program = fn(&str, &mut CodeHost<'_, '_>) -> Result<Option<Value>, CodeRunFailed>;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path().join("store"))?;
    let policy = Policy::builder()
        .max_inline_bytes(1024)
        .templates(spillway_registry::spill_read_templates())
        .build()?;
    let spiller = Spiller::new(policy, store)?;
    let log_path = dir.path().join("session.jsonl");
    let log = Arc::new(SessionLog::open(&log_path, LogSync::EveryEvent)?);
    let registry = Registry::builder(spiller, log)?
        .tool(RunCode::new(runtime as Program))
        .tool(Bash::default())
        .tool(SpillRead)
        .build();

    let code = "const a = await tools.bash({command: 'echo CODE_ONE'});\n\
                const b = await tools.bash({command: 'echo CODE_TWO'});\n\
                print('captured: ' + a.trim()); print('captured: ' + b.trim());\n\
                return a.trim() + '+' + b.trim();";
    let call = ToolCall::new("call-1", "run_code", json!({ "code": code }))
        .describe("Echo two markers through nested bash calls");
    let result = registry.call(&call)?;

    let flood = ToolCall::new(
        "call-2",
        "run_code",
        json!({ "code": "for (let i = 0; i < 20000; i++) print('line ' + i);" }),
    )
    .describe("Print 20,000 lines");
    let flooded = registry.call(&flood)?;
    let id = flooded.meta.spills[0].to_string();
    let read = registry.call(&ToolCall::new(
        "call-3",
        "spill_read",
        json!({ "id": id, "lines": "19990:" }),
    ))?;

    println!("== session log ({})", log_path.display());
    print!("{}", std::fs::read_to_string(&log_path)?);
    println!();
    println!("== cards projected from the log");
    let replayed = replay_file(&log_path)?;
    for card in cards(&replayed.events) {
        println!("{}", serde_json::to_string_pretty(&card)?);
    }
    println!();
    println!("== what the model got for call-1");
    println!("{}", result.content[0].as_text().unwrap_or_default());
    println!("== spill_read of the last lines of call-2");
    println!("{}", read.content[0].as_text().unwrap_or_default());
    Ok(())
}
