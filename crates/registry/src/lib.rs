//! A tool registry whose post-policy stage is spillway: the pipeline of the
//! reference design, as a Rust module.
//!
//! For every tool call, in this order:
//!
//! 1. **Pre-execute policies.** A denial becomes error content and the tool
//!    does not run.
//! 2. **Execute**, and 3. **render** the value into content blocks. Tools
//!    that produce text stream it into a spill stage as it arrives
//!    ([`Cx::stage`]), so a 1 GiB output is never held in memory.
//! 4. **Post-execute policies**, composed in order like middleware: each may
//!    keep the content, replace it, or block (error content).
//! 5. **The spill stage** over the final content: results made entirely of
//!    text blocks are bounded; any non-text block passes untouched; tools in
//!    the skip list (default `read`, `spill_read`, `spill_grep`) pass untouched, so a read of
//!    a spilled object cannot be spilled again.
//! 6. **Append the durable `tool/result` event**, then return the same content.
//!
//! Failures (a tool's error, a `run_code` failure) become error content and
//! go through the spill stage too: a 50 MB error log is bounded like any
//! other result.
//!
//! A harness that has its own registry uses [`Spiller`] directly at its step
//! 5; this module is the whole contract for those who want it.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod card;
pub mod events;
pub mod run_code;
pub mod sdk;
pub mod tools;
pub mod turn;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use events::{Event, LogError, SessionLog};
use run_code::CodeRunFailed;
use spillway::Policy;
use spillway::{ContentId, Store};
use spillway::{Outcome, Spiller, Stage};
pub use spillway_process::Cancel;

/// The `stored` notice template for a registry that ships [`tools::SpillRead`]:
/// it points the model at the tool it really has, not at a shell command.
pub const SPILL_READ_STORED: &str =
    "Output stored; read it with spill_read(id=\"{short_id}\", {read_unit}=\"{read_range}\")";

/// Notice templates whose read hint is [`SPILL_READ_STORED`].
///
/// # Examples
///
/// ```
/// use spillway::Policy;
/// let policy = Policy::builder()
///     .templates(spillway_registry::spill_read_templates())
///     .build()
///     .unwrap();
/// assert!(policy.templates().stored.as_str().contains("spill_read"));
/// ```
pub fn spill_read_templates() -> spillway::NoticeTemplates {
    let t = spillway::NoticeTemplates::default();
    t.clone().with_read_hint(&spill_read_hint()).unwrap_or(t)
}

/// The registry's read hint: its [`tools::SpillRead`] tool, `spill_read`.
pub fn spill_read_hint() -> spillway::ReadHint {
    spillway::ReadHint::Tool {
        read: "spill_read".into(),
        grep: None,
    }
}

/// The `pointer` template for a registry that ships [`tools::SpillRead`]:
/// a JSON preview's markers point at `spill_read` with a `pointer`.
pub const SPILL_READ_POINTER: &str = "spill_read(id=\"{short_id}\", pointer=\"{pointer}\")";

/// One content block of a tool result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
#[non_exhaustive]
pub enum Block {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// Its MIME type.
        #[serde(rename = "mimeType")]
        mime_type: String,
        /// Its bytes, base64.
        data: String,
    },
}

impl Block {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Block::Text { text: text.into() }
    }

    /// The text, for a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Block::Text { text } => Some(text),
            Block::Image { .. } => None,
        }
    }
}

/// A tool call, as the model made it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCall {
    /// The call's id.
    pub id: String,
    /// The tool's name.
    pub tool: String,
    /// The arguments.
    pub args: Value,
    /// What the call is for (a card's title).
    pub description: Option<String>,
    /// When the call must have answered, whatever its tool's own limits
    /// say: a front end that spent part of a call's time before the call
    /// (listing the tools its program may call) gives the rest here. Not
    /// recorded.
    #[serde(skip)]
    pub deadline: Option<std::time::Instant>,
}

impl ToolCall {
    /// A call of `tool` with `args`.
    pub fn new(id: impl Into<String>, tool: impl Into<String>, args: Value) -> Self {
        ToolCall {
            id: id.into(),
            tool: tool.into(),
            args,
            description: None,
            deadline: None,
        }
    }

    /// With a deadline: the call answers by `at`, sooner than its tool's
    /// own limits when they reach past it.
    pub fn deadline(mut self, at: std::time::Instant) -> Self {
        self.deadline = Some(at);
        self
    }

    /// With a description.
    pub fn describe(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// What a caller gets back: the same content the durable event holds.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ToolResult {
    /// The call's id.
    pub call_id: String,
    /// The final content.
    pub content: Vec<Block>,
    /// Whether it is an error.
    pub is_error: bool,
    /// Facts about the content; never a copy of it.
    pub meta: ResultMeta,
}

/// Facts about a result's content.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ResultMeta {
    /// Objects the content references.
    pub spills: Vec<ContentId>,
    /// Bytes of the content before the spill stage bounded it.
    pub total_bytes: Option<u64>,
}

/// What a tool produced.
#[derive(Debug)]
#[non_exhaustive]
// One per call, moved once: boxing the outcome would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum Rendered {
    /// Content blocks held in memory.
    Blocks(Vec<Block>),
    /// Text that was streamed through a spill stage.
    Streamed(Outcome),
    /// A JSON value: the model gets it as compact JSON text (bounded as
    /// any text), a program gets the value itself.
    Json(Value),
}

/// Why a tool call failed. Becomes error content.
#[derive(Debug)]
#[non_exhaustive]
pub enum ToolError {
    /// A pre-execute policy said no.
    Denied(String),
    /// No tool has this name.
    UnknownTool(String),
    /// The arguments are wrong.
    InvalidArgs(String),
    /// A `run_code` program failed.
    CodeRunFailed(CodeRunFailed),
    /// The tool failed.
    Failed(String),
    /// The tool failed, and its output, streamed through the spill stage,
    /// says how (a command's output and its status line): the result is
    /// that bounded output, marked as an error.
    Output(Box<Outcome>),
    /// What the tool needs is gone (the MCP server behind it died): a
    /// program that called it fails, as a caught error would hide it.
    Unavailable(String),
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolError::Denied(r) => write!(f, "denied: {r}"),
            ToolError::UnknownTool(t) => write!(f, "unknown tool {t:?}"),
            ToolError::InvalidArgs(r) => write!(f, "invalid arguments: {r}"),
            ToolError::CodeRunFailed(e) => e.fmt(f),
            ToolError::Failed(r) | ToolError::Unavailable(r) => f.write_str(r),
            ToolError::Output(o) => f.write_str(&o.content),
        }
    }
}

impl std::error::Error for ToolError {}

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

/// The tool registry. Cheap to clone: its tools, policies and log are
/// shared.
#[derive(Clone)]
pub struct Registry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
    pre: Vec<Arc<dyn PrePolicy>>,
    post: Vec<Arc<dyn PostPolicy>>,
    spiller: Spiller,
    /// Policies of their own, by tool name, on the same store.
    per_tool: HashMap<String, Spiller>,
    values: Spiller,
    log: Arc<SessionLog>,
    skip: HashSet<String>,
}

/// Which tools a model is shown: the three presentation modes of Code
/// Mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Presentation {
    /// Every tool but `run_code`, called natively.
    Native,
    /// `run_code`, whose description carries the SDK declaration of the
    /// others, and the retrieval tools (those that read stored output:
    /// the skip list, by default `read`, `spill_read` and `spill_grep`).
    Ptc,
    /// Every tool, `run_code` with the SDK declaration too.
    Both,
}

impl std::str::FromStr for Presentation {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "native" => Ok(Presentation::Native),
            "ptc" => Ok(Presentation::Ptc),
            "both" => Ok(Presentation::Both),
            other => Err(format!(
                "unknown presentation {other:?}: native, ptc or both"
            )),
        }
    }
}

impl Registry {
    /// The SDK declaration of this registry's tools, as a `run_code`
    /// program calls them (`await tools.<name>(args)`): every tool but
    /// `run_code` itself, from its name, description and schemas (see
    /// [`sdk::declaration`]).
    pub fn sdk(&self) -> String {
        let mut top = Vec::new();
        let mut groups: BTreeMap<&str, Vec<sdk::ToolSpec>> = BTreeMap::new();
        for t in self.tools.values().filter(|t| t.name() != "run_code") {
            let mut spec = spec_of(t.as_ref());
            spec.name = t.member().to_owned();
            match t.group() {
                Some(g) => groups.entry(g).or_default().push(spec),
                None => top.push(spec),
            }
        }
        let groups: Vec<(String, Vec<sdk::ToolSpec>)> = groups
            .into_iter()
            .map(|(g, specs)| (g.to_owned(), specs))
            .collect();
        sdk::declaration_mixed(&top, &groups)
    }

    /// The tools a model is shown in `mode`, in name order; `run_code`'s
    /// description ends with the SDK declaration ([`Registry::sdk`]) in a
    /// `ts` code block.
    pub fn tools(&self, mode: Presentation) -> Vec<sdk::ToolSpec> {
        self.tools
            .values()
            .filter(|t| {
                let code = t.name() == "run_code";
                match mode {
                    Presentation::Native => !code,
                    Presentation::Ptc => code || self.skip.contains(t.name()),
                    Presentation::Both => true,
                }
            })
            .map(|t| {
                let mut spec = spec_of(t.as_ref());
                if t.name() == "run_code" {
                    let head = spec.description.take().unwrap_or_default();
                    spec.description = Some(format!("{head}\n\n```ts\n{}```", self.sdk()));
                }
                spec
            })
            .collect()
    }
}

fn spec_of(t: &dyn Tool) -> sdk::ToolSpec {
    sdk::ToolSpec {
        name: t.name().to_owned(),
        description: t.description().map(str::to_owned),
        input_schema: t.input_schema(),
        output_schema: t.output_schema(),
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.tools.keys().collect::<Vec<_>>())
            .field("skip", &self.skip)
            .finish()
    }
}

/// Builds a [`Registry`]. Its methods take and return `&mut Self`, as every
/// builder of the workspace does, so it can be set up in a chain or step by
/// step.
pub struct RegistryBuilder {
    inner: Registry,
}

impl RegistryBuilder {
    /// Adds a tool.
    pub fn tool(&mut self, tool: impl Tool + 'static) -> &mut Self {
        self.inner
            .tools
            .insert(tool.name().to_string(), Arc::new(tool));
        self
    }

    /// Adds a pre-execute policy (they run in the order added).
    pub fn pre(&mut self, p: impl PrePolicy + 'static) -> &mut Self {
        self.inner.pre.push(Arc::new(p));
        self
    }

    /// Adds a post-execute policy (they run in the order added).
    pub fn post(&mut self, p: impl PostPolicy + 'static) -> &mut Self {
        self.inner.post.push(Arc::new(p));
        self
    }

    /// A policy of its own for the tool `name` (a web fetch may get 8 KiB
    /// while `bash` gets 32 KiB); other tools keep the registry's. The
    /// tool's outer results, and the durable copies of its nested calls,
    /// are bounded by it; its objects go to the same store. A policy whose
    /// notice does not fit its budget with this store's paths is refused.
    ///
    /// # Errors
    ///
    /// [`spillway::PolicyError`] when the policy does not fit the store.
    pub fn policy(
        &mut self,
        name: impl Into<String>,
        policy: Policy,
    ) -> Result<&mut Self, spillway::PolicyError> {
        let spiller = Spiller::new(policy, self.inner.spiller.store().clone())?;
        self.inner.per_tool.insert(name.into(), spiller);
        Ok(self)
    }

    /// The tools whose results skip the spill stage. Default: `read`,
    /// `spill_read` and `spill_grep`.
    pub fn skip<I: IntoIterator<Item = S>, S: Into<String>>(&mut self, names: I) -> &mut Self {
        self.inner.skip = names.into_iter().map(Into::into).collect();
        self
    }

    /// The registry.
    pub fn build(&self) -> Registry {
        self.inner.clone()
    }
}

fn text_of(blocks: &[Block]) -> Option<String> {
    let mut out = String::new();
    for (i, b) in blocks.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(b.as_text()?);
    }
    Some(out)
}

/// The text of every text block, joined with newlines; `None` when there is
/// no text block.
fn joined_text(blocks: &[Block]) -> Option<String> {
    let texts: Vec<&str> = blocks.iter().filter_map(Block::as_text).collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

/// `blocks` with its text blocks replaced by one block of `preview`, where
/// the first text block was; every other block stays, in order.
fn replace_text(blocks: Vec<Block>, preview: String) -> Vec<Block> {
    let mut preview = Some(preview);
    blocks
        .into_iter()
        .filter_map(|b| match b.as_text() {
            Some(_) => preview.take().map(Block::text),
            None => Some(b),
        })
        .collect()
}

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

    fn precheck(&self, call: &ToolCall) -> Result<Arc<dyn Tool>, ToolError> {
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
    fn execute(&self, call: &ToolCall, signal: Cancel) -> (ToolResult, Result<(), LogError>) {
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
    fn record(
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
fn finish_bounded(r: Result<Outcome, spillway::FinishError>) -> (Outcome, bool) {
    match r {
        Ok(o) => (o, false),
        Err(e) => (e.into_outcome(), true),
    }
}

/// What a tool sees while it runs.
pub struct Cx<'a> {
    registry: &'a Registry,
    call: &'a ToolCall,
    call_id: String,
    nested: bool,
    /// What the scanners of a streamed output decided.
    scanned: Vec<PostDecision>,
    /// The call's cancellation: the signal to pass on to a command it runs.
    signal: Cancel,
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
