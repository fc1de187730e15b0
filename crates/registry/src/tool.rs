//! What a tool is, what it sees while it runs (`Cx`), and the policies
//! and scanners around it.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;
use spillway::{Outcome, Policy, Stage, Store};

use crate::events::LogError;
use crate::{Block, Cancel, Registry, Rendered, ToolCall, ToolError, ToolResult};

/// A tool.
pub trait Tool: Send + Sync {
    /// Its name.
    fn name(&self) -> &str;

    /// What it does, for the SDK declaration a program is written against
    /// ([`Registry::sdk`]). Default: nothing said.
    fn description(&self) -> Option<&str> {
        None
    }

    /// The group a program reaches it in, `tools.<group>.<member>` (the
    /// MCP server it comes from, when a proxy fronts several). Default:
    /// none, `tools.<member>`.
    fn group(&self) -> Option<&str> {
        None
    }

    /// The name a program calls it by within its group. Default: its name.
    fn member(&self) -> &str {
        self.name()
    }

    /// The JSON Schema of its arguments. Default: any object.
    fn input_schema(&self) -> Value {
        serde_json::json!({ "type": "object" })
    }

    /// The JSON Schema of the value a program gets from it. Default: not
    /// known (`unknown` in the declaration).
    fn output_schema(&self) -> Option<Value> {
        None
    }

    /// Runs it and renders its value.
    ///
    /// # Errors
    ///
    /// [`ToolError`], which the registry turns into error content.
    fn execute(&self, cx: &mut Cx<'_>, args: &Value) -> Result<Rendered, ToolError>;
}

/// A shared tool is a tool: a harness that keeps a handle on a tool it
/// registered (to list or call it itself) registers the `Arc`.
impl<T: Tool + ?Sized> Tool for Arc<T> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn group(&self) -> Option<&str> {
        (**self).group()
    }
    fn member(&self) -> &str {
        (**self).member()
    }
    fn description(&self) -> Option<&str> {
        (**self).description()
    }
    fn input_schema(&self) -> Value {
        (**self).input_schema()
    }
    fn output_schema(&self) -> Option<Value> {
        (**self).output_schema()
    }
    fn execute(&self, cx: &mut Cx<'_>, args: &Value) -> Result<Rendered, ToolError> {
        (**self).execute(cx, args)
    }
}

/// A pre-execute policy: `Err(reason)` denies the call.
pub trait PrePolicy: Send + Sync {
    /// Checks a call before it runs.
    ///
    /// # Errors
    ///
    /// The reason for a denial.
    fn check(&self, call: &ToolCall) -> Result<(), String>;
}

impl<F: Fn(&ToolCall) -> Result<(), String> + Send + Sync> PrePolicy for F {
    fn check(&self, call: &ToolCall) -> Result<(), String> {
        self(call)
    }
}

/// What a post-execute policy decides.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PostDecision {
    /// Keep the content.
    Keep,
    /// Replace it.
    Replace(Vec<Block>),
    /// Replace it with error content.
    Block(String),
}

/// A post-execute policy, run on successful results in order.
pub trait PostPolicy: Send + Sync {
    /// Looks at the rendered content. For a streamed tool (`bash`,
    /// `run_code`) this is already the bounded preview: a policy that must
    /// judge every byte also gives a [`scanner`](PostPolicy::scanner).
    fn after(&self, call: &ToolCall, content: &[Block]) -> PostDecision;

    /// A scanner that sees every byte a streamed tool writes, as it is
    /// written, before the spill stage bounds it; its decision is applied
    /// before [`after`](PostPolicy::after) runs. Default: none.
    ///
    /// The scanner keeps what it needs and no more (a pattern that can
    /// straddle two chunks needs the end of the previous one): memory stays
    /// bounded by what the scanners hold.
    fn scanner(&self, call: &ToolCall) -> Option<Box<dyn OutputScanner>> {
        let _ = call;
        None
    }
}

/// Sees a streamed tool's whole output, chunk by chunk; see
/// [`PostPolicy::scanner`].
pub trait OutputScanner: Send {
    /// The next chunk of output, as the tool wrote it.
    fn feed(&mut self, chunk: &[u8]);
    /// The output has ended: what the policy decides.
    fn finish(self: Box<Self>) -> PostDecision;
}

/// The spill stage a tool streams its text into: the bytes go to the stage
/// and, for outer calls, to every post-execute policy's
/// [`OutputScanner`].
pub struct ToolStage {
    stage: Stage,
    scanners: Vec<Box<dyn OutputScanner>>,
}

impl ToolStage {
    /// Feeds the next chunk.
    pub fn feed(&mut self, data: &[u8]) {
        for s in &mut self.scanners {
            s.feed(data);
        }
        self.stage.feed(data);
    }

    /// The last byte written so far, if any.
    pub fn last_byte(&self) -> Option<u8> {
        self.stage.last_byte()
    }

    /// Bytes written so far.
    pub fn bytes_written(&self) -> u64 {
        self.stage.bytes_written()
    }
}

impl std::io::Write for ToolStage {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.feed(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl fmt::Debug for ToolStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolStage")
            .field("stage", &self.stage)
            .field("scanners", &self.scanners.len())
            .finish()
    }
}

impl<F: Fn(&ToolCall, &[Block]) -> PostDecision + Send + Sync> PostPolicy for F {
    fn after(&self, call: &ToolCall, content: &[Block]) -> PostDecision {
        self(call, content)
    }
}

/// The result could not be made durable. The result is handed back.
#[derive(Debug)]
pub struct NotDurable {
    /// The result the caller would have got.
    pub result: Box<ToolResult>,
    /// Why the log append failed.
    pub error: LogError,
}

impl fmt::Display for NotDurable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tool result was not recorded: {}", self.error)
    }
}

impl std::error::Error for NotDurable {}

/// What a tool sees while it runs.
pub struct Cx<'a> {
    pub(crate) registry: &'a Registry,
    pub(crate) call: &'a ToolCall,
    pub(crate) call_id: String,
    pub(crate) nested: bool,
    /// What the scanners of a streamed output decided.
    pub(crate) scanned: Vec<PostDecision>,
    /// The call's cancellation: the signal to pass on to a command it runs.
    pub(crate) signal: Cancel,
}

impl Cx<'_> {
    /// The call's id (`<outer>:code:<n>` for nested calls).
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// When the call must have answered, when its caller said
    /// ([`ToolCall::deadline`]); a nested call has its program's.
    pub fn deadline(&self) -> Option<std::time::Instant> {
        self.call.deadline
    }

    /// Whether this is a program's nested call.
    pub fn is_nested(&self) -> bool {
        self.nested
    }

    /// The call's cancellation: the signal to pass on to a command it runs
    /// (`RunOptions::forward`), raised when the caller cancels the call or
    /// its program ended.
    pub fn signal(&self) -> &Cancel {
        &self.signal
    }

    /// A spill stage for this call's text output. Outer calls get the
    /// registry's policy, and their bytes also go to the post-execute
    /// policies' scanners; nested calls get the largest budget, so the
    /// program sees complete values (and skip post-execute policies).
    pub fn stage(&self) -> ToolStage {
        if self.nested {
            ToolStage {
                stage: self.registry.values.stage(),
                scanners: Vec::new(),
            }
        } else {
            ToolStage {
                stage: self.registry.spiller_for(&self.call.tool).stage(),
                scanners: self
                    .registry
                    .post
                    .iter()
                    .filter_map(|p| p.scanner(self.call))
                    .collect(),
            }
        }
    }

    /// Finishes a stage made by [`Cx::stage`]: the scanners decide, and the
    /// stage gives the bounded outcome.
    ///
    /// # Errors
    ///
    /// [`ToolError::Failed`] when the store failed and the policy says fail.
    ///
    /// A nested call's program gets the complete value, never a notice:
    /// output with a NUL or bytes that are not UTF-8 (which the stage
    /// describes instead of showing) is read back from the store and given
    /// as text, each NUL as it is and each byte sequence that is not UTF-8
    /// as U+FFFD.
    pub fn finish(&mut self, stage: ToolStage) -> Result<Outcome, ToolError> {
        self.scanned
            .extend(stage.scanners.into_iter().map(OutputScanner::finish));
        let mut outcome = stage
            .stage
            .finish()
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        if self.nested && (outcome.binary || outcome.invalid_utf8) {
            let whole = outcome.spill.as_ref().filter(|s| !s.truncated);
            if let Some(s) = whole {
                if let Ok(bytes) = self.registry.store().read(&s.id, &spillway::Selection::All) {
                    outcome.content = String::from_utf8_lossy(&bytes).into_owned();
                }
            }
        }
        Ok(outcome)
    }

    /// The store.
    pub fn store(&self) -> &Store {
        self.registry.store()
    }

    /// The policy that bounds this call's tool.
    pub fn policy(&self) -> &Policy {
        self.registry.spiller_for(&self.call.tool).policy()
    }
}
