//! Stopping a child the way a well-behaved parent does: ask, wait, then
//! insist. The MCP stdio transport prescribes exactly this order for a
//! server: close its input, wait, SIGTERM, wait, SIGKILL.

use std::io;
use std::process::{Child, ExitStatus};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rustix::process::{kill_process, Pid, Signal};

/// How often a wait looks at the child.
const TICK: Duration = Duration::from_millis(20);

/// Waits up to `limit` for `child` to exit; `None` when it is still
/// running. When `interrupt` is given, a signal number stored there (by the
/// caller's signal handler) ends the wait early, and is left in place.
///
/// # Errors
///
/// When the child's status cannot be read.
pub fn wait_timeout(
    child: &mut Child,
    limit: Duration,
    interrupt: Option<&AtomicUsize>,
) -> io::Result<Option<ExitStatus>> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        let now = Instant::now();
        if now >= deadline || interrupt.is_some_and(|i| i.load(Ordering::SeqCst) != 0) {
            return Ok(None);
        }
        std::thread::sleep(TICK.min(deadline - now));
    }
}

/// Sends signal `sig` (a number such as `libc::SIGTERM`) to `child`
/// alone, not its group; false when it has already been reaped or the
/// number is not a signal.
pub fn signal(child: &Child, sig: i32) -> bool {
    let (Some(pid), Some(sig)) = (
        i32::try_from(child.id()).ok().and_then(Pid::from_raw),
        Signal::from_named_raw(sig),
    ) else {
        return false;
    };
    kill_process(pid, sig).is_ok()
}

/// The signal numbers [`stop`] sends: the one definition of each that
/// spillway's crates use.
pub const SIGTERM: i32 = Signal::TERM.as_raw();
/// SIGINT, what Ctrl-C sends.
pub const SIGINT: i32 = Signal::INT.as_raw();
/// SIGKILL, which [`stop`] sends when SIGTERM was not enough (and what a
/// cancelled call's command, or one its program left running, gets).
pub const SIGKILL: i32 = Signal::KILL.as_raw();

/// Stops `child` after its input was closed (or a signal was passed on):
/// waits `grace` for it to exit, then sends SIGTERM and waits `grace`
/// again, then kills it with SIGKILL. Returns its exit status and whether
/// it had to be signalled (`Some(signal)`: SIGTERM or SIGKILL).
///
/// # Errors
///
/// When the child's status cannot be read.
pub fn stop(child: &mut Child, grace: Duration) -> io::Result<(ExitStatus, Option<i32>)> {
    if let Some(s) = wait_timeout(child, grace, None)? {
        return Ok((s, None));
    }
    signal(child, SIGTERM);
    if let Some(s) = wait_timeout(child, grace, None)? {
        return Ok((s, Some(SIGTERM)));
    }
    let _ = child.kill();
    Ok((child.wait()?, Some(Signal::KILL.as_raw())))
}

/// [`stop`] for a child that leads a process group of its own (started
/// with `process_group(0)`): SIGTERM and SIGKILL go to the whole group, and
/// once the child is gone whatever of its group is left (a grandchild that
/// outlived it) is killed too, so nothing it started keeps running.
///
/// # Errors
///
/// When the child's status cannot be read.
pub fn stop_group(child: &mut Child, grace: Duration) -> io::Result<(ExitStatus, Option<i32>)> {
    let group = i32::try_from(child.id()).ok().and_then(Pid::from_raw);
    let to_group = |sig: Signal| {
        if let Some(g) = group {
            let _ = rustix::process::kill_process_group(g, sig);
        }
    };
    let mut sent = None;
    let status = match wait_timeout(child, grace, None)? {
        Some(s) => s,
        None => {
            to_group(Signal::TERM);
            sent = Some(SIGTERM);
            match wait_timeout(child, grace, None)? {
                Some(s) => s,
                None => {
                    to_group(Signal::KILL);
                    sent = Some(Signal::KILL.as_raw());
                    child.wait()?
                }
            }
        }
    };
    // The group outlives its leader while any member lives: those go too.
    to_group(Signal::KILL);
    Ok((status, sent))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};

    #[test]
    fn a_child_that_exits_on_its_own_is_not_signalled() {
        let mut c = Command::new("sh").args(["-c", "exit 3"]).spawn().unwrap();
        let (s, sent) = stop(&mut c, Duration::from_secs(5)).unwrap();
        assert_eq!((s.code(), sent), (Some(3), None));
    }

    #[test]
    fn sigterm_comes_after_the_grace_and_sigkill_after_another() {
        let mut c = Command::new("sleep").arg("30").spawn().unwrap();
        let t = Instant::now();
        let (s, sent) = stop(&mut c, Duration::from_millis(200)).unwrap();
        assert_eq!((s.signal(), sent), (Some(SIGTERM), Some(SIGTERM)));
        assert!(t.elapsed() >= Duration::from_millis(200));

        // A child that ignores SIGTERM is killed.
        let mut c = Command::new("sh")
            .args([
                "-c",
                "trap '' TERM; echo ready; while :; do sleep 0.05; done",
            ])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut ready = [0u8; 6];
        std::io::Read::read_exact(c.stdout.as_mut().unwrap(), &mut ready).unwrap();
        let (s, sent) = stop(&mut c, Duration::from_millis(200)).unwrap();
        assert_eq!(s.signal(), Some(Signal::KILL.as_raw()));
        assert_eq!(sent, Some(Signal::KILL.as_raw()));
    }

    #[test]
    fn stopping_a_group_stops_what_its_leader_started() {
        use std::os::unix::process::CommandExt;
        // The leader starts a grandchild, then ignores SIGTERM.
        let mut c = Command::new("sh")
            .args([
                "-c",
                "sleep 30 & echo $!; trap '' TERM; while :; do sleep 0.05; done",
            ])
            .stdout(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(c.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let grandchild: i32 = line.trim().parse().unwrap();
        let (s, sent) = stop_group(&mut c, Duration::from_millis(100)).unwrap();
        assert_eq!(s.signal(), Some(Signal::KILL.as_raw()));
        assert_eq!(sent, Some(Signal::KILL.as_raw()));
        // The grandchild is gone (reaped by init, or a zombie for a moment).
        let t = Instant::now();
        let alive = || {
            std::fs::read_to_string(format!("/proc/{grandchild}/stat")).is_ok_and(|st| {
                !st.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
        };
        while alive() && t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!alive(), "the grandchild {grandchild} still runs");
    }

    #[test]
    fn a_stored_signal_ends_a_wait_early() {
        let mut c = Command::new("sleep").arg("30").spawn().unwrap();
        let flag = AtomicUsize::new(15);
        let t = Instant::now();
        assert!(wait_timeout(&mut c, Duration::from_secs(20), Some(&flag))
            .unwrap()
            .is_none());
        assert!(t.elapsed() < Duration::from_secs(10));
        assert!(signal(&c, Signal::KILL.as_raw()));
        c.wait().unwrap();
    }
}
