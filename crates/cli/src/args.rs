//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use spillway::{ByteRange, ByteSize, HumanDuration, LineRange, PolicyConfig};

/// Bounded, line-aware previews of large tool output, with the full output
/// kept once in a private content-addressed store.
#[derive(Parser, Debug)]
#[command(name = "spillway", version, about, long_about = None)]
pub struct Cli {
    /// The store: a directory, or `s3://BUCKET/PREFIX` for S3-compatible
    /// object storage (endpoint, region and credentials from the AWS_*
    /// variables and ~/.aws). Default: the config file's `store`, else
    /// $SPILLWAY_STORE, else $XDG_CACHE_HOME/spillway or ~/.cache/spillway.
    #[arg(long, global = true, value_name = "DIR|URL")]
    pub store: Option<PathBuf>,

    /// The config file (TOML). Default: $SPILLWAY_CONFIG, else
    /// $XDG_CONFIG_HOME/spillway/config.toml or ~/.config/spillway/config.toml
    /// when it exists.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// No progress on stderr, even on a terminal.
    #[arg(long, short, global = true)]
    pub quiet: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Apply the policy to a file or stdin; print the model-facing text.
    #[command(after_help = "Examples:\n  \
        cargo build 2>&1 | spillway apply\n  \
        spillway apply --max-inline-bytes 16KiB --json build.log\n  \
        spillway apply --max-inline-lines 200 --compress none < test-output.txt")]
    Apply(ApplyArgs),
    /// Run a command; capture stdout and stderr as one stream; print the
    /// model-facing text; exit with the command's status (128+N for signal N).
    #[command(after_help = "Examples:\n  \
        spillway run -- cargo test\n  \
        spillway run --max-inline-bytes 8KiB --json -- make -j2\n  \
        spillway run -- sh -c 'ls -R / 2>&1'")]
    Run(RunArgs),
    /// Write a stored object (or a part of it) to stdout, byte-exact.
    #[command(after_help = "Examples:\n  \
        spillway show blake3:3f2a9c01…  (the id a notice printed)\n  \
        spillway show 3f2a9c01 --lines 120:480\n  \
        spillway show 3f2a9c01 --bytes 0:4096 > head.bin")]
    Show(ShowArgs),
    /// Search a stored object: matching lines as `N:text`, context lines as
    /// `N-text`, groups apart as `--`, as `grep -n` prints them. The listing
    /// stays within a budget; when matches are left, its last line says how
    /// to continue. Exits 0 when a line matched, 1 when none did.
    #[command(after_help = "Examples:\n  \
        spillway grep 3f2a9c01 'error(\\[E[0-9]+\\])?:' -C 2\n  \
        spillway grep 3f2a9c01 -i 'failed' --max-count 20 --json\n  \
        spillway grep 3f2a9c01 panicked --from-line 5012")]
    Grep(GrepArgs),
    /// List stored objects: id, size, size on disk, compression, age.
    #[command(after_help = "Examples:\n  spillway ls\n  spillway ls --json | jq '.[].id'")]
    Ls(JsonArg),
    /// Re-hash every object; move corrupt ones to quarantine; remove temp
    /// files of dead writers. Exits 1 if anything was corrupt.
    #[command(after_help = "Examples:\n  spillway verify\n  spillway verify --grace 1h --json")]
    Verify(VerifyArgs),
    /// Remove least-recently-used objects until the store is under quota and
    /// nothing is older than the age limit; keep what sessions reference.
    #[command(after_help = "Examples:\n  \
        spillway gc --max-bytes 2GiB\n  \
        spillway gc --max-age 7d --keep-referenced-by session.jsonl\n  \
        spillway gc --max-bytes 500MiB --dry-run")]
    Gc(GcArgs),
    /// Objects, bytes stored, bytes before compression, compression ratio.
    #[command(after_help = "Examples:\n  spillway stats\n  spillway stats --json")]
    Stats(JsonArg),
    /// Print the effective configuration and where each value came from.
    #[command(after_help = "Examples:\n  \
        spillway config\n  \
        SPILLWAY_MAX_INLINE_BYTES=8KiB spillway config --json")]
    Config(ConfigArgs),
    /// The Model Context Protocol: a spill-bounded proxy in front of any MCP
    /// server, or a server of spillway's own.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Run a JavaScript program (Code Mode) from a file or stdin: it calls
    /// the tools `run`, `spill_read` and `spill_grep` with
    /// `await tools.<name>(args)`; print its logs and returned value,
    /// bounded. Exits 1 when the program failed (CODE_RUN_FAILED).
    #[command(after_help = "Examples:\n  \
        spillway code check.js\n  \
        echo 'const out = await tools.run({command: \"cargo test\"}); return out.split(\"\\n\").filter(l => l.includes(\"FAILED\"));' | spillway code\n  \
        spillway code --timeout 2m --memory 256MiB --session-log session.jsonl job.js")]
    Code(CodeArgs),
    /// Show session logs in a browser: one card per outer call, nested
    /// calls inside it, every notice expandable from the store, search
    /// inside stored output, followed live. Serves 127.0.0.1 only; prints
    /// the address (with its token) as its first line and serves until
    /// interrupted.
    #[command(after_help = "Examples:\n  \
        spillway code --session-log s.jsonl prog.js && spillway view s.jsonl\n  \
        spillway view --port 8765 --open sessions/\n  \
        spillway view --store s3://bucket/spills harness-session.jsonl")]
    View(ViewArgs),
}

#[derive(Args, Debug)]
pub struct ViewArgs {
    /// Session logs (spillway's, or DeepSeek Harness's uncompressed JSONL),
    /// or directories of them (`*.jsonl`).
    #[arg(required = true, value_name = "SESSION")]
    pub sessions: Vec<PathBuf>,
    /// The port on 127.0.0.1 (default: a free one).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub port: u16,
    /// Open the address in the system's browser.
    #[arg(long)]
    pub open: bool,
}

#[derive(Args, Debug)]
pub struct CodeArgs {
    /// The program; stdin when absent or `-`.
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub limits: LimitArgs,
    /// Append the call, its nested calls' dispatch events and its result
    /// to this session log (created when missing).
    #[arg(long, value_name = "FILE")]
    pub session_log: Option<PathBuf>,
}

/// The limits of a `run_code` program.
#[derive(Args, Debug)]
pub struct LimitArgs {
    /// Stop the program after this long (`30s`, `2m`); at most a day.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = wall_time_limit)]
    pub timeout: HumanDuration,
    /// The program's memory limit (`512MiB`, `1GiB`): 1 MiB to 16 GiB.
    #[arg(long, value_name = "SIZE", default_value = "512MiB")]
    pub memory: ByteSize,
    /// The program's stack limit (`1MiB`): 64 KiB to 256 MiB.
    #[arg(long, value_name = "SIZE", default_value = "1MiB")]
    pub stack: ByteSize,
    /// How many nested calls run at once: 1 to 64.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub concurrency: usize,
}

#[derive(Args, Debug)]
pub struct ApplyArgs {
    /// The input file; stdin when absent or `-`.
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Print one JSON object (the outcome) instead of the text.
    #[arg(long)]
    pub json: bool,
    /// Accepted for compatibility and ignored: every input is read as a
    /// stream (a mapped file could change or vanish under the stage).
    #[arg(long, hide = true)]
    pub no_map: bool,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Kill the command (its whole process group) after this long, keep
    /// the output so far, and exit 124 (`90s`, `15m`).
    #[arg(long, value_name = "DURATION", value_parser = positive_duration)]
    pub timeout: Option<HumanDuration>,
    /// Once the command has exited, keep reading what the processes it
    /// started still write for this long, then stop (`1s`, `10s`; `0s`
    /// stops at once).
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    pub drain: HumanDuration,
    /// After passing a signal (Ctrl-C, SIGTERM, SIGHUP) on to the command,
    /// how long it has to stop before its process group is killed with
    /// SIGKILL; a second signal kills it at once.
    #[arg(long, value_name = "DURATION", default_value = "5s")]
    pub kill_grace: HumanDuration,
    /// Print one JSON object (the outcome, plus `exit_code` and `signal`).
    #[arg(long)]
    pub json: bool,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// The object's id, or a unique prefix of at least 8 hex digits.
    pub id: String,
    /// Only lines A to B (1-based, inclusive; `A:` or `:B` leave an end open).
    #[arg(long, value_name = "A:B", conflicts_with = "bytes")]
    pub lines: Option<LineRange>,
    /// Only bytes A to B (0-based, half-open; `A:` or `:B` leave an end open).
    #[arg(long, value_name = "A:B", conflicts_with = "pointer")]
    pub bytes: Option<ByteRange>,
    /// Only the value at this JSON Pointer of a stored JSON document
    /// (`/items/3`, `/a~1b` for the member `a/b`; `""` for all of it), as
    /// written there.
    #[arg(long, value_name = "POINTER", conflicts_with = "lines")]
    pub pointer: Option<String>,
}

#[derive(Args, Debug)]
pub struct GrepArgs {
    /// The object's id, or a unique prefix of at least 8 hex digits.
    pub id: String,
    /// A regular expression (Rust regex syntax), matched against each line.
    pub pattern: String,
    /// Context lines before and after each match.
    #[arg(short = 'C', long, value_name = "N")]
    pub context: Option<usize>,
    /// Context lines before each match (overrides -C).
    #[arg(short = 'B', long, value_name = "N")]
    pub before_context: Option<usize>,
    /// Context lines after each match (overrides -C).
    #[arg(short = 'A', long, value_name = "N")]
    pub after_context: Option<usize>,
    /// Match without regard to case.
    #[arg(short = 'i', long)]
    pub ignore_case: bool,
    /// Stop after N matching lines.
    #[arg(short = 'm', long, value_name = "N")]
    pub max_count: Option<u64>,
    /// Start at line N (a continuation gives it).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub from_line: u64,
    /// The most the listing may take, as printed.
    #[arg(long, value_name = "SIZE", default_value = "32KiB")]
    pub max_bytes: ByteSize,
    /// Print one JSON object: the lines, the counts and the continuation.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct JsonArg {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// Remove unlocked temp files older than this. Default: 15m.
    #[arg(long, value_name = "DURATION", default_value = "15m")]
    pub grace: HumanDuration,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct GcArgs {
    /// Remove least-recently-used objects until the store takes at most this
    /// much disk.
    #[arg(long, value_name = "SIZE")]
    pub max_bytes: Option<ByteSize>,
    /// Remove objects unused for longer than this (`12h`, `7d`).
    #[arg(long, value_name = "DURATION")]
    pub max_age: Option<HumanDuration>,
    /// Never remove an object this session log references (repeatable).
    #[arg(long, value_name = "SESSION.jsonl")]
    pub keep_referenced_by: Vec<PathBuf>,
    /// Say what would be removed; remove nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Remove unlocked temp files older than this. Default: 15m.
    #[arg(long, value_name = "DURATION", default_value = "15m")]
    pub grace: HumanDuration,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct ConfigArgs {
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum CompressArg {
    None,
    Zstd,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum StoreErrorArg {
    /// Still print a bounded preview that says the output was not saved.
    Preview,
    /// Fail with exit status 1 (the preview is still printed).
    Fail,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum DurabilityArg {
    Durable,
    Relaxed,
}

/// Policy flags; each overrides the config file and the environment.
#[derive(Args, Debug, Default)]
pub struct PolicyArgs {
    /// Cap on the printed text in bytes, notice included (`50000`, `64KiB`,
    /// `1MiB`; at most 64MiB). Default: 32KiB.
    #[arg(long, value_name = "SIZE")]
    pub max_inline_bytes: Option<ByteSize>,
    /// Cap on the printed text in lines, notice included. Default: none.
    #[arg(long, value_name = "N")]
    pub max_inline_lines: Option<u64>,
    /// The head's share of the preview in percent; the tail gets the rest.
    /// Default: 30.
    #[arg(long, value_name = "PERCENT")]
    pub head_percent: Option<u64>,
    /// The most bytes one stored object keeps. Default: 64MiB.
    #[arg(long, value_name = "SIZE")]
    pub max_spill_bytes: Option<ByteSize>,
    /// Compression of stored objects. Default: zstd.
    #[arg(long, value_enum)]
    pub compress: Option<CompressArg>,
    /// zstd level (1-22). Default: 1.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub level: Option<i32>,
    /// What to do when the store fails. Default: preview.
    #[arg(long, value_enum)]
    pub on_store_error: Option<StoreErrorArg>,
    /// Whether objects are fsynced before the command returns. Default: durable.
    #[arg(long, value_enum)]
    pub durability: Option<DurabilityArg>,
    /// How the input is previewed: `text` (head, notice, tail), `json` (a
    /// JSON document's preview is JSON of the same shape, with markers; other
    /// input gets the text preview and `json_error` says why), or `auto`
    /// (JSON when the input is one JSON document). Default: text.
    #[arg(long, value_enum)]
    pub format: Option<FormatArg>,
    /// What the printed text is made of: `terminal` (what a terminal would
    /// show: escape sequences removed, progress bars as their final frame,
    /// exact repeats folded, error lines of an omitted middle kept) or `raw`
    /// (the bytes as they are). The stored object is always the raw bytes.
    /// Default: terminal.
    #[arg(long, value_enum)]
    pub render: Option<RenderArg>,
    /// A regular expression of the lines an omitted middle keeps between
    /// head and tail, ranked as an error (repeat for more; these flags
    /// together replace the built-in patterns).
    #[arg(long, value_name = "REGEX", conflicts_with = "no_salient")]
    pub salient: Vec<String>,
    /// A salient pattern ranked as a warning: below errors, above words.
    #[arg(long, value_name = "REGEX", conflicts_with = "no_salient")]
    pub salient_warning: Vec<String>,
    /// A salient pattern ranked as a word: below errors and warnings.
    #[arg(long, value_name = "REGEX", conflicts_with = "no_salient")]
    pub salient_word: Vec<String>,
    /// Keep no salient lines.
    #[arg(long)]
    pub no_salient: bool,
    /// The most of the budget salient lines take, in percent. Default: 20.
    #[arg(long, value_name = "PERCENT")]
    pub salient_percent: Option<u64>,
    /// Cap on the printed text in tokens, notice included, counted with
    /// `--tokenizer`. Default: none.
    #[arg(long, value_name = "N")]
    pub max_inline_tokens: Option<u64>,
    /// How tokens are counted: `o200k`, `cl100k` (vocabularies built in) or
    /// `approx` (4 bytes a token). Default: o200k.
    #[arg(long, value_enum)]
    pub tokenizer: Option<TokenizerArg>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum RenderArg {
    Terminal,
    Raw,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum TokenizerArg {
    O200k,
    Cl100k,
    Approx,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum FormatArg {
    Text,
    Json,
    Auto,
}

impl PolicyArgs {
    /// The flags as a config layer.
    pub fn to_config(&self) -> PolicyConfig {
        use spillway::CompressionKind;
        PolicyConfig {
            max_inline_bytes: self.max_inline_bytes,
            max_inline_lines: self.max_inline_lines,
            head_percent: self.head_percent,
            max_spill_bytes: self.max_spill_bytes,
            compression: self.compress.map(|k| match k {
                CompressArg::None => CompressionKind::None,
                CompressArg::Zstd => CompressionKind::Zstd,
            }),
            zstd_level: self.level,
            on_store_error: self.on_store_error.map(|m| match m {
                StoreErrorArg::Preview => spillway::OnStoreError::Preview,
                StoreErrorArg::Fail => spillway::OnStoreError::Fail,
            }),
            durability: self.durability.map(|d| match d {
                DurabilityArg::Durable => spillway::Durability::Durable,
                DurabilityArg::Relaxed => spillway::Durability::Relaxed,
            }),
            format: self.format.map(|f| match f {
                FormatArg::Text => spillway::Format::Text,
                FormatArg::Json => spillway::Format::Json,
                FormatArg::Auto => spillway::Format::Auto,
            }),
            render: self.render.map(|r| match r {
                RenderArg::Terminal => spillway::Render::Terminal,
                RenderArg::Raw => spillway::Render::Raw,
            }),
            salient: if self.no_salient {
                Some(Vec::new())
            } else {
                use spillway::{SalientPattern, SalientRank};
                let all: Vec<SalientPattern> = [
                    (&self.salient, SalientRank::Error),
                    (&self.salient_warning, SalientRank::Warning),
                    (&self.salient_word, SalientRank::Word),
                ]
                .into_iter()
                .flat_map(|(list, rank)| {
                    list.iter()
                        .map(move |p| SalientPattern::new(p.as_str(), rank))
                })
                .collect();
                (!all.is_empty()).then_some(all)
            },
            salient_percent: self.salient_percent,
            max_inline_tokens: self.max_inline_tokens,
            tokenizer: self.tokenizer.map(|t| match t {
                TokenizerArg::O200k => spillway::Tokenizer::O200k,
                TokenizerArg::Cl100k => spillway::Tokenizer::Cl100k,
                TokenizerArg::Approx => spillway::Tokenizer::Approx,
            }),
            notice: None,
        }
    }
}

/// `spillway mcp …`.
#[derive(Subcommand, Debug)]
pub enum McpCommand {
    /// Speak MCP on stdio to a client and relay every message to the MCP
    /// server CMD (started as a child, on its stdio) and back, unchanged,
    /// except that tool results are bounded (the full output stored) and
    /// two tools are added that read what was stored.
    #[command(after_help = "Examples:\n  \
        spillway mcp proxy -- npx -y @modelcontextprotocol/server-everything\n  \
        spillway mcp proxy --max-inline-bytes 16KiB --tool-prefix big_ -- python3 my_server.py\n  \
        spillway mcp proxy --code-mode -- npx -y @modelcontextprotocol/server-everything\n  \
        spillway mcp proxy --code-mode --servers ~/.cursor/mcp.json --session-log session.jsonl")]
    Proxy(McpProxyArgs),
    /// An MCP server on stdio with the tools `run` (a shell command, bounded),
    /// `run_code` (a JavaScript program that calls the other tools),
    /// `spill_read` and `spill_grep`.
    #[command(
        after_help = "Examples:\n  spillway mcp serve\n  spillway --store ~/.cache/agent-spill mcp serve --max-inline-bytes 16KiB\n  spillway mcp serve --timeout 2m --session-log session.jsonl"
    )]
    Serve(McpServeArgs),
}

#[derive(Args, Debug)]
pub struct McpProxyArgs {
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Code Mode: offer `run_code`, a JavaScript program that calls the
    /// upstream tools (`tools.<tool>(args)`, or `tools.<server>.<tool>(args)`
    /// with several servers), instead of relaying them.
    #[arg(long)]
    pub code_mode: bool,
    /// With --code-mode: the upstream servers, from a file in the
    /// `mcpServers` format (`{"mcpServers": {"name": {"command", "args",
    /// "env"}}}`), instead of one CMD.
    #[arg(long, value_name = "FILE", requires = "code_mode")]
    pub servers: Option<PathBuf>,
    /// With --code-mode: what the client is shown. `ptc`: run_code and the
    /// spill tools; `both`: the upstream tools too; `native`: the plain
    /// proxy.
    #[arg(long, value_enum, default_value = "ptc", requires = "code_mode")]
    pub present: PresentArg,
    #[command(flatten)]
    pub limits: LimitArgs,
    /// With --code-mode: append each run_code call, its dispatch events and
    /// its result to this session log.
    #[arg(long, value_name = "FILE", requires = "code_mode")]
    pub session_log: Option<PathBuf>,
    /// Put this before the added tools' names (`spill_read`, `spill_grep`)
    /// so that they cannot collide with the server's.
    #[arg(long, value_name = "PREFIX", default_value = "spillway_")]
    pub tool_prefix: String,
    /// When the client goes away or a signal comes (passed on to the
    /// server), how long the server has to exit once its input is closed,
    /// and again after SIGTERM, before it is killed with SIGKILL.
    #[arg(long, value_name = "DURATION", default_value = "2s")]
    pub kill_grace: HumanDuration,
    /// The MCP server's command and its arguments.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum PresentArg {
    Ptc,
    Both,
    Native,
}

#[derive(Args, Debug)]
pub struct McpServeArgs {
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub limits: LimitArgs,
    /// Append each call, its nested calls' dispatch events and its result
    /// to this session log (created when missing).
    #[arg(long, value_name = "FILE")]
    pub session_log: Option<PathBuf>,
}

/// A program's wall-time limit, above zero: a program always has one.
fn wall_time_limit(s: &str) -> Result<HumanDuration, String> {
    nonzero_duration(
        s,
        "a wall-time limit of 0 would end every program at once: give a longer one (leave --timeout out for 30s)",
    )
}

/// A duration above zero: a timeout of zero would kill the command at once.
fn positive_duration(s: &str) -> Result<HumanDuration, String> {
    nonzero_duration(
        s,
        "a timeout of 0 would kill the command at once: give a longer one, or leave --timeout out for none",
    )
}

/// A duration, refused with `zero` when it is zero.
fn nonzero_duration(s: &str, zero: &str) -> Result<HumanDuration, String> {
    let d: HumanDuration = s.parse().map_err(|e| format!("{e}"))?;
    if d.get().is_zero() {
        return Err(zero.to_owned());
    }
    Ok(d)
}
