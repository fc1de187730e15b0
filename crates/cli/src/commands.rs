//! The commands.

use std::fs::File;
use std::io::{self, Read, Seek};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command as Process, Stdio};
use std::time::SystemTime;

use anyhow::{anyhow, Context, Result};
use serde_json::json;
use spillway::References;
use spillway::{
    ByteSize, ContentId, GcOptions, HumanDuration, IdPrefix, Outcome, Selection, Spiller, Store,
};
use std::sync::Arc;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use spillway_process::{pump, run_merged, widen_pipe, Cancel, RunError, RunOptions};

use spillway_registry::events::{LogSync, SessionLog};
use spillway_registry::ToolCall;

use super::args::{
    ApplyArgs, Cli, CodeArgs, Command, ConfigArgs, GcArgs, GrepArgs, JsonArg, LimitArgs,
    McpCommand, McpProxyArgs, McpServeArgs, PresentArg, RunArgs, ShowArgs, VerifyArgs, ViewArgs,
};
use super::config::{self, Effective};
use super::emit;
use super::progress::Progress;

pub fn run(cli: Cli) -> Result<i32> {
    // Only the commands that apply a policy read policy settings: gc,
    // verify, show, ls and stats work while a harness's settings are wrong.
    let flags = match &cli.command {
        Command::Apply(a) => Some(a.policy.to_config()),
        Command::Run(a) => Some(a.policy.to_config()),
        Command::Code(a) => Some(a.policy.to_config()),
        Command::Config(a) => Some(a.policy.to_config()),
        Command::Mcp(McpCommand::Proxy(a)) => Some(a.policy.to_config()),
        Command::Mcp(McpCommand::Serve(a)) => Some(a.policy.to_config()),
        _ => None,
    };
    // A flag whose value is out of range is a bad argument (exit 2), told
    // apart from a bad file or environment setting (exit 1). The budgets
    // are checked with the store, whose name and paths the notice prints.
    let bad_flag = |e: &dyn std::fmt::Display| {
        eprintln!("spillway: invalid argument: {e} (see spillway --help)");
        Ok(2)
    };
    if let Some(Err(e)) = flags.as_ref().map(spillway::PolicyConfig::build) {
        if !e.is_budget_too_small() {
            return bad_flag(&e);
        }
    }
    let limit_flags = match &cli.command {
        Command::Code(a) => Some(&a.limits),
        Command::Mcp(McpCommand::Serve(a)) => Some(&a.limits),
        Command::Mcp(McpCommand::Proxy(a)) => Some(&a.limits),
        _ => None,
    };
    if let Some(Err(e)) = limit_flags.map(limits) {
        return bad_flag(&e);
    }
    let eff = config::load(cli.store, cli.config, flags.as_ref())?;
    let store = Store::open_url(&eff.store.to_string_lossy()).context("store")?;
    if let Some(flags) = &flags {
        let names = eff.names_store() && !matches!(cli.command, Command::Config(_));
        if let Err(e) = flags.build_for_store(&store, &config::read_hint(&store, names)) {
            return bad_flag(&e);
        }
    }
    let quiet = cli.quiet;
    match cli.command {
        Command::Apply(args) => apply(&eff, &store, args, quiet),
        Command::Run(args) => run_command(&eff, &store, args),
        Command::Show(args) => show(&store, args),
        Command::Grep(args) => grep(&eff, &store, args),
        Command::Ls(args) => ls(&store, args),
        Command::Verify(args) => verify(&store, args, quiet),
        Command::Gc(args) => gc(&store, args, quiet),
        Command::Stats(args) => stats(&store, args),
        Command::Config(args) => show_config(&eff, &store, args),
        Command::Mcp(McpCommand::Proxy(args)) => mcp_proxy(&eff, &store, args),
        Command::Mcp(McpCommand::Serve(args)) => mcp_serve(&eff, &store, args),
        Command::Code(args) => code(&eff, &store, args),
        Command::View(args) => view(&store, args),
    }
}

fn view(store: &Store, args: ViewArgs) -> Result<i32> {
    let mut builder = spillway_view::Viewer::builder()
        .store(store.clone())
        .port(args.port);
    for s in &args.sessions {
        builder = builder.session(s);
    }
    let viewer = builder.build().context("view")?;
    let url = viewer.url();
    // Installed before the address is printed: whoever reads it may stop
    // the viewer at once.
    let cancel = stop_signals("view")?;
    emit(format!("spillway view: {url}\n").as_bytes())?;
    let mut browser = args.open.then(|| open_browser(&url)).flatten();
    let served = viewer.serve(cancel.clone());
    if let Some(child) = browser.as_mut() {
        // The opener hands the address to a browser and exits; one that
        // has not is not left behind.
        if !matches!(child.try_wait(), Ok(Some(_))) {
            let _ = child.kill();
        }
        let _ = child.wait();
    }
    served.context("view")?;
    Ok(exit_for(&cancel))
}

/// Starts the system's opener (`$BROWSER`, else `xdg-open`) on `url`; a
/// note on stderr when there is none.
fn open_browser(url: &str) -> Option<std::process::Child> {
    let opener = std::env::var_os("BROWSER")
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| "xdg-open".into());
    match std::process::Command::new(&opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Ok(child) => Some(child),
        Err(e) => {
            eprintln!(
                "spillway: view: cannot open a browser with {}: {e}; open the address above",
                opener.to_string_lossy()
            );
            None
        }
    }
}

/// The policy for MCP: its read hints name the tools the client has.
fn mcp_spiller(eff: &Effective, store: &Store, names: &spillway_mcp::ToolNames) -> Result<Spiller> {
    let mut config = eff.policy_config()?.clone();
    let t = names.templates();
    let notice = config.notice.get_or_insert_with(Default::default);
    notice.stored = Some(t.stored.as_str().to_owned());
    notice.pointer = Some(t.pointer.as_str().to_owned());
    let policy = config
        .build_for_store(store, &config::read_hint(store, false))
        .context("policy")?;
    Spiller::new(policy, store.clone()).context("policy")
}

fn mcp_proxy(eff: &Effective, store: &Store, args: McpProxyArgs) -> Result<i32> {
    let names = spillway_mcp::ToolNames::with_prefix(&args.tool_prefix);
    let spiller = mcp_spiller(eff, store, &names)?;
    if args.code_mode && args.present != PresentArg::Native {
        return mcp_code_proxy(spiller, args);
    }
    if args.command.is_empty() {
        eprintln!(
            "spillway: mcp proxy needs the server's command after `--` (see spillway --help)"
        );
        return Ok(2);
    }
    let mut opts = spillway_mcp::proxy::ProxyOptions::new(spiller, &args.tool_prefix);
    opts.diagnostics = to_stderr();
    opts.names = names;
    // SIGTERM and Ctrl-C (how harnesses stop MCP servers) are passed on to
    // the server, which is then stopped as the stdio transport prescribes.
    opts.forward = Some(stop_signals("mcp proxy")?);
    opts.grace = args.kill_grace.get();
    let mut cmd = std::process::Command::new(&args.command[0]);
    cmd.args(&args.command[1..]);
    let stdin = Box::new(io::BufReader::with_capacity(1 << 20, io::stdin()));
    let stdout = Box::new(io::stdout());
    let status = match spillway_mcp::proxy::run(opts, &mut cmd, stdin, stdout) {
        Ok(s) => s,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            eprintln!(
                "spillway: mcp proxy: cannot start {}: {e}",
                args.command[0].to_string_lossy()
            );
            return Ok(127);
        }
        Err(e) => return Err(e).context("mcp proxy"),
    };
    use std::os::unix::process::ExitStatusExt;
    Ok(status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
}

fn mcp_serve(eff: &Effective, store: &Store, args: McpServeArgs) -> Result<i32> {
    let names = spillway_mcp::ToolNames::with_prefix("");
    let spiller = mcp_spiller(eff, store, &names)?;
    let mut opts = spillway_mcp::server::ServeOptions::new(spiller);
    opts.diagnostics = to_stderr();
    opts.limits = limits(&args.limits)?;
    opts.session_log = session_log(args.session_log.as_deref())?;
    // SIGTERM, SIGINT and SIGHUP (how harnesses stop MCP servers): every
    // call is cancelled and the commands it runs are killed, then spillway
    // exits.
    let forward = stop_signals("mcp serve")?;
    opts.forward = Some(forward.clone());
    let stdin = Box::new(io::BufReader::with_capacity(1 << 20, io::stdin()));
    spillway_mcp::server::serve_with(&opts, stdin, Box::new(io::stdout())).context("mcp serve")?;
    Ok(exit_for(&forward))
}

/// The MCP servers' notes for a person, on stderr: the binary is where
/// they become text.
fn to_stderr() -> spillway_mcp::Diagnostics {
    spillway_mcp::Diagnostics::new(|note| eprintln!("spillway: {note}"))
}

/// The request to stop that SIGINT, SIGTERM and SIGHUP raise, each with
/// its number: how a command that must stop its children first learns it
/// was asked to stop.
fn stop_signals(who: &str) -> Result<Cancel> {
    let cancel = Cancel::new();
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        signal_hook::flag::register_usize(sig, cancel.os_flag(), sig as usize)
            .with_context(|| format!("{who}: install signal handlers"))?;
    }
    Ok(cancel)
}

/// The exit status after [`stop_signals`]: 0, or 128 + the signal.
fn exit_for(cancel: &Cancel) -> i32 {
    cancel.signal().map_or(0, |sig| 128 + sig)
}

fn mcp_code_proxy(spiller: Spiller, args: McpProxyArgs) -> Result<i32> {
    use spillway_mcp::ServerSpec;
    let servers = match (&args.servers, args.command.is_empty()) {
        (Some(file), true) => {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("read {}", file.display()))?;
            ServerSpec::from_config(&text).map_err(|e| anyhow!("{}: {e}", file.display()))?
        }
        (None, false) => {
            let command = args.command[0].to_string_lossy().into_owned();
            let name = std::path::Path::new(&command)
                .file_name()
                .map_or("server".into(), |n| n.to_string_lossy().into_owned());
            let rest = args.command[1..]
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            vec![ServerSpec::new(name, command, rest)]
        }
        (Some(_), false) => {
            eprintln!("spillway: mcp proxy --code-mode takes --servers FILE or a command after `--`, not both (see spillway --help)");
            return Ok(2);
        }
        (None, true) => {
            eprintln!("spillway: mcp proxy --code-mode needs --servers FILE or the server's command after `--` (see spillway --help)");
            return Ok(2);
        }
    };
    let mut opts =
        spillway_mcp::code_proxy::CodeProxyOptions::new(spiller, &args.tool_prefix, servers);
    opts.diagnostics = to_stderr();
    opts.present = match args.present {
        PresentArg::Both => spillway_registry::Presentation::Both,
        _ => spillway_registry::Presentation::Ptc,
    };
    opts.limits = limits(&args.limits)?;
    opts.session_log = session_log(args.session_log.as_deref())?;
    opts.grace = args.kill_grace.get();
    // SIGTERM and Ctrl-C (how harnesses stop MCP servers): the servers are
    // stopped as the stdio transport prescribes, then spillway exits.
    let forward = stop_signals("mcp proxy")?;
    opts.forward = Some(forward.clone());
    let stdin = Box::new(io::BufReader::with_capacity(1 << 20, io::stdin()));
    spillway_mcp::code_proxy::run(opts, stdin, Box::new(io::stdout())).context("mcp proxy")?;
    Ok(exit_for(&forward))
}

/// The limits of a program, checked.
fn limits(a: &LimitArgs) -> Result<spillway_code::Limits, spillway_code::LimitsError> {
    let mut b = spillway_code::Limits::builder();
    b.timeout(a.timeout.get())
        .memory(usize::try_from(a.memory.get()).unwrap_or(usize::MAX))
        .stack(usize::try_from(a.stack.get()).unwrap_or(usize::MAX))
        .concurrency(a.concurrency);
    b.build()
}

fn session_log(path: Option<&std::path::Path>) -> Result<Option<Arc<SessionLog>>> {
    path.map(|p| {
        SessionLog::open(p, LogSync::EveryEvent)
            .map(Arc::new)
            .with_context(|| format!("session log {}", p.display()))
    })
    .transpose()
}

/// The largest program `spillway code` reads: 16 MiB.
const MAX_PROGRAM: u64 = 16 << 20;

fn code(eff: &Effective, store: &Store, args: CodeArgs) -> Result<i32> {
    let limits = limits(&args.limits)?;
    let (name, mut reader): (String, Box<dyn Read>) = match args.file.as_deref() {
        Some(p) if p.as_os_str() != "-" => (
            p.display().to_string(),
            Box::new(File::open(p).with_context(|| format!("open {}", p.display()))?),
        ),
        _ => ("stdin".to_owned(), Box::new(io::stdin())),
    };
    let mut bytes = Vec::new();
    reader
        .by_ref()
        .take(MAX_PROGRAM + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("read {name}"))?;
    if bytes.len() as u64 > MAX_PROGRAM {
        return Err(anyhow!("{name}: a program is at most 16 MiB"));
    }
    let program = String::from_utf8(bytes).map_err(|e| {
        anyhow!(
            "{name}: the program is not UTF-8 (byte {})",
            e.utf8_error().valid_up_to()
        )
    })?;
    let log = session_log(args.session_log.as_deref())?;
    let spiller = spiller(eff, store)?;
    let registry = spillway_mcp::server::code_registry(
        &spiller,
        log.unwrap_or_else(|| Arc::new(SessionLog::discard())),
        limits,
    )
    .context("policy")?;
    // Ctrl-C, SIGTERM and SIGHUP stop the program and what it runs; the
    // output so far is printed.
    let signal = stop_signals("code")?;
    let millis = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let call = ToolCall::new(
        format!("code-{millis}-{}", std::process::id()),
        "run_code",
        json!({ "code": program }),
    );
    let (result, recorded) = match registry.call_with_signal(&call, signal) {
        Ok(r) => (r, None),
        Err(e) => (*e.result, Some(e.error)),
    };
    let mut text = result
        .content
        .iter()
        .filter_map(|b| b.as_text())
        .collect::<Vec<_>>()
        .join("\n");
    // Always one newline after the result, as `echo` prints: the output
    // less its last newline is the result, to the byte.
    text.push('\n');
    emit(text.as_bytes())?;
    if let Some(e) = recorded {
        return Err(anyhow!("session log: {e}"));
    }
    Ok(i32::from(result.is_error))
}

fn spiller(eff: &Effective, store: &Store) -> Result<Spiller> {
    // The read hint must work pasted as it is: a store that is not the
    // default one is named in it.
    let policy = eff.policy(store, eff.names_store())?;
    Spiller::new(policy, store.clone()).context("policy")
}

/// Finishes a stage; a store failure in fail mode still yields the preview.
fn finish(stage: spillway::Stage) -> (Outcome, Option<String>) {
    match stage.finish() {
        Ok(o) => (o, None),
        Err(e) => {
            let msg = e.to_string();
            (e.into_outcome(), Some(msg))
        }
    }
}

fn apply(eff: &Effective, store: &Store, args: ApplyArgs, quiet: bool) -> Result<i32> {
    let spiller = spiller(eff, store)?;
    let mut progress = Progress::new("apply", quiet);
    let (input, name) = open_input(args.file.as_deref(), &mut progress)?;
    let done = match input {
        Input::Whole(buf) => {
            progress.clear();
            spiller.apply(&buf)
        }
        Input::Stream {
            read,
            mut rest,
            size,
        } => {
            let mut stage = spiller.stage();
            stage.feed(&read);
            let before = read.len() as u64;
            pump(&mut rest, &mut |buf| Ok(stage.feed_buf(buf)), &mut |done| {
                progress.bytes(before + done, size)
            })
            .with_context(|| format!("read {name}"))?;
            progress.clear();
            stage.finish()
        }
    };
    let (outcome, failure) = match done {
        Ok(o) => (o, None),
        Err(e) => {
            let msg = e.to_string();
            (e.into_outcome(), Some(msg))
        }
    };
    if args.json {
        let mut text = serde_json::to_string(&outcome)?;
        text.push('\n');
        emit(text.as_bytes())?;
    } else {
        emit(outcome.content.as_bytes())?;
    }
    match failure {
        Some(msg) => Err(anyhow!(msg)),
        None => Ok(0),
    }
}

/// `apply` reads a regular input file of at most this many bytes whole.
const WHOLE_UP_TO: u64 = 64 << 20;

/// `apply`'s input, as it will be applied.
enum Input {
    /// All of it, read into memory.
    Whole(Vec<u8>),
    /// What was read of it so far, and the rest to stream.
    Stream {
        read: Vec<u8>,
        rest: Box<dyn Read>,
        size: Option<u64>,
    },
}

impl Input {
    /// All of it to stream, `size` bytes when known.
    fn streamed(rest: Box<dyn Read>, size: Option<u64>) -> Input {
        Input::Stream {
            read: Vec::new(),
            rest,
            size,
        }
    }
}

/// `apply`'s input and its name. A regular file (named, or as stdin from
/// its offset) of at most [`WHOLE_UP_TO`] bytes is read whole, so the
/// stage has the whole input and its id is known before anything is
/// stored (written while hashed, a copy found at once, on S3 straight to
/// its key). It is never mapped: a mapping of a file that another process
/// rewrites or truncates could hand the store bytes other than the ones
/// hashed, or end in SIGBUS. A longer file, one that grows past the limit
/// while it is read, and a pipe are streamed. Stdin is left at the end of
/// what was read, as any reader leaves it.
fn open_input(file: Option<&std::path::Path>, progress: &mut Progress) -> Result<(Input, String)> {
    let (file, name) = match file {
        Some(p) if p.as_os_str() != "-" => (
            Some(File::open(p).with_context(|| format!("open {}", p.display()))?),
            p.display().to_string(),
        ),
        _ => (stdin_file(), "stdin".to_owned()),
    };
    let Some(mut f) = file else {
        let stdin = io::stdin();
        widen_pipe(&stdin);
        return Ok((Input::streamed(Box::new(stdin), None), name));
    };
    let left = f.metadata().ok().and_then(|m| {
        let at = f.stream_position().ok()?;
        m.is_file().then(|| m.len().saturating_sub(at))
    });
    let Some(left) = left.filter(|&n| n <= WHOLE_UP_TO) else {
        return Ok((Input::streamed(Box::new(f), left), name));
    };
    let mut read = Vec::with_capacity(left as usize + 1);
    (&mut f)
        .take(WHOLE_UP_TO + 1)
        .read_to_end(&mut read)
        .with_context(|| format!("read {name}"))?;
    progress.bytes(read.len() as u64, Some(read.len() as u64));
    if read.len() as u64 <= WHOLE_UP_TO {
        return Ok((Input::Whole(read), name));
    }
    // It grew while it was read: what was read, then the rest.
    let rest = Box::new(f);
    Ok((
        Input::Stream {
            read,
            rest,
            size: None,
        },
        name,
    ))
}

/// Stdin as a file of its own, when it is a regular file (`< FILE`).
fn stdin_file() -> Option<File> {
    use std::os::fd::AsFd;
    let fd = io::stdin().as_fd().try_clone_to_owned().ok()?;
    let file = File::from(fd);
    file.metadata().ok()?.is_file().then_some(file)
}

fn run_command(eff: &Effective, store: &Store, args: RunArgs) -> Result<i32> {
    use std::io::IsTerminal;
    let spiller = spiller(eff, store)?;
    let program = &args.command[0];
    let shown = program.to_string_lossy().into_owned();
    let mut cmd = Process::new(program);
    cmd.args(&args.command[1..]).stdin(Stdio::inherit());
    // Ctrl-C, SIGTERM (`timeout`, a supervisor) and SIGHUP are passed on to
    // the command; spillway itself finishes the stage, prints the bounded
    // preview and exits 128 + N, so the output so far is stored and said.
    let forward = stop_signals("run")?;
    let mut opts = RunOptions::default();
    opts.drain = args.drain.get();
    opts.timeout = args.timeout.map(HumanDuration::get);
    opts.forward = Some(forward);
    opts.kill_grace = args.kill_grace.get();
    // A command that may read the terminal stays in spillway's process
    // group (a background group reading the terminal would be stopped).
    opts.own_group = !io::stdin().is_terminal();
    let mut stage = spiller.stage();
    let finished = match run_merged(&mut cmd, &opts, &mut stage, &mut |_| {}) {
        Ok(f) => f,
        Err(RunError::Spawn(e)) => {
            let code = match e.kind() {
                io::ErrorKind::NotFound => 127,
                _ => 126,
            };
            eprintln!("spillway: run: cannot start {shown}: {e}");
            return Ok(code);
        }
        Err(e) => return Err(e).context("run"),
    };
    let status = finished.status;
    let (outcome, failure) = finish(stage);
    let signal = status.signal();
    let mut code = spillway_process::exit_code(status);
    if finished.timed_out {
        let limit = args.timeout.map(|t| t.to_string()).unwrap_or_default();
        eprintln!("spillway: run: {shown} timed out after {limit}; its process group was killed");
        code = 124;
    }
    if let Some(sig) = finished.forwarded {
        code = 128 + sig;
        if finished.killed {
            eprintln!(
                "spillway: run: {shown} did not stop on signal {sig}; its process group was killed \
                 (after {} or a second signal); the output so far is kept",
                args.kill_grace
            );
        }
    }
    if finished.output_cut {
        eprintln!(
            "spillway: run: {shown} exited, but a process it started still holds its output; \
             stopped reading after {}: later output is not included",
            args.drain
        );
    }
    let text = if args.json {
        let mut v = serde_json::to_value(&outcome)?;
        v["exit_code"] = json!(status.code());
        v["signal"] = json!(signal);
        v["timed_out"] = json!(finished.timed_out);
        v["output_cut"] = json!(finished.output_cut);
        let mut text = serde_json::to_string(&v)?;
        text.push('\n');
        text
    } else {
        outcome.content
    };
    // The command's status is the answer, whoever reads the text: a reader
    // that went away (`| head -1`, `| true`) must not turn a failed build
    // into a success. Other write errors are reported, and still exit with
    // the command's status when it failed.
    if let Err(e) = emit(text.as_bytes()) {
        if !super::is_broken_pipe(&e) {
            eprintln!("spillway: run: write output: {}", super::one_line(&e));
            if code == 0 {
                return Ok(1);
            }
        }
    }
    if let Some(msg) = failure {
        eprintln!("spillway: run: {msg}");
        if code == 0 {
            return Ok(1);
        }
    }
    Ok(code)
}

fn show(store: &Store, args: ShowArgs) -> Result<i32> {
    let Some(id) = object_id(store, &args.id)? else {
        return Ok(2);
    };
    let stdout = io::stdout();
    let mut out = io::BufWriter::with_capacity(1 << 20, stdout.lock());
    if let Some(p) = &args.pointer {
        let pointer: spillway::JsonPointer = match p.parse() {
            Ok(p) => p,
            Err(e) => {
                eprintln!("spillway: invalid argument: --pointer {p:?}: {e}");
                return Ok(2);
            }
        };
        match store.read_pointer(&id, &pointer, &mut out) {
            Ok(_) => {}
            Err(e) if e.kind() == spillway::StoreErrorKind::OutOfRange => {
                eprintln!("spillway: show: {e}");
                return Ok(1);
            }
            Err(e) => return Err(e.into()),
        }
        io::Write::write_all(&mut out, b"\n")?;
        io::Write::flush(&mut out)?;
        return Ok(0);
    }
    let sel = match (args.lines, args.bytes) {
        (Some(l), _) => Selection::Lines(l),
        (_, Some(b)) => Selection::Bytes(b),
        _ => Selection::All,
    };
    let report = store.read_into(&id, &sel, &mut out)?;
    io::Write::flush(&mut out)?;
    // A range past the end (a notice's range into an object cut at
    // max_spill_bytes) is said, not passed over.
    if let Some(missing) = report.missing(&sel) {
        eprintln!(
            "spillway: show: {missing} are past the end of {id}, which holds {} bytes in {} lines (an output cut at max_spill_bytes when it was stored ends there)",
            report.bytes, report.lines
        );
        return Ok(1);
    }
    Ok(0)
}

/// An id as given: whole, or a prefix resolved in the store; `None` (after
/// saying why) for one that does not parse.
fn object_id(store: &Store, text: &str) -> Result<Option<ContentId>> {
    if let Ok(id) = text.parse::<ContentId>() {
        return Ok(Some(id));
    }
    match text.parse::<IdPrefix>() {
        Ok(prefix) => Ok(Some(store.resolve(&prefix)?)),
        Err(e) => {
            eprintln!("spillway: invalid argument: {e} (see spillway --help)");
            Ok(None)
        }
    }
}

/// Room kept in the budget for the continuation line.
const CONTINUATION_RESERVE: usize = 256;

fn grep(eff: &Effective, store: &Store, args: GrepArgs) -> Result<i32> {
    let Some(id) = object_id(store, &args.id)? else {
        return Ok(2);
    };
    let regex = match spillway::GrepPattern::new(&args.pattern, args.ignore_case) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("spillway: invalid argument: the pattern does not parse: {e}");
            return Ok(2);
        }
    };
    // The continuation line repeats the command: its own size is kept out
    // of the listing's budget.
    let mut again = String::from("spillway ");
    if eff.names_store() {
        again.push_str(&format!(
            "--store {} ",
            spillway::shell_quote(&store.location().to_string())
        ));
    }
    again.push_str(&format!(
        "grep {} {}",
        id.to_string().get(..23).unwrap_or_default(),
        spillway::shell_quote(&args.pattern)
    ));
    let before = args.before_context.or(args.context).unwrap_or(0);
    let after = args.after_context.or(args.context).unwrap_or(0);
    let context_asked =
        args.context.is_some() || args.before_context.is_some() || args.after_context.is_some();
    if before > 0 || (context_asked && after == 0) {
        again.push_str(&format!(" -B {before}"));
    }
    if after > 0 {
        again.push_str(&format!(" -A {after}"));
    }
    if args.ignore_case {
        again.push_str(" -i");
    }
    if let Some(m) = args.max_count {
        again.push_str(&format!(" --max-count {m}"));
    }
    let budget = usize::try_from(args.max_bytes.get()).unwrap_or(usize::MAX);
    if budget != spillway::GrepOptions::default().max_bytes {
        // The next page is as large as this one.
        again.push_str(&format!(" --max-bytes {budget}"));
    }
    let reserve = CONTINUATION_RESERVE + again.len();
    if !args.json && budget < reserve + 64 {
        eprintln!(
            "spillway: invalid argument: --max-bytes {} leaves no room for lines beside the continuation note: use at least {}",
            args.max_bytes,
            reserve + 64
        );
        return Ok(2);
    }
    let mut opts = spillway::GrepOptions::default();
    opts.before = before;
    opts.after = after;
    opts.context = context_asked;
    opts.max_count = args.max_count;
    opts.from_line = args.from_line;
    opts.max_bytes = if args.json { budget } else { budget - reserve };
    let report = store.grep(&id, &regex, &opts)?;
    if args.json {
        let mut v = serde_json::to_value(&report)?;
        v["id"] = json!(id);
        v["continue"] = json!(report.next_line.map(|n| format!("{again} --from-line {n}")));
        emit(format!("{}\n", serde_json::to_string(&v)?).as_bytes())?;
    } else {
        let mut out = report.printed(opts.separates());
        if let Some(n) = report.next_line {
            out.push_str(&format!(
                "[spillway: {} more matching line(s) after this listing; continue with: {again} --from-line {n}]\n",
                report.more_matches
            ));
        }
        emit(out.as_bytes())?;
    }
    Ok(if report.matches + report.more_matches > 0 {
        0
    } else {
        1
    })
}

fn age(t: Option<SystemTime>) -> String {
    let secs = t
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .map_or(0, |d| d.as_secs());
    HumanDuration::new(std::time::Duration::from_secs(secs)).to_string()
}

fn ls(store: &Store, args: JsonArg) -> Result<i32> {
    let objects = store.list()?;
    if args.json {
        let rows: Vec<_> = objects
            .iter()
            .map(|o| {
                json!({
                    "id": o.id, "path": o.path, "bytes": o.bytes,
                    "stored_bytes": o.stored_bytes, "compression": o.encoding.name(),
                    "age_seconds": o.modified.and_then(|t| SystemTime::now().duration_since(t).ok()).map(|d| d.as_secs()),
                })
            })
            .collect();
        emit(format!("{}\n", serde_json::to_string(&rows)?).as_bytes())?;
        return Ok(0);
    }
    let mut out = String::new();
    if !objects.is_empty() {
        out.push_str(&format!(
            "{:<71}  {:>10}  {:>10}  {:<4}  {}\n",
            "ID", "SIZE", "STORED", "COMP", "AGE"
        ));
    }
    for o in &objects {
        out.push_str(&format!(
            "{:<71}  {:>10}  {:>10}  {:<4}  {}\n",
            o.id.to_string(),
            ByteSize::new(o.bytes).to_string(),
            ByteSize::new(o.stored_bytes).to_string(),
            o.encoding.name(),
            age(o.modified)
        ));
    }
    emit(out.as_bytes())?;
    Ok(0)
}

fn verify(store: &Store, args: VerifyArgs, quiet: bool) -> Result<i32> {
    let mut progress = Progress::new("verify", quiet);
    let report = store.verify_all(args.grace.get(), &mut |d, t| progress.items(d, t))?;
    progress.clear();
    if args.json {
        emit(format!("{}\n", serde_json::to_string(&report)?).as_bytes())?;
    } else {
        let mut out = format!(
            "verified {} objects ({}); {} corrupt; removed {} temp files of dead writers\n",
            report.ok,
            ByteSize::new(report.ok_bytes),
            report.corrupt.len(),
            report.temp_removed
        );
        for c in &report.corrupt {
            let to = c
                .quarantined
                .as_ref()
                .map_or("could not be moved".to_string(), |p| {
                    format!("moved to {}", p.display())
                });
            out.push_str(&format!("corrupt {}: {} ({to})\n", c.id, c.reason));
        }
        for m in &report.not_regular {
            let to = m
                .quarantined
                .as_ref()
                .map_or("could not be moved".to_string(), |p| {
                    format!("moved to {}", p.display())
                });
            out.push_str(&format!(
                "not a regular object: {} is a {} ({to})\n",
                m.path.display(),
                m.kind
            ));
        }
        emit(out.as_bytes())?;
    }
    let clean = report.corrupt.is_empty() && report.not_regular.is_empty();
    Ok(if clean { 0 } else { 1 })
}

fn gc(store: &Store, args: GcArgs, quiet: bool) -> Result<i32> {
    let mut keep = References::default();
    for path in &args.keep_referenced_by {
        let bytes = std::fs::read(path).with_context(|| format!("read {}", path.display()))?;
        keep.add_text(&String::from_utf8_lossy(&bytes));
    }
    let mut opts = GcOptions::default();
    opts.max_bytes = args.max_bytes.map(ByteSize::get);
    opts.max_age = args.max_age.map(HumanDuration::get);
    opts.keep = keep;
    opts.dry_run = args.dry_run;
    opts.temp_grace = args.grace.get();
    let mut progress = Progress::new("gc", quiet);
    let report = store.gc(&opts, &mut |d, t| progress.items(d, t))?;
    progress.clear();
    if args.json {
        emit(format!("{}\n", serde_json::to_string(&report)?).as_bytes())?;
        return Ok(0);
    }
    let verb = if args.dry_run {
        "would remove"
    } else {
        "removed"
    };
    let mut out = String::new();
    for o in &report.removed {
        out.push_str(&format!(
            "{verb} {} ({}, unused for {})\n",
            o.id,
            ByteSize::new(o.stored_bytes),
            age(o.modified)
        ));
    }
    out.push_str(&format!(
        "{verb} {} objects, freeing {}; kept {} referenced; {} objects ({}) remain\n",
        report.removed.len(),
        ByteSize::new(report.freed_bytes),
        report.kept_referenced,
        report.remaining_objects,
        ByteSize::new(report.remaining_bytes)
    ));
    emit(out.as_bytes())?;
    Ok(0)
}

fn stats(store: &Store, args: JsonArg) -> Result<i32> {
    let s = store.stats()?;
    if args.json {
        let mut v = serde_json::to_value(&s)?;
        v["ratio"] = json!(s.ratio());
        emit(format!("{v}\n").as_bytes())?;
        return Ok(0);
    }
    let out = format!(
        "objects:            {} ({} zstd, {} raw)\n\
         stored on disk:     {}\n\
         before compression: {}\n\
         compression ratio:  {:.2}x\n\
         temp files:         {}\n\
         quarantined:        {}\n\
         dedup hits:         not recorded\n",
        s.objects,
        s.zstd_objects,
        s.objects - s.zstd_objects,
        ByteSize::new(s.stored_bytes),
        ByteSize::new(s.bytes),
        s.ratio(),
        s.temp_files,
        s.quarantined
    );
    emit(out.as_bytes())?;
    Ok(0)
}

/// A TOML basic string, escaped.
fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

fn show_config(eff: &Effective, store: &Store, args: ConfigArgs) -> Result<i32> {
    // The settings as configured: the read hint as written, not as it is
    // made to name a store.
    let values = match serde_json::to_value(eff.policy(store, false)?.to_config())? {
        serde_json::Value::Object(m) => m,
        _ => serde_json::Map::new(),
    };
    if args.json {
        let mut policy = serde_json::Map::new();
        for (k, v) in &values {
            let source = eff
                .sources
                .get(k)
                .map_or("default".to_string(), ToString::to_string);
            policy.insert(k.clone(), json!({ "value": v, "source": source }));
        }
        let v = json!({
            "config_file": eff.config_file,
            "store": { "value": eff.store, "source": eff.store_source.to_string() },
            "policy": policy,
        });
        emit(format!("{v}\n").as_bytes())?;
        return Ok(0);
    }
    let mut out = String::new();
    match &eff.config_file {
        Some(p) => out.push_str(&format!("# config file: {}\n", p.display())),
        None => out.push_str("# config file: none\n"),
    }
    let line = |k: &str, v: String, src: String| format!("{:<42} # {src}\n", format!("{k} = {v}"));
    out.push_str(&line(
        "store",
        format!("{:?}", eff.store.display().to_string()),
        eff.store_source.to_string(),
    ));
    out.push_str("\n[policy]\n");
    let source = |k: &str| {
        eff.sources
            .get(k)
            .map_or("default".to_string(), ToString::to_string)
    };
    let mut notice = None;
    for (k, v) in &values {
        let shown = match (k.as_str(), v) {
            ("notice", serde_json::Value::Object(t)) => {
                notice = Some(t);
                continue;
            }
            ("max_inline_bytes" | "max_spill_bytes", serde_json::Value::Number(n)) => {
                let n = n.as_u64().unwrap_or_default();
                toml_string(&ByteSize::new(n).to_string().replace(' ', ""))
            }
            (_, serde_json::Value::String(text)) => toml_string(text),
            _ => v.to_string(),
        };
        out.push_str(&line(k, shown, source(k)));
    }
    // Templates as a TOML table, so that the output loads back as it is.
    if let Some(t) = notice {
        out.push_str("\n[policy.notice]\n");
        for (k, v) in t {
            let text = v.as_str().unwrap_or_default();
            out.push_str(&line(k, toml_string(text), source("notice")));
        }
    }
    emit(out.as_bytes())?;
    Ok(0)
}
