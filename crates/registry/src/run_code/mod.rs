//! `run_code`: a program's logs and return value, rendered into the spill
//! stage as a stream, and its nested tool calls.

mod host;
mod render;

pub use crate::code_failure::{CodeRunFailed, Limit};
pub use host::{Callable, CodeHost, Dispatcher, NestedCall, NestedValue};
pub use render::{drop_deep, render, write_json, CodeValue, RunCodeOutput, NO_OUTPUT, VISIBLE_NUL};

use std::io;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use spillway_process::stop::SIGKILL;
use spillway_process::Cancel;

use crate::call::text_of;
use crate::events::Event;
use crate::{Block, Cx, Registry, Rendered, Tool, ToolCall, ToolError};
use host::{sub_call_id, Stop};
use render::Renderer;

/// Runs programs. A harness plugs in its interpreter (the JavaScript
/// sandbox of `spillway-code`, a WASM runtime); tests plug in Rust
/// closures.
pub trait CodeRuntime: Send + Sync {
    /// Runs `code`; returns its value. Logs go through [`CodeHost::log`].
    ///
    /// # Errors
    ///
    /// [`CodeRunFailed`] when the program fails.
    fn run(&self, code: &str, host: &mut CodeHost<'_>) -> Result<Option<CodeValue>, CodeRunFailed>;

    /// What `run_code` says of itself to the model, before the SDK
    /// declaration. Default: the contract in a few sentences.
    fn description(&self) -> &str {
        DESCRIPTION
    }
}

/// `run_code`'s description when the runtime gives none.
pub const DESCRIPTION: &str = "Runs a program that calls the tools below with `await tools.<name>(args)` and gets their complete values. What it prints (print, console.log) comes back first, then the value it returns; long output comes back bounded, the rest stored to read back.";

impl<F> CodeRuntime for F
where
    F: Fn(&str, &mut CodeHost<'_>) -> Result<Option<CodeValue>, CodeRunFailed> + Send + Sync,
{
    fn run(&self, code: &str, host: &mut CodeHost<'_>) -> Result<Option<CodeValue>, CodeRunFailed> {
        self(code, host)
    }
}

/// The `run_code` tool: `{ "code": "…" }`.
pub struct RunCode<R> {
    runtime: R,
}

impl<R: CodeRuntime> RunCode<R> {
    /// A `run_code` tool on this runtime.
    pub fn new(runtime: R) -> Self {
        RunCode { runtime }
    }
}

impl<R: CodeRuntime> Tool for RunCode<R> {
    fn name(&self) -> &str {
        "run_code"
    }

    fn description(&self) -> Option<&str> {
        Some(self.runtime.description())
    }

    fn input_schema(&self) -> Value {
        serde_json::json!({
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "The body of an async function: top-level await, and return gives the result."},
                "description": {"type": "string", "description": "A few words on what the program does: the title people see on its result."}
            },
            "required": ["code"]
        })
    }

    fn execute(&self, cx: &mut Cx<'_>, args: &Value) -> Result<Rendered, ToolError> {
        let code = args
            .get("code")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::InvalidArgs("run_code needs a string `code`".into()))?;
        let registry = cx.registry;
        let mut host = CodeHost {
            stage: io::BufWriter::with_capacity(64 << 10, cx.stage()),
            renderer: Renderer::default(),
            dispatcher: Dispatcher {
                registry,
                parent: Arc::from(cx.call_id()),
                stop: Arc::new(Stop {
                    outer: cx.signal.clone(),
                    stopped: Cancel::new(),
                    live: Mutex::new(Vec::new()),
                    fatal: Mutex::new(None),
                }),
            },
            callable: registry
                .tools
                .values()
                .filter(|t| t.name() != "run_code")
                .map(|t| Callable {
                    name: t.name().to_owned(),
                    group: t.group().map(str::to_owned),
                    member: t.member().to_owned(),
                    json: t
                        .output_schema()
                        .is_some_and(|s| s.get("type").is_some_and(|t| t != "string")),
                })
                .collect(),
            calls: 0,
            deadline: cx.call.deadline,
            failed: None,
        };
        let ran = self.runtime.run(code, &mut host);
        // Whatever the run left running stops now.
        host.dispatcher.stop(SIGKILL);
        let CodeHost {
            stage,
            mut renderer,
            failed,
            ..
        } = host;
        // Small writes (a JSON token at a time) gathered into 64 KiB ones.
        let mut out = stage;
        let written = match &ran {
            Ok(value) => renderer.result(&mut out, value.as_ref().map(CodeValue::as_ref)),
            Err(failed) => renderer.failure(&mut out, failed),
        };
        let stage = out
            .into_inner()
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        if let Some(e) = failed {
            return Err(ToolError::Failed(e.to_string()));
        }
        written.map_err(|e| ToolError::Failed(e.to_string()))?;
        let outcome = cx.finish(stage)?;
        match ran {
            Ok(value) => {
                drop(value);
                Ok(Rendered::Streamed(outcome))
            }
            Err(mut failed) => {
                failed.output = Some(Box::new(outcome));
                Err(ToolError::CodeRunFailed(failed))
            }
        }
    }
}

/// A nested call whose turn came after its program ended.
const NOT_RUN: &str = "not run: the program that called it had ended";

/// Runs a program's `n`th nested call: pre-policies apply, post-policies do
/// not (the program gets complete values). The durable copy in the
/// `tool/code-dispatch` event is bounded by the spill stage.
fn nested_run(
    reg: &Registry,
    parent: &str,
    n: u32,
    tool: &str,
    args: Value,
    signal: Cancel,
) -> Result<NestedValue, (String, bool)> {
    let sub_call_id = sub_call_id(parent, n);
    let call = ToolCall::new(sub_call_id.clone(), tool, args.clone());
    let executed = if tool == "run_code" {
        Err(ToolError::Failed(
            "run_code cannot be called from a program".into(),
        ))
    } else if signal.is_cancelled() {
        // Its program ended before the call's turn came.
        Err(ToolError::Failed(NOT_RUN.into()))
    } else {
        reg.precheck(&call).and_then(|t| {
            let mut cx = Cx {
                registry: reg,
                call: &call,
                call_id: sub_call_id.clone(),
                nested: true,
                scanned: Vec::new(),
                signal,
            };
            t.execute(&mut cx, &args)
        })
    };
    let unavailable = matches!(executed, Err(ToolError::Unavailable(_)));
    let (text, is_error, json) = match executed {
        Ok(Rendered::Blocks(b)) => match text_of(&b) {
            Some(t) => (t, false, false),
            // Not all text: the program gets the blocks as JSON.
            None => (serde_json::to_string(&b).unwrap_or_default(), false, true),
        },
        Ok(Rendered::Json(v)) => (v.to_string(), false, true),
        Ok(Rendered::Streamed(o)) => (o.content, false, false),
        Err(e) => (e.to_string(), true, false),
    };
    let bounded = match reg.spiller_for(tool).apply(text.as_bytes()) {
        Ok(o) => o,
        Err(e) => e.into_outcome(),
    };
    let _ = reg.log.append(&Event::CodeDispatch {
        sub_call_id,
        parent_call_id: parent.to_owned(),
        tool: tool.to_string(),
        args,
        content: vec![Block::text(bounded.content)],
        is_error,
        spills: bounded.spill.map(|s| s.id).into_iter().collect(),
    });
    if is_error {
        Err((text, unavailable))
    } else {
        Ok(NestedValue { text, json })
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use render::ResultRef;

    /// Lines written in batches render as the same lines written one by
    /// one, whatever the batches, empty lines included.
    #[test]
    fn batches_of_log_lines_render_as_the_lines_one_by_one() {
        let cases: &[&[&str]] = &[
            &[""],
            &["", ""],
            &["a"],
            &["", "a", ""],
            &["one", "two", "three", "", "five"],
        ];
        for lines in cases {
            for result in [None, Some(ResultRef::Text("r")), Some(ResultRef::Text(""))] {
                let mut want = Vec::new();
                let mut r = Renderer::default();
                for l in *lines {
                    r.log(&mut want, l.as_bytes()).unwrap();
                }
                r.result(&mut want, result).unwrap();
                for split in 0..=lines.len() {
                    let mut got = Vec::new();
                    let mut r = Renderer::default();
                    for part in [&lines[..split], &lines[split..]] {
                        if !part.is_empty() {
                            r.log_joined(&mut got, part.join("\n").as_bytes(), part.len() as u64)
                                .unwrap();
                        }
                    }
                    r.result(&mut got, result).unwrap();
                    assert_eq!(got, want, "{lines:?} split at {split}");
                }
            }
        }
    }
}
