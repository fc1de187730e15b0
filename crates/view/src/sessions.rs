//! The session logs a viewer shows: their indexes, followed as they grow,
//! and the changes pushed to every open page.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{json, Value};
use spillway_process::Cancel;
use spillway_registry::session::SessionIndex;
use tokio::sync::broadcast;

use crate::{ViewError, FOLLOW_EVERY};

/// How much of a log one step indexes before the lock is let go: a
/// request waits for at most one step, and a large log's first cards show
/// after its first step.
const STEP_BYTES: u64 = 16 << 20;

/// The most card positions a change names; past it the page reloads what
/// it shows.
const MAX_CHANGED: usize = 1000;

/// One session log.
#[derive(Debug)]
pub(crate) struct Session {
    /// The file's name, for a person.
    pub name: String,
    pub path: PathBuf,
    index: Mutex<SessionIndex>,
    /// Why the log can no longer be followed (it was cut or replaced).
    error: Mutex<Option<String>>,
    /// Whether the index has reached the end of the file at least once.
    caught_up: AtomicBool,
}

impl Session {
    pub fn index(&self) -> MutexGuard<'_, SessionIndex> {
        self.index.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn error(&self) -> Option<String> {
        self.error.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn caught_up(&self) -> bool {
        self.caught_up.load(Ordering::Relaxed)
    }

    /// What `/api/sessions` says of it.
    pub fn summary(&self, position: usize) -> Value {
        let index = self.index();
        let (bad, first_bad) = index.bad_lines();
        json!({
            "session": position,
            "name": self.name,
            "path": self.path,
            "dialect": match index.dialect() {
                spillway_registry::session::Dialect::Spillway => "spillway",
                _ => "deepseek-harness",
            },
            "cards": index.len(),
            "indexedBytes": index.indexed_bytes(),
            "indexing": !self.caught_up(),
            "badLines": bad,
            "bad": first_bad.iter().take(20).map(|b| json!({
                "line": b.line, "reason": b.reason, "torn": b.torn,
            })).collect::<Vec<_>>(),
            "error": self.error(),
        })
    }
}

/// Every session log of a viewer, and where their changes are announced.
#[derive(Debug)]
pub(crate) struct Sessions {
    pub list: Vec<Session>,
    pub changes: broadcast::Sender<String>,
}

/// The session logs `paths` name: each file, and each directory's
/// `*.jsonl` files in name order.
pub(crate) fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>, ViewError> {
    if paths.is_empty() {
        return Err(ViewError::Usage("name at least one session log".into()));
    }
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|source| ViewError::Session {
            path: p.clone(),
            source,
        })?;
        if !meta.is_dir() {
            out.push(p.clone());
            continue;
        }
        let read = |source| ViewError::Session {
            path: p.clone(),
            source,
        };
        let mut found = Vec::new();
        for entry in std::fs::read_dir(p).map_err(read)? {
            let path = entry.map_err(read)?.path();
            if path.extension().is_some_and(|e| e == "jsonl") && path.is_file() {
                found.push(path);
            }
        }
        if found.is_empty() {
            return Err(ViewError::Usage(format!(
                "{} holds no session log (*.jsonl)",
                p.display()
            )));
        }
        found.sort();
        out.extend(found);
    }
    Ok(out)
}

impl Sessions {
    /// Opens each log, checking its header and indexing its first step.
    pub fn open(paths: Vec<PathBuf>) -> Result<Sessions, ViewError> {
        let mut list = Vec::with_capacity(paths.len());
        for path in paths {
            let (index, first) = SessionIndex::open_up_to(&path, STEP_BYTES)?;
            list.push(Session {
                name: name_of(&path),
                path,
                index: Mutex::new(index),
                error: Mutex::new(None),
                caught_up: AtomicBool::new(!first.more),
            });
        }
        let (changes, _) = broadcast::channel(256);
        Ok(Sessions { list, changes })
    }

    pub fn get(&self, position: usize) -> Option<&Session> {
        self.list.get(position)
    }

    /// Indexes one step of every log; announces what changed. Whether a
    /// log has more to index at once.
    fn step(&self) -> bool {
        let mut more = false;
        for (position, s) in self.list.iter().enumerate() {
            if s.error().is_some() {
                continue;
            }
            let mut index = s.index();
            let bad_before = index.bad_lines().0;
            let message = match index.refresh_up_to(STEP_BYTES) {
                Ok(r) => {
                    more |= r.more;
                    let was = s.caught_up.fetch_or(!r.more, Ordering::Relaxed);
                    let now = was || !r.more;
                    let (bad, _) = index.bad_lines();
                    // A line that is not an event is news too.
                    if r.events == 0 && r.cards.is_empty() && now == was && bad == bad_before {
                        continue;
                    }
                    let changed = (r.cards.len() <= MAX_CHANGED).then_some(&r.cards);
                    json!({
                        "session": position,
                        "cards": index.len(),
                        "changed": changed,
                        "badLines": bad,
                        "indexing": !now,
                    })
                }
                Err(e) => {
                    let text = e.to_string();
                    *s.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(text.clone());
                    json!({ "session": position, "error": text })
                }
            };
            drop(index);
            // No page open is no one to tell.
            let _ = self.changes.send(message.to_string());
        }
        more
    }
}

/// Follows every log until `cancel` is asked: a step at once while a log
/// has more to index, else a look every [`FOLLOW_EVERY`].
pub(crate) async fn follow(sessions: std::sync::Arc<Sessions>, cancel: Cancel) {
    while !cancel.is_cancelled() {
        let s = sessions.clone();
        let more = tokio::task::spawn_blocking(move || s.step())
            .await
            .unwrap_or(false);
        if !more {
            tokio::time::sleep(FOLLOW_EVERY).await;
        } else {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

fn name_of(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}
