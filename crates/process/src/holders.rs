//! The processes that still hold a command's output pipe after the command
//! was stopped: a child that left its process group (`setsid`) escapes the
//! group's kill, but not this. Linux finds them in `/proc`; elsewhere
//! nothing is found, and the drain's end is all the caller gets.

use std::fs::File;

/// Kills (SIGKILL) every other process that has `pipe`'s pipe open.
#[cfg(target_os = "linux")]
pub(crate) fn kill_writers(pipe: &File) {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = pipe.metadata() else { return };
    let wanted = format!("pipe:[{}]", meta.ino());
    let me = std::process::id();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in procs.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        // Another user's process, or one gone meanwhile: not ours to see.
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        let holds = fds.flatten().any(|fd| {
            std::fs::read_link(fd.path()).is_ok_and(|l| l.as_os_str() == wanted.as_str())
        });
        if holds {
            let target = i32::try_from(pid)
                .ok()
                .and_then(rustix::process::Pid::from_raw);
            if let Some(p) = target {
                let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
            }
        }
    }
}

/// Elsewhere no process is found.
#[cfg(not(target_os = "linux"))]
pub(crate) fn kill_writers(_pipe: &File) {}
