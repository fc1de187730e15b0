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
use std::io::{self, Read};
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

/// How many bytes [`pump`] hands over at a time.
const PUMPED: usize = 1 << 20;

/// Reads `reader` to its end, handing its bytes to `take` in buffers of
/// 1 MiB (the last one shorter), each filled by as many reads as it takes;
/// `take` gives back the buffer to read into next (the same one, or one it
/// is done with: `Stage::feed_buf` hands a long stream's buffers to its
/// salient scan's thread instead of copying them). Calls `progress` with
/// the running total after each read. Returns the total.
///
/// # Errors
///
/// A read error, or `take`'s (an interrupted read is retried).
pub fn pump(
    reader: &mut dyn Read,
    take: &mut dyn FnMut(Vec<u8>) -> io::Result<Vec<u8>>,
    progress: &mut dyn FnMut(u64),
) -> io::Result<u64> {
    let mut buf = vec![0u8; PUMPED];
    let mut filled = 0;
    let mut total = 0;
    loop {
        // A buffer given back may be shorter; its stale bytes are read over.
        if buf.len() < PUMPED {
            buf.resize(PUMPED, 0);
        }
        match reader.read(&mut buf[filled..PUMPED]) {
            Ok(0) => {
                if filled > 0 {
                    buf.truncate(filled);
                    take(buf)?;
                }
                return Ok(total);
            }
            Ok(n) => {
                filled += n;
                total += n as u64;
                progress(total);
                if filled == PUMPED {
                    buf.truncate(PUMPED);
                    buf = take(buf)?;
                    filled = 0;
                }
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

    /// A `take` that appends to `text` and gives the buffer back.
    fn into(text: &mut Vec<u8>) -> impl FnMut(Vec<u8>) -> io::Result<Vec<u8>> + '_ {
        move |buf| {
            text.extend_from_slice(&buf);
            Ok(buf)
        }
    }

    /// A reader that gives at most `step` bytes a read, as a pipe does.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.0.len().min(self.1).min(out.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn buffers_are_handed_over_full_whatever_the_reads() {
        let data: Vec<u8> = (0..(3 * PUMPED + 12_345))
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        for step in [1000, 65_536, PUMPED, 4 * PUMPED] {
            let mut lens = Vec::new();
            let mut text = Vec::new();
            let mut reads = 0;
            // Buffers given back shorter, longer and stale.
            let mut spare = vec![vec![9u8; 10], vec![7u8; 2 * PUMPED]];
            let n = pump(
                &mut Trickle(&data, step),
                &mut |buf| {
                    lens.push(buf.len());
                    text.extend_from_slice(&buf);
                    Ok(spare.pop().unwrap_or(buf))
                },
                &mut |_| reads += 1,
            )
            .unwrap();
            assert_eq!(n, data.len() as u64);
            assert!(text == data, "step {step}");
            assert_eq!(lens, [PUMPED, PUMPED, PUMPED, 12_345], "step {step}");
            assert!(
                reads >= data.len().div_ceil(step.min(PUMPED)),
                "step {step}"
            );
        }
        let failing = pump(
            &mut Trickle(&data, 65_536),
            &mut |_| Err(io::Error::other("full")),
            &mut |_| {},
        );
        assert_eq!(failing.unwrap_err().to_string(), "full");
    }

    #[test]
    fn merged_output_keeps_the_order_of_writes() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo out1; echo err1 >&2; echo out2; echo err2 >&2"]);
        let (mut child, mut reader) = spawn_merged(&mut cmd).unwrap();
        let mut text = Vec::new();
        let mut calls = 0;
        let n = pump(&mut reader, &mut into(&mut text), &mut |_| calls += 1).unwrap();
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
        assert_eq!(
            pump(&mut reader, &mut into(&mut text), &mut |_| {}).unwrap(),
            0
        );
        assert!(text.is_empty());
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
