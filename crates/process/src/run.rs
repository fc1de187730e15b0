//! Running a command to the end of its output, and no further: a command
//! that exits while something it started still holds the pipe (a dev
//! server, a daemon) does not keep the caller waiting; a timeout kills the
//! command's process group; a signal the caller received is passed on.

use std::io::{self, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use rustix::event::{poll, PollFd, PollFlags};
use rustix::process::{kill_process, kill_process_group, Pid, Signal};

use crate::{spawn_merged, Cancel};

/// How [`run_merged`] runs a command.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RunOptions {
    /// Once the command has exited, how long to keep reading output that
    /// something it started still writes. Past it, reading stops and
    /// [`Finished::output_cut`] says so. Default: 1 s.
    pub drain: Duration,
    /// Kill the command (its whole process group) after this long.
    pub timeout: Option<Duration>,
    /// The caller's request to stop: each signal it asks is passed on to
    /// the command ([`Cancel::take`]); a second one kills it.
    pub forward: Option<Cancel>,
    /// Start the command in a process group of its own, so that a timeout
    /// kills everything it started. Default: true. A command that reads a
    /// terminal should stay in the caller's group (a background group that
    /// reads the terminal is stopped).
    pub own_group: bool,
    /// How long a command has to stop after a signal was passed on to it.
    /// Past it, or at a second signal, its process group is killed with
    /// SIGKILL and [`Finished::killed`] says so. Default: 5 s.
    pub kill_grace: Duration,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            drain: Duration::from_secs(1),
            timeout: None,
            forward: None,
            own_group: true,
            kill_grace: Duration::from_secs(5),
        }
    }
}

/// How a command ended.
#[derive(Debug)]
#[non_exhaustive]
pub struct Finished {
    /// Its exit status.
    pub status: ExitStatus,
    /// Whether it was killed for running past the timeout.
    pub timed_out: bool,
    /// Whether reading stopped while the output was still open: the command
    /// exited, but something it started kept writing (or holding the pipe)
    /// past the drain period. What it wrote later is not in the output.
    pub output_cut: bool,
    /// The signal passed on to the command, if any.
    pub forwarded: Option<i32>,
    /// Whether the command was killed with SIGKILL because it did not stop
    /// within [`RunOptions::kill_grace`] of a passed-on signal, or a second
    /// signal came.
    pub killed: bool,
}

/// The longest timeout a shell tool accepts: a day.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(86_400);

impl Finished {
    /// Whether the command succeeded: exit status 0, within its timeout.
    pub fn succeeded(&self) -> bool {
        self.status.success() && !self.timed_out
    }

    /// What a tool's result says after the output when the command did not
    /// simply succeed, a line each: that output was cut, then why it ended
    /// (`[exit status N]`, `[killed by signal N]`, `[timed out after N s;
    /// its process group was killed]`). `timeout` is the limit it ran
    /// under. Every shell tool writes these, and only these.
    pub fn status_lines(&self, timeout: Option<Duration>) -> Vec<String> {
        use std::os::unix::process::ExitStatusExt;
        let mut lines = Vec::new();
        if self.output_cut {
            lines.push("[the command exited, but a process it started still holds its output; later output is not included]".to_owned());
        }
        if self.timed_out {
            let secs = timeout.map_or(0.0, |t| t.as_secs_f64());
            lines.push(format!(
                "[timed out after {secs} s; its process group was killed]"
            ));
        } else {
            match (self.status.code(), self.status.signal()) {
                (Some(0), _) => {}
                (Some(c), _) => lines.push(format!("[exit status {c}]")),
                (None, Some(s)) => lines.push(format!("[killed by signal {s}]")),
                (None, None) => lines.push("[exit status unknown]".into()),
            }
        }
        lines
    }
}

/// Why [`run_merged`] failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum RunError {
    /// The command could not be started (not found: `NotFound`; not
    /// executable: `PermissionDenied`).
    Spawn(io::Error),
    /// Reading its output or writing it out failed; the command was killed.
    Io(io::Error),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Spawn(e) => write!(f, "cannot start the command: {e}"),
            RunError::Io(e) => write!(f, "reading the command's output failed: {e}"),
        }
    }
}

impl std::error::Error for RunError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RunError::Spawn(e) | RunError::Io(e) => Some(e),
        }
    }
}

/// How often the loop looks at the clock, the child and the signal flag
/// when no output arrives.
const TICK: Duration = Duration::from_millis(50);

/// The drain after the exit of a command that was stopped (a signal passed
/// on, or its timeout): what it left holding the output is not waited for.
const STOPPING_DRAIN: Duration = Duration::from_millis(100);

/// Runs `cmd` with stdout and stderr merged into `out`, in 1 MiB reads, as
/// the output arrives; `progress` gets the running total. Returns once the
/// command has exited and its output has ended, or the drain period after
/// its exit has passed.
///
/// # Errors
///
/// [`RunError::Spawn`] when the command could not be started;
/// [`RunError::Io`] when reading its output or writing to `out` failed
/// (the command is then killed).
pub fn run_merged(
    cmd: &mut Command,
    opts: &RunOptions,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(u64),
) -> Result<Finished, RunError> {
    if opts.own_group {
        cmd.process_group(0);
    }
    let (mut child, mut reader) = spawn_merged(cmd).map_err(RunError::Spawn)?;
    let pid = Pid::from_child(&child);
    let signal = |sig: Signal| {
        let _ = if opts.own_group {
            kill_process_group(pid, sig)
        } else {
            kill_process(pid, sig)
        };
    };
    let started = Instant::now();
    let mut run = Running {
        child: &mut child,
        opts,
        started,
        exited: None,
        timed_out: false,
        forwarded: None,
        forwarded_at: None,
        killed: false,
    };
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    let mut output_cut = false;
    let result = loop {
        if let Err(e) = run.tend(&signal) {
            break Err(e);
        }
        if let Some(at) = run.exited {
            // Once the caller asked the command to stop (a signal passed on)
            // or it timed out, nothing it left behind is waited for long.
            let drain = if run.forwarded.is_some() || run.timed_out {
                opts.drain.min(STOPPING_DRAIN)
            } else {
                opts.drain
            };
            if at.elapsed() >= drain {
                output_cut = true;
                break Ok(());
            }
        }
        let wait = run.next_wake(TICK);
        let timeout = rustix::event::Timespec {
            tv_sec: wait.as_secs() as _,
            tv_nsec: wait.subsec_nanos() as _,
        };
        let mut fds = [PollFd::new(&reader, PollFlags::IN)];
        match poll(&mut fds, Some(&timeout)) {
            Ok(0) => continue,
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => break Err(e.into()),
        }
        match reader.read(&mut buf) {
            Ok(0) => break Ok(()),
            Ok(n) => {
                if let Err(e) = out.write_all(&buf[..n]) {
                    break Err(e);
                }
                total += n as u64;
                progress(total);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => break Err(e),
        }
    };
    if let Err(e) = result {
        signal(Signal::KILL);
        let _ = run.child.wait();
        return Err(RunError::Io(e));
    }
    // A command that was stopped and left something holding its output (a
    // child that left its process group with setsid): that goes too.
    if output_cut && (run.forwarded.is_some() || run.timed_out) {
        crate::holders::kill_writers(&reader);
    }
    // The output ended; the command may still run (it closed its output).
    let status = loop {
        run.tend(&signal).map_err(RunError::Io)?;
        if let Some(status) = run.child.try_wait().map_err(RunError::Io)? {
            break status;
        }
        std::thread::sleep(run.next_wake(TICK));
    };
    Ok(Finished {
        status,
        timed_out: run.timed_out,
        output_cut,
        forwarded: run.forwarded,
        killed: run.killed,
    })
}

struct Running<'a> {
    child: &'a mut Child,
    opts: &'a RunOptions,
    started: Instant,
    exited: Option<Instant>,
    timed_out: bool,
    forwarded: Option<i32>,
    /// When the first signal was passed on.
    forwarded_at: Option<Instant>,
    killed: bool,
}

impl Running<'_> {
    /// Passes on a signal, enforces the timeout, notes the child's exit.
    fn tend(&mut self, signal: &dyn Fn(Signal)) -> io::Result<()> {
        if let Some(cancel) = &self.opts.forward {
            let raw = cancel.take().unwrap_or(0);
            if let Some(sig) = Signal::from_named_raw(raw) {
                if self.forwarded_at.is_some() {
                    // A second signal: the caller means it.
                    self.kill(signal);
                } else {
                    signal(sig);
                    self.forwarded = Some(raw);
                    self.forwarded_at = Some(Instant::now());
                }
            }
        }
        if let Some(at) = self.forwarded_at {
            if self.exited.is_none() && at.elapsed() >= self.opts.kill_grace {
                self.kill(signal);
            }
        }
        if let Some(limit) = self.opts.timeout {
            if !self.timed_out && self.started.elapsed() >= limit {
                signal(Signal::KILL);
                self.timed_out = true;
            }
        }
        if self.exited.is_none() && self.child.try_wait()?.is_some() {
            self.exited = Some(Instant::now());
        }
        Ok(())
    }

    fn kill(&mut self, signal: &dyn Fn(Signal)) {
        if !self.killed {
            signal(Signal::KILL);
            self.killed = true;
        }
    }

    /// How long to sleep at most before the next look.
    fn next_wake(&self, tick: Duration) -> Duration {
        let mut wait = tick;
        if let (Some(at), false) = (self.forwarded_at, self.killed) {
            wait = wait.min(self.opts.kill_grace.saturating_sub(at.elapsed()));
        }
        if let (Some(limit), false) = (self.opts.timeout, self.timed_out) {
            wait = wait.min(limit.saturating_sub(self.started.elapsed()));
        }
        if let Some(at) = self.exited {
            wait = wait.min(self.opts.drain.saturating_sub(at.elapsed()));
        }
        wait
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, opts: &RunOptions) -> (Vec<u8>, Finished, Duration) {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", script]).stdin(std::process::Stdio::null());
        let mut out = Vec::new();
        let t = Instant::now();
        let f = run_merged(&mut cmd, opts, &mut out, &mut |_| {}).unwrap();
        (out, f, t.elapsed())
    }

    #[test]
    fn an_ordinary_command_runs_to_the_end_of_its_output() {
        let (out, f, _) = sh("echo a; echo b >&2; exit 3", &RunOptions::default());
        assert_eq!(out, b"a\nb\n");
        assert_eq!(f.status.code(), Some(3));
        assert!(!f.timed_out && !f.output_cut && f.forwarded.is_none());
    }

    /// A background child holding the pipe does not keep us waiting.
    #[test]
    fn a_background_child_does_not_hold_the_caller() {
        let opts = RunOptions {
            drain: Duration::from_millis(300),
            ..RunOptions::default()
        };
        let (out, f, took) = sh("echo started; (sleep 30; echo late) & exit 0", &opts);
        assert_eq!(out, b"started\n");
        assert!(f.status.success());
        assert!(f.output_cut);
        assert!(took < Duration::from_secs(10), "{took:?}");
    }

    #[test]
    fn a_timeout_kills_the_whole_process_group_and_keeps_the_output() {
        let opts = RunOptions {
            timeout: Some(Duration::from_millis(300)),
            ..RunOptions::default()
        };
        let (out, f, took) = sh("echo before; sleep 30 & sleep 30; echo never", &opts);
        assert_eq!(out, b"before\n");
        assert!(f.timed_out);
        // The background sleep died with the group: nothing held the pipe.
        assert!(!f.output_cut);
        assert!(took < Duration::from_secs(10), "{took:?}");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(f.status.signal(), Some(9));
    }

    #[test]
    fn a_forwarded_signal_reaches_the_command() {
        let cancel = Cancel::new();
        let opts = RunOptions {
            forward: Some(cancel.clone()),
            ..RunOptions::default()
        };
        let setter = {
            let cancel = cancel.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(300));
                cancel.raise(15);
            })
        };
        let (out, f, took) = sh("echo waiting; sleep 30", &opts);
        setter.join().unwrap();
        assert_eq!(out, b"waiting\n");
        assert_eq!(f.forwarded, Some(15));
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(f.status.signal(), Some(15));
        assert!(took < Duration::from_secs(10), "{took:?}");
    }
}
