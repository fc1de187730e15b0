//! Why a viewer could not start or serve.

use std::io;
use std::path::PathBuf;

use spillway_registry::events::LogError;

/// Why a viewer could not start or serve.
#[derive(Debug)]
#[non_exhaustive]
pub enum ViewError {
    /// What was asked for cannot be done (no session, a bad token).
    Usage(String),
    /// A session path cannot be read.
    Session {
        /// The path.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A file is not a session log, or cannot be indexed.
    Log(LogError),
    /// The port cannot be bound.
    Bind {
        /// The port asked for (0: any).
        port: u16,
        /// Why.
        source: io::Error,
    },
    /// The server failed while serving.
    Serve(io::Error),
}

impl std::fmt::Display for ViewError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ViewError::Usage(m) => f.write_str(m),
            ViewError::Session { path, source } => write!(f, "{}: {source}", path.display()),
            ViewError::Log(e) => write!(f, "{e}"),
            ViewError::Bind { port: 0, source } => {
                write!(f, "listen on a free port of 127.0.0.1: {source}")
            }
            ViewError::Bind { port, source } => {
                write!(f, "listen on 127.0.0.1:{port}: {source}")
            }
            ViewError::Serve(e) => write!(f, "serve: {e}"),
        }
    }
}

impl std::error::Error for ViewError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ViewError::Usage(_) => None,
            ViewError::Session { source, .. } | ViewError::Bind { source, .. } => Some(source),
            ViewError::Log(e) => Some(e),
            ViewError::Serve(e) => Some(e),
        }
    }
}

impl From<LogError> for ViewError {
    fn from(e: LogError) -> Self {
        ViewError::Log(e)
    }
}
