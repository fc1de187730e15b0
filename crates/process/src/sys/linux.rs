//! Linux: `pipe2(O_CLOEXEC)` and `F_SETPIPE_SZ`.

use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};

use rustix::pipe::{fcntl_setpipe_size, pipe_with, PipeFlags};

/// A pipe whose ends are close-on-exec from the start.
pub(crate) fn pipe_cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(pipe_with(PipeFlags::CLOEXEC)?)
}

/// Asks for a pipe buffer of `size` bytes; fails harmlessly on anything
/// that is not a pipe, or past `/proc/sys/fs/pipe-max-size`.
pub(crate) fn widen_pipe(fd: BorrowedFd<'_>, size: usize) -> bool {
    fcntl_setpipe_size(fd, size).is_ok()
}
