//! The platform layer: Linux calls, and the portable unix fallbacks used on
//! every other unix system. On Linux both are compiled; the crate's own
//! tests run with `SPILLWAY_TEST_PORTABLE_SYS=1` use the fallbacks, so CI
//! tests them on Linux with the binaries it has already built.

use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};

#[cfg(target_os = "linux")]
mod linux;
mod portable;

/// Whether the portable fallbacks stand in for the Linux calls: always off
/// the Linux kernel, and on Linux only when this crate's tests ask for them.
pub(crate) fn use_portable() -> bool {
    if cfg!(not(target_os = "linux")) {
        return true;
    }
    #[cfg(test)]
    {
        static FORCED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *FORCED.get_or_init(|| {
            std::env::var_os("SPILLWAY_TEST_PORTABLE_SYS").is_some_and(|v| v == "1")
        })
    }
    #[cfg(not(test))]
    false
}

/// A pipe whose ends are close-on-exec.
pub(crate) fn pipe_cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    #[cfg(target_os = "linux")]
    if !use_portable() {
        return linux::pipe_cloexec();
    }
    portable::pipe_cloexec()
}

/// Asks for a pipe buffer of `size` bytes where the platform allows it;
/// whether it was granted.
pub(crate) fn widen_pipe(fd: BorrowedFd<'_>, size: usize) -> bool {
    #[cfg(target_os = "linux")]
    if !use_portable() {
        return linux::widen_pipe(fd, size);
    }
    portable::widen_pipe(fd, size)
}

/// Whether [`widen_pipe`] can succeed here.
#[cfg(test)]
pub(crate) fn can_widen() -> bool {
    !use_portable()
}
