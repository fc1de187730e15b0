//! Code Mode end to end, for real: a JavaScript program makes two nested
//! `bash` calls that run `echo`, logs what it captured and returns
//! `CODE_ONE+CODE_TWO`. Prints what the model was shown (run_code with the
//! SDK), the session log, the one card a UI projects from it; then floods
//! a small budget with output and reads it back with `spill_read`.
//!
//! ```sh
//! cargo run -p spillway-code --example code_mode
//! ```

use std::sync::Arc;

use serde_json::json;
use spillway::{Policy, Spiller, Store};
use spillway_code::JsRuntime;
use spillway_registry::card::cards;
use spillway_registry::events::{replay_file, LogSync, SessionLog};
use spillway_registry::run_code::RunCode;
use spillway_registry::tools::{Bash, SpillGrep, SpillRead};
use spillway_registry::{Presentation, Registry, ToolCall};

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
        .tool(RunCode::new(JsRuntime::default()))
        .tool(Bash::default())
        .tool(SpillRead)
        .tool(SpillGrep)
        .build();

    println!("== what the model is shown (ptc)");
    for tool in registry.tools(Presentation::Ptc) {
        println!("-- {}", tool.name);
        println!("{}", tool.description.unwrap_or_default());
    }
    println!();

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

    println!("== session log");
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
    println!("== what the model got for call-2");
    println!("{}", flooded.content[0].as_text().unwrap_or_default());
    println!("== spill_read of its last lines");
    println!("{}", read.content[0].as_text().unwrap_or_default());
    Ok(())
}
