//! Any unix: `pipe` then `FD_CLOEXEC` on both ends (no `pipe2` on macOS),
//! and the system's own pipe size.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::io::{fcntl_getfd, fcntl_setfd, FdFlags};

/// A pipe whose ends are close-on-exec. Between `pipe` and `fcntl`, a
/// process that another thread spawns at that very moment can inherit the
/// ends (and hold the pipe open): the race every unix without `pipe2` has.
pub(crate) fn pipe_cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    let (r, w) = rustix::pipe::pipe()?;
    for fd in [r.as_fd(), w.as_fd()] {
        let flags = fcntl_getfd(fd)?;
        fcntl_setfd(fd, flags | FdFlags::CLOEXEC)?;
    }
    Ok((r, w))
}

/// The pipe keeps the system's size.
pub(crate) fn widen_pipe(_fd: BorrowedFd<'_>, _size: usize) -> bool {
    false
}
