//! How a store operation fails, and the kinds a caller can match on.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::ContentId;

/// Why a store operation failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum StoreError {
    /// A system call failed.
    Io {
        /// What was being done, such as `"create temp file"`.
        op: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// No object has this id or prefix.
    NotFound {
        /// The id or prefix, as written.
        id: String,
    },
    /// More than one object starts with this prefix.
    Ambiguous {
        /// The prefix.
        prefix: String,
        /// How many objects match.
        matches: usize,
    },
    /// An object's bytes do not hash to its id, or its file is malformed.
    Corrupt {
        /// The object's id.
        id: ContentId,
        /// Its file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A path inside the store (or the root) is a symbolic link.
    Symlink {
        /// The path.
        path: PathBuf,
    },
    /// A path inside the store is not of the expected kind (a file where a
    /// directory should be, a device where an object should be).
    WrongKind {
        /// The path.
        path: PathBuf,
        /// What it should have been.
        expected: &'static str,
    },
    /// A byte or line range lies outside the object.
    OutOfRange {
        /// What was asked for, and what the object has.
        detail: String,
    },
    /// A request to remote object storage failed.
    Remote {
        /// What was being done, such as `"publish"`.
        op: &'static str,
        /// The URL it was done to (`s3://BUCKET/KEY`).
        target: String,
        /// What kind of failure it is.
        kind: StoreErrorKind,
        /// The client's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The store's location or its settings cannot be used: a malformed
    /// `s3://` URL, missing credentials, a build without S3 support.
    Config {
        /// What is wrong, naming what is missing.
        reason: String,
    },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Io { op, path, source } => {
                write!(f, "{op} {}: {source}", path.display())
            }
            StoreError::NotFound { id } => write!(f, "no stored object matches {id}"),
            StoreError::Ambiguous { prefix, matches } => write!(
                f,
                "{prefix} matches {matches} objects: give more hex digits"
            ),
            StoreError::Corrupt { id, path, reason } => {
                write!(f, "object {id} is corrupt ({}): {reason}", path.display())
            }
            StoreError::Symlink { path } => write!(
                f,
                "{} is a symbolic link, which the store never follows",
                path.display()
            ),
            StoreError::WrongKind { path, expected } => {
                write!(f, "{} is not a {expected}", path.display())
            }
            StoreError::OutOfRange { detail } => f.write_str(detail),
            StoreError::Remote {
                op, target, source, ..
            } => write!(f, "{op} {target}: {source}"),
            StoreError::Config { reason } => f.write_str(reason),
        }
    }
}

/// What kind of failure a [`StoreError`] is, for a harness to branch on
/// (`store_error_kind` in `spillway apply --json`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StoreErrorKind {
    /// The disk or a quota is full (`ENOSPC`, `EDQUOT`).
    NoSpace,
    /// Permission denied (`EACCES`, `EPERM`).
    PermissionDenied,
    /// The store is on a read-only filesystem (`EROFS`).
    ReadOnly,
    /// A path in the store is a symbolic link, or not the kind of file it
    /// should be.
    NotRegularFile,
    /// No object has this id or prefix.
    NotFound,
    /// A prefix matches more than one object.
    Ambiguous,
    /// An object does not hash to its id, or its file is malformed.
    Corrupt,
    /// A range lies outside the object.
    OutOfRange,
    /// Any other I/O error (for a remote store: any other failed request).
    OtherIo,
    /// The store's location or settings cannot be used.
    Config,
}

impl StoreErrorKind {
    /// The kind's stable name, as in JSON: `no_space`, `permission_denied`,
    /// `read_only`, `not_regular_file`, `not_found`, `ambiguous`, `corrupt`,
    /// `out_of_range`, `other_io`, `config`.
    pub fn name(self) -> &'static str {
        match self {
            StoreErrorKind::NoSpace => "no_space",
            StoreErrorKind::PermissionDenied => "permission_denied",
            StoreErrorKind::ReadOnly => "read_only",
            StoreErrorKind::NotRegularFile => "not_regular_file",
            StoreErrorKind::NotFound => "not_found",
            StoreErrorKind::Ambiguous => "ambiguous",
            StoreErrorKind::Corrupt => "corrupt",
            StoreErrorKind::OutOfRange => "out_of_range",
            StoreErrorKind::OtherIo => "other_io",
            StoreErrorKind::Config => "config",
        }
    }
}

impl fmt::Display for StoreErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Io { source, .. } => Some(source),
            StoreError::Remote { source, .. } => Some(&**source),
            _ => None,
        }
    }
}

impl StoreError {
    pub(crate) fn io<'a>(
        op: &'static str,
        path: &'a Path,
    ) -> impl FnOnce(io::Error) -> StoreError + 'a {
        move |source| StoreError::Io {
            op,
            path: path.to_path_buf(),
            source,
        }
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> StoreErrorKind {
        use rustix::io::Errno;
        match self {
            StoreError::Io { source, .. } => {
                let is = |n: Errno| source.raw_os_error() == Some(n.raw_os_error());
                if is(Errno::NOSPC) || is(Errno::DQUOT) {
                    StoreErrorKind::NoSpace
                } else if is(Errno::ROFS) {
                    StoreErrorKind::ReadOnly
                } else if is(Errno::ACCESS) || is(Errno::PERM) {
                    StoreErrorKind::PermissionDenied
                } else if is(Errno::LOOP) || is(Errno::ISDIR) || is(Errno::NOTDIR) {
                    StoreErrorKind::NotRegularFile
                } else {
                    StoreErrorKind::OtherIo
                }
            }
            StoreError::NotFound { .. } => StoreErrorKind::NotFound,
            StoreError::Ambiguous { .. } => StoreErrorKind::Ambiguous,
            StoreError::Corrupt { .. } => StoreErrorKind::Corrupt,
            StoreError::Symlink { .. } | StoreError::WrongKind { .. } => {
                StoreErrorKind::NotRegularFile
            }
            StoreError::OutOfRange { .. } => StoreErrorKind::OutOfRange,
            StoreError::Remote { kind, .. } => *kind,
            StoreError::Config { .. } => StoreErrorKind::Config,
        }
    }

    /// The underlying I/O error kind, if this is an I/O error.
    pub fn io_kind(&self) -> Option<io::ErrorKind> {
        match self {
            StoreError::Io { source, .. } => Some(source.kind()),
            _ => None,
        }
    }
}
