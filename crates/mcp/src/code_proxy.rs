//! `spillway mcp proxy --code-mode`: an MCP server to the client, a client
//! of one or several upstream MCP servers, and between them `run_code`, a
//! JavaScript program that calls the upstream tools
//! (`tools.<tool>(args)`, or `tools.<server>.<tool>(args)` with several).
//!
//! The client sees `run_code` (whose description carries the SDK
//! declaration of the upstream tools) and the spill tools; with
//! [`Presentation::Both`], the upstream tools too, bounded as the plain
//! proxy bounds them. A program's nested calls are upstream `tools/call`s
//! with their own request ids, concurrent when the program starts them
//! together; their progress and logging notifications are passed on. The
//! outer result is bounded once and recorded in the session log when
//! there is one. A server is started on first use, and again after it
//! died; the SDK is generated again after a server says its tool list
//! changed.

use std::collections::HashMap;
use std::io::{self, BufRead, Write};

use spillway_process::Cancel;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use spillway::Spiller;
use spillway_code::{JsRuntime, Limits};
use spillway_registry::events::SessionLog;
use spillway_registry::run_code::RunCode;
use spillway_registry::tools::{SpillGrep, SpillRead};
use spillway_registry::{Presentation, Registry, ToolCall};

use crate::front::{self, lock, Answer, Answers, CallRef};
use crate::rpc::{self, Out};
use crate::tools::ToolNames;
use crate::upstream::{Progress, ServerSpec, Upstream, UpstreamTool, Wait, UNBOUNDED};

/// How the Code Mode proxy runs.
#[derive(Debug)]
#[non_exhaustive]
pub struct CodeProxyOptions {
    /// The policy and store results are bounded by; its templates should
    /// name the spill tools ([`ToolNames::templates`]).
    pub spiller: Spiller,
    /// The names the spill tools get.
    pub names: ToolNames,
    /// The upstream servers.
    pub servers: Vec<ServerSpec>,
    /// What the client is shown: `Ptc` (the default) or `Both`.
    pub present: Presentation,
    /// The limits of each program.
    pub limits: Limits,
    /// Where each `run_code` call, its dispatch events and its result are
    /// appended.
    pub session_log: Option<Arc<SessionLog>>,
    /// How long a server has to exit once its input is closed, and again
    /// after SIGTERM, before SIGKILL.
    pub grace: Duration,
    /// A signal number set by the caller's signal handler (0 for none):
    /// the proxy then stops answering, stops the servers as the stdio
    /// transport prescribes, and returns.
    pub forward: Option<spillway_process::Cancel>,
    /// Where notes for a person go (an unreachable server, a renamed
    /// tool, a line that is not JSON); dropped by default.
    pub diagnostics: crate::Diagnostics,
}

impl CodeProxyOptions {
    /// Options for `servers`, with the spill tools named
    /// `{prefix}spill_read` and `{prefix}spill_grep`.
    pub fn new(spiller: Spiller, prefix: &str, servers: Vec<ServerSpec>) -> Self {
        CodeProxyOptions {
            spiller,
            names: ToolNames::with_prefix(prefix),
            servers,
            present: Presentation::Ptc,
            limits: Limits::default(),
            session_log: None,
            grace: Duration::from_secs(2),
            forward: None,
            diagnostics: crate::Diagnostics::none(),
        }
    }
}

struct Front {
    opts: CodeProxyOptions,
    upstreams: Vec<Arc<Upstream>>,
    /// The registry last built, and the tool lists it was built from (by
    /// identity: a server listed again gives a new list).
    registry: Mutex<Option<Built>>,
    log: Arc<SessionLog>,
    progress: Arc<Progress>,
    /// The clashes of names already said on stderr.
    said: Mutex<std::collections::HashSet<String>>,
    /// This session's name, in front of every call id it records.
    session: String,
}

/// A registry and what it was built from.
#[derive(Clone)]
struct Built {
    lists: Vec<Option<Arc<Vec<Value>>>>,
    registry: Registry,
    /// The upstream tools, by the name the client calls them by.
    direct: Arc<HashMap<String, Arc<UpstreamTool>>>,
    /// The servers whose tools could not be listed, and why: the model is
    /// told in `run_code`'s description, and they are tried again.
    unreachable: Vec<String>,
}

/// spillway's own tools in the proxy, whose names no upstream tool takes.
fn own_names(names: &ToolNames) -> Vec<String> {
    let mut own = vec!["run_code".to_owned()];
    for d in names.definitions() {
        if let Some(n) = d.get("name").and_then(Value::as_str) {
            own.push(n.to_owned());
        }
    }
    for t in ["spill_read", "spill_grep"] {
        own.push(t.to_owned());
    }
    own
}

impl Front {
    /// The registry over every server's tools, each server listed within
    /// `wait` (all begun at once, so their waits overlap); a server that
    /// cannot be listed in time is named in `unreachable` and tried again
    /// at the next listing. Built again only when a list changed.
    fn registry(&self, wait: Wait<'_>) -> Built {
        for u in &self.upstreams {
            u.begin();
        }
        let lists: Vec<Result<Arc<Vec<Value>>, String>> =
            self.upstreams.iter().map(|u| u.tools(wait)).collect();
        let same = |built: &Built| {
            built.lists.len() == lists.len()
                && built.lists.iter().zip(&lists).all(|(a, b)| match (a, b) {
                    (Some(a), Ok(b)) => Arc::ptr_eq(a, b),
                    (None, Err(_)) => true,
                    _ => false,
                })
        };
        let unreachable: Vec<String> = lists
            .iter()
            .filter_map(|l| l.as_ref().err().cloned())
            .collect();
        if let Some(built) = lock(&self.registry).as_ref().filter(|b| same(b)) {
            let mut built = built.clone();
            built.unreachable = unreachable;
            return built;
        }
        for why in &unreachable {
            self.opts.diagnostics.say(&format!("mcp proxy: {why}"));
        }
        let grouped = self.upstreams.len() > 1;
        let own = own_names(&self.opts.names);
        let mut direct = HashMap::new();
        let mut b = Registry::builder(self.opts.spiller.clone(), self.log.clone())
            .expect("the value policy is built from constants");
        for (u, list) in self.upstreams.iter().zip(&lists) {
            let Ok(list) = list else { continue };
            for mut t in UpstreamTool::from_list(u, &self.progress, list, grouped) {
                // A name spillway's own tools have, or one the server
                // already listed: the server's name goes in front
                // (`<server>_<tool>`), and the rename is said once.
                let taken = |name: &String| own.contains(name) || direct.contains_key(name);
                if taken(&t.name) {
                    // `<server>_<tool>`, then `<server>_<tool>_2`, …; in
                    // the server's group when there is one.
                    let full = |member: &str| match &t.group {
                        Some(g) => format!("{g}.{member}"),
                        None => member.to_owned(),
                    };
                    let mut member = format!("{}_{}", u.name(), t.remote);
                    let mut n = 2;
                    while taken(&full(&member)) {
                        member = format!("{}_{}_{n}", u.name(), t.remote);
                        n += 1;
                    }
                    let name = full(&member);
                    if lock(&self.said).insert(format!("{}\0{name}", u.name())) {
                        self.opts.diagnostics.say(&format!(
                            "mcp proxy: the MCP server {:?} lists a tool {:?}, a name already taken; it is called {name:?} here",
                            u.name(),
                            t.remote,
                        ));
                    }
                    t.member = member;
                    t.name = name;
                }
                let t = Arc::new(t);
                direct.insert(t.name.clone(), t.clone());
                b.tool(t);
            }
        }
        b.tool(SpillRead)
            .tool(SpillGrep)
            .tool(RunCode::new(JsRuntime::new(self.opts.limits.clone())));
        let built = Built {
            lists: lists.into_iter().map(Result::ok).collect(),
            registry: b.build(),
            direct: Arc::new(direct),
            unreachable,
        };
        *lock(&self.registry) = Some(built.clone());
        built
    }

    fn tools_list(&self, wait: Wait<'_>) -> Value {
        let built = self.registry(wait);
        let mut list = Vec::new();
        let more: String = built
            .unreachable
            .iter()
            .map(|why| format!("\n\nNot available now: {why}; its tools are missing above."))
            .collect();
        list.push(front::run_code_definition(&built.registry, &more));
        list.extend(self.opts.names.definitions());
        if self.opts.present == Presentation::Both {
            let mut tools: Vec<_> = built.direct.values().collect();
            // In name order, as the registry lists its own.
            tools.sort_by(|a, b| a.name.cmp(&b.name));
            for t in tools {
                let mut def = json!({"name": t.name, "inputSchema": t.input_schema});
                if let Some(d) = &t.description {
                    def["description"] = json!(d);
                }
                if let Some(s) = &t.output_schema {
                    def["outputSchema"] = s.clone();
                }
                list.push(def);
            }
        }
        json!({"tools": list})
    }

    fn reply(&self, method: &str, params: &Value, call: CallRef<'_>) -> Answer {
        if let Some(a) = front::common(method, params, &self.opts.spiller) {
            return a;
        }
        let store = self.opts.spiller.store();
        let budget = self.opts.spiller.policy().max_inline_bytes();
        match method {
            "initialize" => Ok(front::initialize(
                params,
                "spillway-code-mode",
                "run_code runs a JavaScript program that calls the tools its description declares, with await tools.<name>(args), and gets their complete results. Print what you need to see or return it: long output comes back bounded, the rest stored to read with the spill tools.",
                true,
            )),
            "tools/list" => Ok(self.tools_list(Wait {
                until: Instant::now() + self.opts.limits.timeout(),
                cancel: call.map(|c| c.1),
            })),
            "tools/call" => {
                let (name, args) = rpc::call_parts(params);
                if name == "run_code" {
                    // The call answers within the program's limit: listing
                    // the servers may take half of it, the program has the
                    // rest.
                    let started = Instant::now();
                    let limit = self.opts.limits.timeout();
                    let built = self.registry(Wait {
                        until: started + limit / 2,
                        cancel: call.map(|c| c.1),
                    });
                    // Nested calls' progress goes under the client's token.
                    let call_id = front::call_id(&self.session, call);
                    let token = params.pointer("/_meta/progressToken").cloned();
                    if let Some(t) = token.clone() {
                        self.progress.begin(&call_id, t);
                    }
                    let tc = ToolCall::new(call_id.clone(), "run_code", args)
                        .deadline(started + limit);
                    let result = front::call_registry(
                        &built.registry,
                        &tc,
                        call,
                        &self.opts.diagnostics,
                        "mcp proxy",
                    );
                    if token.is_some() {
                        self.progress.end(&call_id);
                    }
                    return Ok(result);
                }
                let signal = call.map(|c| c.1.clone()).unwrap_or_default();
                if let Some(v) = self.opts.names.call(store, budget, name, &args) {
                    return Ok(v);
                }
                let direct = (self.opts.present == Presentation::Both)
                    .then(|| {
                        let built = lock(&self.registry).clone();
                        built.and_then(|b| b.direct.get(name).cloned())
                    })
                    .flatten();
                match direct {
                    Some(t) => {
                        let mut upstream_params = json!({"name": t.remote, "arguments": args});
                        // The client's `_meta` (its progress token) goes along.
                        if let Some(meta) = params.get("_meta") {
                            upstream_params["_meta"] = meta.clone();
                        }
                        let wait = Wait {
                            until: Instant::now() + UNBOUNDED,
                            cancel: Some(&signal),
                        };
                        let mut result = t
                            .upstream
                            .request("tools/call", upstream_params, wait)
                            .map_err(|e| (rpc::INVALID_PARAMS, e.to_string()))?;
                        crate::bound_result(
                            &self.opts.spiller,
                            &self.opts.names,
                            &mut result,
                            t.output_schema.is_some(),
                        );
                        Ok(result)
                    }
                    None => Err((rpc::INVALID_PARAMS, format!("unknown tool: {name}"))),
                }
            }
            other => Err((rpc::METHOD_NOT_FOUND, format!("Method not found: {other}"))),
        }
    }
}

impl Answers for Front {
    fn answer(&self, method: &str, params: &Value, call: CallRef<'_>) -> Answer {
        self.reply(method, params, call)
    }
}

/// Serves the client until its input ends, then stops the upstream
/// servers.
///
/// # Errors
///
/// When the client's output fails.
pub fn run(
    opts: CodeProxyOptions,
    input: Box<dyn BufRead + Send>,
    output: Box<dyn Write + Send>,
) -> io::Result<()> {
    let forward = opts.forward.clone();
    let out = Out::new(output);
    let relay_out = out.clone();
    let progress = Arc::new(Progress::default());
    let routes = progress.clone();
    let relay: Arc<dyn Fn(&Value) + Send + Sync> = Arc::new(move |msg: &Value| {
        // A nested call's progress goes under its outer call's token; any
        // other (a direct call's, with `--present both`) passes as it is.
        if msg.get("method").and_then(Value::as_str) == Some("notifications/progress") {
            if let Some(m) = routes.translate(msg) {
                let _ = relay_out.send(&m);
                return;
            }
        }
        let _ = relay_out.send(msg);
    });
    let upstreams: Vec<Arc<Upstream>> = opts
        .servers
        .iter()
        .map(|s| {
            Arc::new(Upstream::new(
                s.clone(),
                relay.clone(),
                opts.grace,
                opts.diagnostics.clone(),
            ))
        })
        .collect();
    let log = opts
        .session_log
        .clone()
        .unwrap_or_else(|| Arc::new(SessionLog::discard()));
    let front = Arc::new(Front {
        opts,
        upstreams,
        registry: Mutex::new(None),
        log,
        progress,
        said: Mutex::default(),
        session: front::session_id(),
    });
    let signalled = || forward.as_ref().is_some_and(Cancel::is_cancelled);
    let mut next = front::client_lines(input, forward.clone());
    let failed = front::serve(front.clone(), &mut next, &out, &signalled);
    for u in &front.upstreams {
        u.shutdown();
    }
    failed
}

#[cfg(test)]
mod tests {
    use crate::upstream::ServerSpec;

    #[test]
    fn an_mcp_servers_file_gives_each_server_and_says_what_is_wrong() {
        let s = ServerSpec::from_config(
            r#"{"mcpServers": {"b": {"command": "npx", "args": ["-y", "pkg"], "env": {"K": "v"}}, "a": {"command": "srv"}}}"#,
        )
        .unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].name.as_str(), s[0].command.as_str()), ("a", "srv"));
        assert_eq!(s[1].args, ["-y", "pkg"]);
        assert_eq!(s[1].env.get("K").map(String::as_str), Some("v"));
        for (text, words) in [
            ("nope", "not JSON"),
            ("{}", "no \"mcpServers\""),
            (r#"{"mcpServers": {}}"#, "names no server"),
            (
                r#"{"mcpServers": {"x": {"url": "http://h"}}}"#,
                "mcpServers.x: needs a string \"command\"",
            ),
            (
                r#"{"mcpServers": {"x": {"command": "c", "args": [1]}}}"#,
                "mcpServers.x: \"args\" must be strings",
            ),
            (
                r#"{"mcpServers": {"x": {"command": "c", "env": {"K": 1}}}}"#,
                "\"env\" values must be strings",
            ),
        ] {
            let e = ServerSpec::from_config(text).unwrap_err();
            assert!(e.contains(words), "{text}: {e}");
        }
    }
}
