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

mod builder;
mod call;
pub mod card;
mod code_failure;
mod dsh;
pub mod events;
mod pipeline;
pub mod run_code;
pub mod sdk;
pub mod session;
mod tool;
pub mod tools;
pub mod turn;

pub use builder::RegistryBuilder;
pub use call::{Block, Rendered, ResultMeta, ToolCall, ToolError, ToolResult};
pub use tool::{
    Cx, NotDurable, OutputScanner, PostDecision, PostPolicy, PrePolicy, Tool, ToolStage,
};

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use events::SessionLog;
use spillway::Spiller;
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
pub const SPILL_READ_POINTER: &str = "spill_read(id=\"{short_id}\", pointer={pointer_json})";

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
