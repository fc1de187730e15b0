//! The commands.

use std::fs::File;
use std::io::{self, Read};
use std::path::PathBuf;

use anyhow::{anyhow, Context, Result};
use spillway::{ByteRange, ContentId, IdPrefix, LineRange, Outcome, Selection, Spiller, Store};

use super::args::{ApplyArgs, Cli, Command, ShowArgs};
use super::emit;

/// The default store: $SPILLWAY_STORE, else the user's cache directory.
fn store_dir(flag: Option<PathBuf>) -> Result<PathBuf> {
    if let Some(dir) = flag {
        return Ok(dir);
    }
    if let Some(dir) = std::env::var_os("SPILLWAY_STORE").filter(|v| !v.is_empty()) {
        return Ok(dir.into());
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(dir).join("spillway"));
    }
    if let Some(home) = std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(home).join(".cache").join("spillway"));
    }
    Err(anyhow!(
        "no store directory: pass --store DIR or set SPILLWAY_STORE"
    ))
}

pub fn run(cli: Cli) -> Result<i32> {
    let store = Store::open(store_dir(cli.store)?).context("store")?;
    match cli.command {
        Command::Apply(args) => apply(&store, args),
        Command::Show(args) => show(&store, args),
    }
}

/// Widens a pipe on stdin to 1 MiB (best effort, Linux), so a fast producer
/// and this process wake each other 16 times less often than with the
/// default 64 KiB.
fn widen_stdin_pipe() {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::FileTypeExt;
        use std::os::unix::io::AsRawFd;
        let stdin = io::stdin();
        let fd = stdin.as_raw_fd();
        let is_pipe = std::fs::File::open("/proc/self/fd/0")
            .and_then(|f| f.metadata())
            .map(|m| m.file_type().is_fifo())
            .unwrap_or(false);
        if is_pipe {
            // SAFETY: F_SETPIPE_SZ takes an integer argument and only
            // changes the pipe's capacity; failure leaves it as it was.
            unsafe {
                libc::fcntl(fd, libc::F_SETPIPE_SZ, 1 << 20);
            }
        }
    }
}

/// Streams `reader` into a stage in 1 MiB reads.
fn stream(spiller: &Spiller, reader: &mut dyn Read) -> io::Result<spillway::Stage> {
    let mut stage = spiller.stage();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => return Ok(stage),
            Ok(n) => stage.feed(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

fn apply(store: &Store, args: ApplyArgs) -> Result<i32> {
    let policy = args.policy.to_config().build().context("policy")?;
    let spiller = Spiller::new(policy, store.clone()).context("policy")?;
    widen_stdin_pipe();
    let stage = match args.file.as_deref() {
        None => stream(&spiller, &mut io::stdin().lock()).context("read stdin")?,
        Some(p) if p.as_os_str() == "-" => {
            stream(&spiller, &mut io::stdin().lock()).context("read stdin")?
        }
        Some(p) => {
            let mut f = File::open(p).with_context(|| format!("open {}", p.display()))?;
            stream(&spiller, &mut f).with_context(|| format!("read {}", p.display()))?
        }
    };
    let (outcome, failure) = match stage.finish() {
        Ok(o) => (o, None),
        Err(e) => {
            let msg = e.to_string();
            (e.into_outcome(), Some(msg))
        }
    };
    print_outcome(&outcome, args.json)?;
    if let Some(msg) = failure {
        return Err(anyhow!(msg));
    }
    Ok(0)
}

fn print_outcome(outcome: &Outcome, json: bool) -> Result<()> {
    if json {
        let mut text = serde_json::to_string(outcome)?;
        text.push('\n');
        emit(text.as_bytes())
    } else {
        emit(outcome.content.as_bytes())
    }
}

fn show(store: &Store, args: ShowArgs) -> Result<i32> {
    let id: ContentId = match args.id.parse::<ContentId>() {
        Ok(id) => id,
        Err(_) => {
            let prefix: IdPrefix = args.id.parse()?;
            store.resolve(&prefix)?
        }
    };
    let sel = match (&args.lines, &args.bytes) {
        (Some(l), _) => Selection::Lines(l.parse::<LineRange>()?),
        (_, Some(b)) => Selection::Bytes(b.parse::<ByteRange>()?),
        _ => Selection::All,
    };
    let bytes = store.read(&id, &sel)?;
    emit(&bytes)?;
    Ok(0)
}
