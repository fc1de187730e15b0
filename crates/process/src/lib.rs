//! Process helpers shared by spillway's front ends (the CLI, the registry's
//! `bash` tool, the language packages): start a command with stdout and
//! stderr on one pipe (so the output keeps the order in which it was
//! written), widen that pipe, and pump it in large reads; cancel a wait;
//! find the store a front end uses when none is named, from the process
//! environment (the core reads no setting of its own from it); and give
//! the command line's read hint, which the CLI and the language packages
//! share (the core knows nothing of the command line).
//!
//! Everything here is safe code over [`rustix`]. Linux gets `pipe2` and
//! `F_SETPIPE_SZ`; other unix systems get `pipe` plus `FD_CLOEXEC`, and keep
//! the default pipe size. Both paths are compiled on Linux, and the crate's
//! tests take the second with `SPILLWAY_TEST_PORTABLE_SYS=1`.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

#[cfg(not(unix))]
compile_error!(
    "spillway-process needs a unix system: it relies on pipes shared by stdout and stderr, \
     and on unix exit statuses and signals"
);

mod cancel;
mod cli_hint;
mod default_store;
mod holders;
mod run;
pub mod stop;
mod sys;

pub use cancel::{Cancel, WeakCancel};
pub use cli_hint::cli_read_hint;
pub use default_store::{default_store, DefaultStore};
pub use run::{run_merged, Finished, RunError, RunOptions, MAX_TIMEOUT};

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, ExitStatus, Stdio};

/// The size [`widen_pipe`] asks for: 1 MiB, so a fast producer and its
/// reader wake each other 16 times less often than with Linux's default
/// 64 KiB.
pub const WIDE_PIPE: usize = 1 << 20;

/// Widens a pipe to [`WIDE_PIPE`] where the system allows it (Linux); a
/// no-op elsewhere and on anything that is not a pipe. Returns whether the
/// pipe was widened.
pub fn widen_pipe(fd: impl AsFd) -> bool {
    sys::widen_pipe(fd.as_fd(), WIDE_PIPE)
}

/// Starts `cmd` with stdout and stderr on one pipe, so their order is the
/// order in which the command wrote; returns the child and the pipe's read
/// end (widened). stdin is whatever `cmd` says.
///
/// # Errors
///
/// The pipe or the spawn failed.
pub fn spawn_merged(cmd: &mut Command) -> io::Result<(Child, File)> {
    let (reader, writer) = sys::pipe_cloexec()?;
    let reader = File::from(reader);
    widen_pipe(&reader);
    let err_end = writer.try_clone()?;
    cmd.stdout(Stdio::from(writer)).stderr(Stdio::from(err_end));
    let child = cmd.spawn();
    // Drop our copies of the write end, or reads would never see EOF.
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    Ok((child?, reader))
}

/// Copies `reader` into `out` in 1 MiB reads, as the data arrives; calls
/// `progress` with the running total after each read. Returns the total.
///
/// # Errors
///
/// A read or write error (an interrupted read is retried).
pub fn pump(
    reader: &mut dyn Read,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(u64),
) -> io::Result<u64> {
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0;
    loop {
        match reader.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => {
                out.write_all(&buf[..n])?;
                total += n as u64;
                progress(total);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// The shell convention for a status: the exit code, or 128 + N when the
/// process was killed by signal N.
pub fn exit_code(status: ExitStatus) -> i32 {
    match (status.code(), status.signal()) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        (None, None) => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_output_keeps_the_order_of_writes() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo out1; echo err1 >&2; echo out2; echo err2 >&2"]);
        let (mut child, mut reader) = spawn_merged(&mut cmd).unwrap();
        let mut text = Vec::new();
        let mut calls = 0;
        let n = pump(&mut reader, &mut text, &mut |_| calls += 1).unwrap();
        assert!(child.wait().unwrap().success());
        assert_eq!(text, b"out1\nerr1\nout2\nerr2\n");
        assert_eq!(n, text.len() as u64);
        assert!(calls >= 1);
    }

    #[test]
    fn the_read_end_sees_eof_when_the_child_exits() {
        let mut cmd = Command::new("true");
        let (mut child, mut reader) = spawn_merged(&mut cmd).unwrap();
        let mut text = Vec::new();
        assert_eq!(pump(&mut reader, &mut text, &mut |_| {}).unwrap(), 0);
        assert!(child.wait().unwrap().success());
    }

    #[test]
    fn pipe_ends_are_close_on_exec() {
        let (r, w) = sys::pipe_cloexec().unwrap();
        for fd in [r.as_fd(), w.as_fd()] {
            let flags = rustix::io::fcntl_getfd(fd).unwrap();
            assert!(flags.contains(rustix::io::FdFlags::CLOEXEC));
        }
    }

    #[test]
    fn widening_is_honest_about_the_platform() {
        let (r, _w) = sys::pipe_cloexec().unwrap();
        let widened = widen_pipe(&r);
        assert_eq!(widened, sys::can_widen());
        // A regular file is never "widened".
        let f = File::open("/dev/null").unwrap();
        assert!(!widen_pipe(&f));
    }

    #[test]
    fn exit_codes_follow_the_shell() {
        let st = |s: &str| Command::new("sh").args(["-c", s]).status().unwrap();
        assert_eq!(exit_code(st("exit 0")), 0);
        assert_eq!(exit_code(st("exit 3")), 3);
        assert_eq!(exit_code(st("kill -TERM $$")), 128 + 15);
    }
}
