//! Session events and the append-only JSONL session log.
//!
//! # Format
//!
//! One JSON object per line. The first line is a header,
//! `{"format":"spillway-session","version":1}`; every other line is an
//! [`Event`], tagged by `"type"`. A spill is published before any event
//! that references it is written, so a log never points at a lost object.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Block;
use spillway::{ContentId, Fs, RealFs};

/// The session format this crate writes and reads.
pub const FORMAT: &str = "spillway-session";
/// The session format version.
pub const VERSION: u32 = 1;

/// One session event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
#[non_exhaustive]
pub enum Event {
    /// A tool call the model made.
    #[serde(rename = "tool/call", rename_all = "camelCase")]
    ToolCall {
        /// The call's id.
        call_id: String,
        /// The tool.
        tool: String,
        /// The call's description (a card's title).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// The arguments.
        args: Value,
    },
    /// The durable result of an outer call: exactly what the model got.
    #[serde(rename = "tool/result", rename_all = "camelCase")]
    ToolResult {
        /// The call's id.
        call_id: String,
        /// The final content, after every policy and the spill stage.
        content: Vec<Block>,
        /// Whether the content is an error.
        is_error: bool,
        /// Objects this content references.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        spills: Vec<ContentId>,
    },
    /// The calls a model issued together, and the share of the turn's
    /// budget each result got. Recorded before their results.
    #[serde(rename = "tool/turn", rename_all = "camelCase")]
    Turn {
        /// The turn's id.
        turn_id: String,
        /// The turn's budget: the most text its results hold together.
        budget: u64,
        /// Each call, in the order the model issued them.
        calls: Vec<TurnShare>,
    },
    /// A program's nested tool call starts.
    #[serde(rename = "tool/code-dispatch-start", rename_all = "camelCase")]
    CodeDispatchStart {
        /// `<outerCallId>:code:<n>`.
        sub_call_id: String,
        /// The outer `run_code` call.
        parent_call_id: String,
        /// The tool.
        tool: String,
        /// A snapshot of the arguments.
        args: Value,
    },
    /// A program's nested tool call settled.
    #[serde(rename = "tool/code-dispatch", rename_all = "camelCase")]
    CodeDispatch {
        /// `<outerCallId>:code:<n>`.
        sub_call_id: String,
        /// The outer `run_code` call.
        parent_call_id: String,
        /// The tool.
        tool: String,
        /// A snapshot of the arguments.
        args: Value,
        /// The rendered content, bounded by the spill stage.
        content: Vec<Block>,
        /// Whether the content is an error.
        is_error: bool,
        /// Objects this content references.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        spills: Vec<ContentId>,
    },
}

impl Event {
    /// The event's `type`, as the log writes it.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::ToolCall { .. } => "tool/call",
            Event::ToolResult { .. } => "tool/result",
            Event::Turn { .. } => "tool/turn",
            Event::CodeDispatchStart { .. } => "tool/code-dispatch-start",
            Event::CodeDispatch { .. } => "tool/code-dispatch",
        }
    }
}

/// One call's part of a turn.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TurnShare {
    /// The call's id.
    pub call_id: String,
    /// The text bytes its result held under its own tool's policy.
    pub demand: u64,
    /// The text bytes its result holds in the turn (`demand` unless it was
    /// cut to make the turn fit).
    pub share: u64,
}

#[derive(Serialize, Deserialize)]
struct Header {
    format: String,
    version: u32,
}

/// When appends are fsynced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum LogSync {
    /// After every event (the default).
    #[default]
    EveryEvent,
    /// Never; the OS writes back when it likes.
    Never,
}

/// Why a log operation failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum LogError {
    /// A system call failed.
    Io {
        /// What was being done.
        op: &'static str,
        /// The log file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// The file is not a session log of a version this crate reads.
    Header {
        /// The log file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

impl std::fmt::Display for LogError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LogError::Io { op, path, source } => write!(f, "{op} {}: {source}", path.display()),
            LogError::Header { path, reason } => {
                write!(
                    f,
                    "{} is not a spillway session log: {reason}",
                    path.display()
                )
            }
        }
    }
}

impl std::error::Error for LogError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LogError::Io { source, .. } => Some(source),
            LogError::Header { .. } => None,
        }
    }
}

/// An append-only session log.
///
/// A new event never joins a partial line: before each append the log
/// checks that the file ends with a newline, and when it does not (a crash
/// tore the last line, an earlier append failed half-way, another writer
/// left bytes) it starts the event on a fresh line. The partial line stays
/// in the file, byte for byte, and [`replay`] reports it as torn.
#[derive(Debug)]
pub struct SessionLog {
    path: PathBuf,
    /// `None` for a log that keeps nothing ([`SessionLog::discard`]).
    file: Option<Mutex<File>>,
    sync: LogSync,
    repairs: std::sync::atomic::AtomicU64,
    /// Where every change to the file goes.
    fs: Arc<dyn Fs>,
}

impl SessionLog {
    /// Opens (creating, 0600) a session log for appending. A new or empty file
    /// gets the header; an existing one must have it.
    ///
    /// # Errors
    ///
    /// [`LogError`] when the file cannot be opened or has another format.
    pub fn open(path: impl AsRef<Path>, sync: LogSync) -> Result<Self, LogError> {
        Self::open_on(path, sync, Arc::new(RealFs))
    }

    /// [`SessionLog::open`], recording every change to the file into a
    /// crash model (tests only: the `test-seams` feature).
    ///
    /// # Errors
    ///
    /// As [`SessionLog::open`].
    #[cfg(feature = "test-seams")]
    pub fn open_recorded(
        path: impl AsRef<Path>,
        sync: LogSync,
        model: &spillway::CrashModel,
    ) -> Result<Self, LogError> {
        Self::open_on(path, sync, model.fs(Arc::new(RealFs)))
    }

    /// [`SessionLog::open`], changing the disk through `fs` (the real
    /// filesystem, or one a test wraps to fail or record changes).
    ///
    /// # Errors
    ///
    /// As [`SessionLog::open`].
    pub fn open_on(
        path: impl AsRef<Path>,
        sync: LogSync,
        fs: Arc<dyn Fs>,
    ) -> Result<Self, LogError> {
        let path = path.as_ref().to_path_buf();
        let io = |op| {
            let path = path.clone();
            move |source| LogError::Io { op, path, source }
        };
        let (file, created) = match fs.create_new(&path, true) {
            Ok(f) => (f, true),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let existing = OpenOptions::new()
                    .append(true)
                    .read(true)
                    .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
                    .open(&path);
                (existing.map_err(io("open"))?, false)
            }
            Err(e) => return Err(io("create")(e)),
        };
        let len = file.metadata().map_err(io("inspect"))?.len();
        let log = SessionLog {
            path: path.clone(),
            file: Some(Mutex::new(file)),
            sync,
            repairs: std::sync::atomic::AtomicU64::new(0),
            fs,
        };
        if len == 0 {
            let header = serde_json::to_string(&Header {
                format: FORMAT.into(),
                version: VERSION,
            })
            .unwrap_or_default();
            log.append_line(header)?;
        } else {
            let text = std::fs::read(&path).map_err(io("read"))?;
            let first = text.split(|&b| b == b'\n').next().unwrap_or_default();
            check_header(first).map_err(|reason| LogError::Header {
                path: path.clone(),
                reason,
            })?;
        }
        if created && sync == LogSync::EveryEvent {
            // A synced event is only durable if the file's name is: sync the
            // directory that holds the new log.
            let dir = match path.parent() {
                Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                _ => PathBuf::from("."),
            };
            log.fs
                .sync_dir(&dir)
                .map_err(io("fsync the directory of"))?;
        }
        Ok(log)
    }

    /// A log that keeps nothing: every append succeeds and writes nowhere.
    /// For a registry whose caller keeps no session (an MCP server run
    /// without a session log).
    pub fn discard() -> Self {
        SessionLog {
            path: PathBuf::new(),
            file: None,
            sync: LogSync::Never,
            repairs: std::sync::atomic::AtomicU64::new(0),
            fs: Arc::new(RealFs),
        }
    }

    /// The file (empty for [`SessionLog::discard`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many times this handle started an event on a fresh line because
    /// the file ended inside a partial line.
    pub fn repairs(&self) -> u64 {
        self.repairs.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn append_line(&self, mut line: String) -> Result<(), LogError> {
        line.push('\n');
        let Some(file) = &self.file else {
            return Ok(());
        };
        let mut file = file.lock().unwrap_or_else(|e| e.into_inner());
        let io = |op| {
            let path = self.path.clone();
            move |source| LogError::Io { op, path, source }
        };
        if !ends_with_newline(&file).map_err(io("inspect"))? {
            line.insert(0, '\n');
            self.repairs
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        // One write of the whole line: with O_APPEND, lines never interleave.
        let at = file.metadata().map_err(io("inspect"))?.len();
        self.fs
            .write_all(&mut file, &self.path, at, line.as_bytes())
            .map_err(io("append to"))?;
        if self.sync == LogSync::EveryEvent {
            self.fs.sync(&file, &self.path).map_err(io("fsync"))?;
        }
        Ok(())
    }

    /// Appends one event, whole.
    ///
    /// # Errors
    ///
    /// [`LogError::Io`] when the write or fsync fails.
    pub fn append(&self, event: &Event) -> Result<(), LogError> {
        self.append_all(std::slice::from_ref(event))
    }

    /// Appends events in one write and, with [`LogSync::EveryEvent`], one
    /// fsync: each is a whole line, in order, and a crash keeps a prefix
    /// of them.
    ///
    /// # Errors
    ///
    /// [`LogError::Io`] when the write or fsync fails.
    pub fn append_all(&self, events: &[Event]) -> Result<(), LogError> {
        // A log that discards is not written, so nothing is serialized.
        if events.is_empty() || self.file.is_none() {
            return Ok(());
        }
        let mut lines = String::new();
        for (i, event) in events.iter().enumerate() {
            if i > 0 {
                lines.push('\n');
            }
            let line = serde_json::to_string(event).map_err(|e| LogError::Io {
                op: "serialize an event for",
                path: self.path.clone(),
                source: io::Error::other(e),
            })?;
            lines.push_str(&line);
        }
        self.append_line(lines)
    }
}

/// Whether the file is empty or its last byte is a newline.
fn ends_with_newline(file: &File) -> io::Result<bool> {
    use std::os::unix::fs::FileExt;
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(true);
    }
    let mut last = [0u8; 1];
    file.read_exact_at(&mut last, len - 1)?;
    Ok(last[0] == b'\n')
}

pub(crate) fn check_header(line: &[u8]) -> Result<(), String> {
    let h: Header = serde_json::from_slice(line).map_err(|e| format!("bad header line: {e}"))?;
    if h.format != FORMAT {
        return Err(format!("format is {:?}", h.format));
    }
    if h.version != VERSION {
        return Err(format!(
            "version {} (this build reads {VERSION})",
            h.version
        ));
    }
    Ok(())
}

/// A line replay could not use.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct BadLine {
    /// 1-based line number.
    pub line: usize,
    /// Why.
    pub reason: String,
    /// Whether it is an event cut short: the last line without its newline
    /// (a crash), or a line that ends inside an event (a crash or a failed
    /// append, after which the log started the next event on a fresh line).
    pub torn: bool,
}

/// What [`replay`] recovered.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Replay {
    /// Every event that parsed, in order.
    pub events: Vec<Event>,
    /// Lines that did not, with why.
    pub bad: Vec<BadLine>,
}

/// Reads a session log's bytes: keeps every valid event and reports the
/// rest (a torn last line, garbage lines). Never fails on content.
///
/// # Errors
///
/// Only a bad header is an error: the bytes are not a session log.
pub fn replay(bytes: &[u8]) -> Result<Replay, String> {
    let mut lines = bytes.split(|&b| b == b'\n');
    let first = lines.next().unwrap_or_default();
    check_header(first)?;
    let mut out = Replay::default();
    let ends_with_newline = bytes.last() == Some(&b'\n');
    let rest: Vec<&[u8]> = lines.collect();
    let n = rest.len();
    for (i, line) in rest.into_iter().enumerate() {
        let last = i + 1 == n;
        if line.is_empty() && last {
            break;
        }
        match serde_json::from_slice::<Event>(line) {
            Ok(e) => out.events.push(e),
            Err(e) => out.bad.push(BadLine {
                line: i + 2,
                reason: e.to_string(),
                torn: (last && !ends_with_newline) || e.is_eof(),
            }),
        }
    }
    Ok(out)
}

/// [`replay`] of a file.
///
/// # Errors
///
/// [`LogError`] when the file cannot be read or is not a session log.
pub fn replay_file(path: &Path) -> Result<Replay, LogError> {
    let bytes = std::fs::read(path).map_err(|source| LogError::Io {
        op: "read",
        path: path.to_path_buf(),
        source,
    })?;
    replay(&bytes).map_err(|reason| LogError::Header {
        path: path.to_path_buf(),
        reason,
    })
}
