//! A local web viewer for spillway session logs.
//!
//! One card per outer call, exactly as
//! [`spillway_registry::card::cards`] projects the log; each program's
//! nested calls inside its card; every spillway notice shown as what it
//! is and expandable from the store, a page (at most 1 MiB) at a time,
//! hash-checked as every read is; search over the cards and, when asked,
//! inside the stored objects they reference; a log still being written is
//! followed and its new events pushed to the page (server-sent events).
//!
//! The server listens on loopback only and answers only a request that
//! carries its token (in the URL once, then a cookie, or a bearer
//! header), names the host it listens on (no DNS rebinding) and, when it
//! says where it comes from, comes from the page itself. The page is one
//! document, its script and its style, all served from the binary: no
//! network, no CDN.
//!
//! ```no_run
//! use spillway_view::Viewer;
//! let viewer = Viewer::builder()
//!     .session("session.jsonl")
//!     .build()?;
//! println!("{}", viewer.url());
//! viewer.serve(spillway_process::Cancel::new())?;
//! # Ok::<(), spillway_view::ViewError>(())
//! ```
//!
//! The JSON API under the page is documented in `docs/reference.md`
//! (Viewer API).

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod answer;
mod api;
mod assets;
mod error;
mod guard;
mod objects;
mod search;
mod sessions;

use std::future::IntoFuture;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use spillway::Store;
use spillway_process::Cancel;

pub use error::ViewError;
use sessions::Sessions;

/// The most a request for a stored object's text returns: larger
/// selections are paged.
pub const MAX_PAGE_BYTES: usize = 1 << 20;

/// How often a log is looked at for new lines.
const FOLLOW_EVERY: Duration = Duration::from_millis(200);

/// How a [`Viewer`] is set up.
#[derive(Debug, Default)]
pub struct ViewerBuilder {
    sessions: Vec<PathBuf>,
    store: Option<Store>,
    port: u16,
    token: Option<String>,
}

impl ViewerBuilder {
    /// A session log to show, or a directory whose `*.jsonl` files are
    /// session logs (not its subdirectories).
    pub fn session(mut self, path: impl AsRef<Path>) -> Self {
        self.sessions.push(path.as_ref().to_path_buf());
        self
    }

    /// The store the notices' objects are read from. Without one, the
    /// cards show and every notice says that no store was given.
    pub fn store(mut self, store: Store) -> Self {
        self.store = Some(store);
        self
    }

    /// The port on 127.0.0.1; 0 (the default) takes a free one.
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// The token every request must carry; by default 128 random bits.
    /// (A test gives its own; a person should not.)
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Opens every session log (each must be one: a file whose first line
    /// is a spillway or DeepSeek Harness session header) and binds the
    /// port.
    ///
    /// # Errors
    ///
    /// [`ViewError`] when no session is given, a path cannot be read or is
    /// not a session log, the token is too short, or the port cannot be
    /// bound.
    pub fn build(self) -> Result<Viewer, ViewError> {
        let paths = sessions::expand(&self.sessions)?;
        let sessions = Sessions::open(paths)?;
        let token = match self.token {
            Some(t) if t.len() >= 16 && t.bytes().all(|b| b.is_ascii_alphanumeric()) => t,
            Some(_) => {
                return Err(ViewError::Usage(
                    "a token is at least 16 letters and digits".into(),
                ))
            }
            None => guard::new_token()?,
        };
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        let listener = TcpListener::bind(addr).map_err(|source| ViewError::Bind {
            port: self.port,
            source,
        })?;
        let port = listener
            .local_addr()
            .map_err(|source| ViewError::Bind {
                port: self.port,
                source,
            })?
            .port();
        Ok(Viewer {
            listener,
            port,
            token,
            sessions: Arc::new(sessions),
            store: self.store,
        })
    }
}

/// A viewer bound to its port, not serving yet. See the crate
/// documentation.
#[derive(Debug)]
pub struct Viewer {
    listener: TcpListener,
    port: u16,
    token: String,
    sessions: Arc<Sessions>,
    store: Option<Store>,
}

impl Viewer {
    /// A builder.
    pub fn builder() -> ViewerBuilder {
        ViewerBuilder::default()
    }

    /// The port it listens on, on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The address to open: `http://127.0.0.1:PORT/?token=TOKEN`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/?token={}", self.port, self.token)
    }

    /// Serves until `cancel` is asked: follows the logs, answers the page
    /// and its API, and then closes every connection (the live ones too)
    /// within a second.
    ///
    /// # Errors
    ///
    /// [`ViewError::Serve`] when the server cannot run.
    pub fn serve(self, cancel: Cancel) -> Result<(), ViewError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_io()
            .enable_time()
            .thread_name("spillway-view")
            .build()
            .map_err(ViewError::Serve)?;
        let state = Arc::new(api::State {
            sessions: self.sessions.clone(),
            store: self.store,
            guard: guard::Guard::new(self.port, self.token),
            stop: cancel.clone(),
        });
        let listener = self.listener;
        let result = runtime.block_on(async move {
            listener.set_nonblocking(true).map_err(ViewError::Serve)?;
            let listener = tokio::net::TcpListener::from_std(listener).map_err(ViewError::Serve)?;
            let follow = tokio::spawn(sessions::follow(state.sessions.clone(), cancel.clone()));
            let app = api::router(state);
            let served = axum::serve(listener, app).with_graceful_shutdown(asked(cancel.clone()));
            // Graceful shutdown waits for every connection to end: one
            // whose client never finishes its request would hold the
            // viewer forever. A second after the stop, they are dropped.
            let deadline = async {
                asked(cancel.clone()).await;
                tokio::time::sleep(CLOSE_WITHIN).await;
            };
            let served = match futures_util::future::select(
                Box::pin(served.into_future()),
                Box::pin(deadline),
            )
            .await
            {
                futures_util::future::Either::Left((served, _)) => served.map_err(ViewError::Serve),
                futures_util::future::Either::Right(_) => Ok(()),
            };
            follow.abort();
            served
        });
        // A connection that would not close is dropped with the runtime.
        runtime.shutdown_timeout(CLOSE_WITHIN);
        result
    }
}

/// How long connections get to end once the viewer is asked to stop.
const CLOSE_WITHIN: Duration = Duration::from_secs(1);

/// Resolves once `cancel` is asked (a signal handler can set it but wake
/// no one, so it is looked at every 50 ms).
async fn asked(cancel: Cancel) {
    while !cancel.is_cancelled() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
