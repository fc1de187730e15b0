//! The pipeline every call goes through: pre-policies, execute and
//! render, post-policies, the spill stage, the durable event.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use spillway::{Outcome, Spiller, Store};

use crate::call::{joined_text, replace_text};
use crate::code_failure::CodeRunFailed;
use crate::events::{Event, LogError, SessionLog};
use crate::{
    Block, Cancel, Cx, NotDurable, PostDecision, Registry, RegistryBuilder, Rendered, ResultMeta,
    Tool, ToolCall, ToolError, ToolResult,
};

impl Registry {
    /// A registry whose spill stage is `spiller`, recording to `log`.
    ///
    /// Nested `run_code` calls give the program complete values up to the
    /// largest budget (64 MiB); their durable copies are bounded by
    /// `spiller`'s policy.
    ///
    /// `run_code` results are previewed as JSON when the whole result is one
    /// JSON document ([`spillway::Format::Auto`]), unless `spiller`'s policy
    /// names a format or [`RegistryBuilder::policy`] gives `run_code` one.
    ///
    /// # Errors
    ///
    /// Never in practice: the value policy is built from constants.
    pub fn builder(
        spiller: Spiller,
        log: Arc<SessionLog>,
    ) -> Result<RegistryBuilder, spillway::PolicyError> {
        // The same policy but the budget: the same templates (a nested
        // call's notice points at the registry's read tool too), the same
        // compression, durability and store.
        let mut values = spiller.policy().to_config().builder();
        values
            .max_inline_bytes(spillway::MAX_INLINE_BYTES_LIMIT as u64)
            .max_inline_lines(None)
            .max_inline_tokens(None)
            // A program computes on the bytes a tool wrote.
            .render(spillway::Render::Raw)
            .templates(spiller.policy().templates().clone());
        let values = values.build()?;
        let values = Spiller::new(values, spiller.store().clone())?;
        // A program's return value is usually JSON: `run_code` reads its
        // result as JSON when it is one document, unless the policy says
        // how (or `policy("run_code", …)` does).
        let mut per_tool = HashMap::new();
        if spiller.policy().format() == spillway::Format::Text {
            per_tool.insert(
                "run_code".to_owned(),
                spiller.with_format(spillway::Format::Auto)?,
            );
        }
        Ok(RegistryBuilder {
            inner: Registry {
                tools: BTreeMap::new(),
                pre: Vec::new(),
                post: Vec::new(),
                spiller,
                per_tool,
                values,
                log,
                skip: ["read", "spill_read", "spill_grep"]
                    .into_iter()
                    .map(String::from)
                    .collect(),
            },
        })
    }

    /// The session log.
    pub fn log(&self) -> &SessionLog {
        &self.log
    }

    /// The store.
    pub fn store(&self) -> &Store {
        self.spiller.store()
    }

    /// The spill stage that bounds the tool `name`: its own policy, else
    /// the registry's.
    pub fn spiller_for(&self, name: &str) -> &Spiller {
        self.per_tool.get(name).unwrap_or(&self.spiller)
    }

    pub(crate) fn precheck(&self, call: &ToolCall) -> Result<Arc<dyn Tool>, ToolError> {
        let tool = self
            .tools
            .get(&call.tool)
            .cloned()
            .ok_or_else(|| ToolError::UnknownTool(call.tool.clone()))?;
        for p in &self.pre {
            p.check(call).map_err(ToolError::Denied)?;
        }
        Ok(tool)
    }

    /// Runs one outer tool call through the whole pipeline and records it.
    ///
    /// # Errors
    ///
    /// [`NotDurable`] when the session log cannot be written; it hands the
    /// result back.
    pub fn call(&self, call: &ToolCall) -> Result<ToolResult, NotDurable> {
        self.call_with_signal(call, Cancel::new())
    }

    /// [`Registry::call`] that the caller can cancel: a signal raised on
    /// `signal` is passed on to a command the call runs, and stops a
    /// `run_code` program and its nested calls.
    ///
    /// # Errors
    ///
    /// As [`Registry::call`].
    pub fn call_with_signal(
        &self,
        call: &ToolCall,
        signal: Cancel,
    ) -> Result<ToolResult, NotDurable> {
        let (result, logged) = self.execute(call, signal);
        self.record(result, logged)
    }

    /// Logs the call and runs it through the pipeline; the result is not
    /// recorded yet.
    pub(crate) fn execute(
        &self,
        call: &ToolCall,
        signal: Cancel,
    ) -> (ToolResult, Result<(), LogError>) {
        let logged = self.log.append(&Event::ToolCall {
            call_id: call.id.clone(),
            tool: call.tool.clone(),
            description: call.description.clone(),
            args: call.args.clone(),
        });
        let mut cx = Cx {
            registry: self,
            call,
            call_id: call.id.clone(),
            nested: false,
            scanned: Vec::new(),
            signal,
        };
        let executed = self
            .precheck(call)
            .and_then(|tool| tool.execute(&mut cx, &call.args));
        let scanned = std::mem::take(&mut cx.scanned);
        let (mut content, mut is_error, mut streamed) = match executed {
            Ok(Rendered::Blocks(b)) => (b, false, None),
            Ok(Rendered::Json(v)) => (vec![Block::text(v.to_string())], false, None),
            Ok(Rendered::Streamed(o)) => (vec![Block::text(o.content.clone())], false, Some(o)),
            // A program's failure went through the stage with its logs.
            Err(ToolError::CodeRunFailed(CodeRunFailed {
                output: Some(o), ..
            })) => (vec![Block::text(o.content.clone())], true, Some(*o)),
            Err(ToolError::Output(o)) => (vec![Block::text(o.content.clone())], true, Some(*o)),
            Err(e) => (vec![Block::text(e.to_string())], true, None),
        };
        if !is_error {
            // What the scanners saw of the whole output comes first, then
            // each policy's look at the content as the last one left it.
            let mut scanned = scanned.into_iter();
            let mut policies = self.post.iter();
            loop {
                let decision = match scanned.next() {
                    Some(d) => d,
                    None => match policies.next() {
                        Some(p) => p.after(call, &content),
                        None => break,
                    },
                };
                match decision {
                    PostDecision::Keep => {}
                    PostDecision::Replace(b) => {
                        content = b;
                        streamed = None;
                    }
                    PostDecision::Block(reason) => {
                        content = vec![Block::text(format!("blocked: {reason}"))];
                        is_error = true;
                        streamed = None;
                        break;
                    }
                }
            }
        }
        let mut meta = ResultMeta::default();
        match streamed {
            Some(o) => {
                meta.total_bytes = Some(o.total_bytes);
                meta.spills.extend(o.spill.map(|s| s.id));
            }
            None if !self.skip.contains(&call.tool) => {
                // The text blocks, whatever else the result holds: together
                // they are bounded by the budget; other blocks (images,
                // audio) pass untouched, in their places.
                if let Some(text) = joined_text(&content) {
                    let o = finish_bounded(self.spiller_for(&call.tool).apply(text.as_bytes()));
                    meta.total_bytes = Some(o.0.total_bytes);
                    if !o.0.is_verbatim() {
                        content = replace_text(content, o.0.content);
                    }
                    meta.spills.extend(o.0.spill.map(|s| s.id));
                    is_error |= o.1;
                }
            }
            None => {}
        }
        let result = ToolResult {
            call_id: call.id.clone(),
            content,
            is_error,
            meta,
        };
        (result, logged)
    }

    /// Records a result in the session log: from then on it is durable.
    pub(crate) fn record(
        &self,
        result: ToolResult,
        logged: Result<(), LogError>,
    ) -> Result<ToolResult, NotDurable> {
        let recorded = logged.and_then(|()| {
            self.log.append(&Event::ToolResult {
                call_id: result.call_id.clone(),
                content: result.content.clone(),
                is_error: result.is_error,
                spills: result.meta.spills.clone(),
            })
        });
        match recorded {
            Ok(()) => Ok(result),
            Err(error) => Err(NotDurable {
                result: Box::new(result),
                error,
            }),
        }
    }
}

/// An outcome, and whether it must count as an error (the store failed and
/// the policy says fail).
pub(crate) fn finish_bounded(r: Result<Outcome, spillway::FinishError>) -> (Outcome, bool) {
    match r {
        Ok(o) => (o, false),
        Err(e) => (e.into_outcome(), true),
    }
}
