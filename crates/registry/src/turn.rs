//! One budget for the calls a model issued together.
//!
//! Each call runs through the whole pipeline as [`Registry::call`] runs it
//! (its own tool's policy, its output stored once), in any order and on any
//! thread. When all have run, the turn shares its budget out max-min fairly:
//! a result that needs no more than an equal share of what is left keeps
//! everything it had, and the largest ones split the rest evenly. Only those
//! are cut again, from their stored full output (which is found already
//! stored: nothing is written twice). The shares depend on the results
//! alone, never on the order in which the calls finished.
//!
//! The session log gets a `tool/turn` event with every call's demand and
//! share, then each call's `tool/result`, in the order the model issued
//! them.

use std::fmt;
use std::sync::Mutex;

use spillway::{PolicyError, Selection, Spiller};

use crate::call::{joined_text, replace_text};
use crate::events::{Event, LogError, TurnShare};
use crate::{NotDurable, Registry, ToolCall, ToolResult};

/// Why a turn cannot be made.
#[derive(Debug)]
#[non_exhaustive]
pub enum TurnError {
    /// The budget cannot hold a preview for every call.
    BudgetTooSmall {
        /// The budget asked for.
        got: usize,
        /// The smallest budget for this many calls of these tools.
        needed: usize,
    },
    /// A tool's policy could not be narrowed to a share.
    Policy(PolicyError),
}

impl fmt::Display for TurnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TurnError::BudgetTooSmall { got, needed } => write!(
                f,
                "a turn budget of {got} bytes cannot hold a preview for every call: use at least {needed}"
            ),
            TurnError::Policy(e) => write!(f, "turn: {e}"),
        }
    }
}

impl std::error::Error for TurnError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TurnError::Policy(e) => Some(e),
            TurnError::BudgetTooSmall { .. } => None,
        }
    }
}

impl From<PolicyError> for TurnError {
    fn from(e: PolicyError) -> Self {
        TurnError::Policy(e)
    }
}

type Ran = (ToolResult, Result<(), LogError>);

/// The calls of one turn. Run them with [`Turn::run`] (from any thread, in
/// any order) or [`Turn::run_all`], then [`Turn::finish`].
///
/// # Examples
///
/// ```
/// # use std::sync::Arc;
/// # use serde_json::json;
/// # use spillway::{Policy, Spiller, Store};
/// # use spillway_registry::{events::{LogSync, SessionLog}, tools::Bash, Registry, ToolCall};
/// # let dir = tempfile::tempdir().unwrap();
/// # let spiller = Spiller::new(Policy::default(), Store::open(dir.path().join("s")).unwrap()).unwrap();
/// # let log = Arc::new(SessionLog::open(dir.path().join("log"), LogSync::EveryEvent).unwrap());
/// let registry = Registry::builder(spiller, log).unwrap().tool(Bash::default()).build();
/// let calls = vec![
///     ToolCall::new("a", "bash", json!({"command": "echo small"})),
///     ToolCall::new("b", "bash", json!({"command": "seq 1 100000"})),
///     ToolCall::new("c", "bash", json!({"command": "seq 1 200000"})),
/// ];
/// let turn = registry.turn("t1", calls, 24 * 1024).unwrap();
/// turn.run_all();
/// let results: Vec<_> = turn.finish().into_iter().map(Result::unwrap).collect();
/// let text = |i: usize| results[i].content[0].as_text().unwrap().len();
/// assert_eq!(results[0].content[0].as_text(), Some("small\n"));
/// assert!(text(0) + text(1) + text(2) <= 24 * 1024);
/// ```
pub struct Turn<'r> {
    registry: &'r Registry,
    id: String,
    budget: usize,
    calls: Vec<ToolCall>,
    slots: Vec<Mutex<Option<Ran>>>,
}

impl fmt::Debug for Turn<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Turn")
            .field("id", &self.id)
            .field("budget", &self.budget)
            .field("calls", &self.calls.len())
            .finish()
    }
}

/// Max-min fair shares of `budget` for these demands: each gets its demand
/// when that is at most an even split of what the smaller ones leave, the
/// rest split that evenly.
pub fn fair_shares(demands: &[usize], budget: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..demands.len()).collect();
    order.sort_by_key(|&i| (demands[i], i));
    let mut shares = vec![0; demands.len()];
    let mut left = budget;
    for (k, &i) in order.iter().enumerate() {
        let even = left / (demands.len() - k);
        shares[i] = demands[i].min(even);
        left -= shares[i];
    }
    shares
}

impl Registry {
    /// A turn: `calls`, issued together, whose results hold at most
    /// `budget` bytes of text together.
    ///
    /// # Errors
    ///
    /// [`TurnError::BudgetTooSmall`] when `budget` cannot hold the smallest
    /// preview of every call.
    pub fn turn(
        &self,
        id: impl Into<String>,
        calls: Vec<ToolCall>,
        budget: usize,
    ) -> Result<Turn<'_>, TurnError> {
        let mut floor = 0;
        for c in &calls {
            floor = floor.max(self.spiller_for(&c.tool).min_budget());
        }
        let needed = floor * calls.len();
        if budget < needed {
            return Err(TurnError::BudgetTooSmall {
                got: budget,
                needed,
            });
        }
        let slots = calls.iter().map(|_| Mutex::new(None)).collect();
        Ok(Turn {
            registry: self,
            id: id.into(),
            budget,
            calls,
            slots,
        })
    }
}

impl Turn<'_> {
    /// The calls, in the order the model issued them.
    pub fn calls(&self) -> &[ToolCall] {
        &self.calls
    }

    /// Runs call `index` (once; a second run does nothing). Safe to call
    /// from many threads at once.
    ///
    /// # Panics
    ///
    /// When `index` is not a call of this turn.
    pub fn run(&self, index: usize) {
        let mut slot = self.slots[index]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(
                self.registry
                    .execute(&self.calls[index], crate::Cancel::new()),
            );
        }
    }

    /// Runs every call, each on a thread of its own.
    pub fn run_all(&self) {
        std::thread::scope(|s| {
            for i in 0..self.calls.len() {
                s.spawn(move || self.run(i));
            }
        });
    }

    /// Runs what has not run, shares the budget out, cuts the results that
    /// exceed their share, and records the turn and its results. The
    /// results come in the order of the calls.
    pub fn finish(self) -> Vec<Result<ToolResult, NotDurable>> {
        for i in 0..self.calls.len() {
            self.run(i);
        }
        let mut ran: Vec<Ran> = self
            .slots
            .iter()
            .map(|m| {
                m.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take()
                    .expect("every call ran")
            })
            .collect();
        let demands: Vec<usize> = ran
            .iter()
            .map(|(r, _)| joined_text(&r.content).map_or(0, |t| t.len()))
            .collect();
        let shares = fair_shares(&demands, self.budget);
        let mut log = Vec::with_capacity(ran.len());
        for (i, (result, _)) in ran.iter_mut().enumerate() {
            let mut share = shares[i];
            if share < demands[i] {
                let spiller = self.registry.spiller_for(&self.calls[i].tool);
                share = Self::cut(result, spiller, share);
            }
            log.push(TurnShare {
                call_id: result.call_id.clone(),
                demand: demands[i] as u64,
                share: share as u64,
            });
        }
        let turn_logged = self.registry.log.append(&Event::Turn {
            turn_id: self.id.clone(),
            budget: self.budget as u64,
            calls: log,
        });
        ran.into_iter()
            .map(|(result, logged)| {
                // Without its turn a result is not durable either.
                let logged = match (&turn_logged, logged) {
                    (Err(e), _) => Err(LogError::Io {
                        op: "record the turn",
                        path: self.registry.log.path().to_path_buf(),
                        source: std::io::Error::other(e.to_string()),
                    }),
                    (Ok(()), l) => l,
                };
                self.registry.record(result, logged)
            })
            .collect()
    }

    /// Cuts a result's text to `share` bytes, from its stored full output
    /// when there is one. Returns the text's new length.
    fn cut(result: &mut ToolResult, spiller: &Spiller, share: usize) -> usize {
        let Some(text) = joined_text(&result.content) else {
            return 0;
        };
        // `turn` checked every share can hold a preview; this cannot fail.
        let Ok(narrowed) = spiller.with_budget(share) else {
            return text.len();
        };
        let mut stage = narrowed.stage();
        let full = result.meta.spills.first().and_then(|id| {
            spiller
                .store()
                .read_into(id, &Selection::All, &mut stage)
                .ok()
        });
        if full.is_none() {
            // Not stored (or no longer readable): what the result holds is
            // all there is.
            stage = narrowed.stage();
            stage.feed(text.as_bytes());
        }
        let outcome = match stage.finish() {
            Ok(o) => o,
            Err(e) => {
                result.is_error = true;
                e.into_outcome()
            }
        };
        let len = outcome.content.len();
        result.content = replace_text(std::mem::take(&mut result.content), outcome.content);
        if let Some(s) = outcome.spill {
            if !result.meta.spills.contains(&s.id) {
                result.meta.spills.insert(0, s.id);
            }
        }
        len
    }
}

#[cfg(test)]
mod tests {
    use super::fair_shares;

    #[test]
    fn shares_are_max_min_fair_and_within_the_budget() {
        assert_eq!(fair_shares(&[10, 20, 30], 100), [10, 20, 30]);
        assert_eq!(fair_shares(&[10, 500, 300], 310), [10, 150, 150]);
        assert_eq!(fair_shares(&[100, 100], 101), [50, 51]);
        assert_eq!(fair_shares(&[], 100), Vec::<usize>::new());
        assert_eq!(fair_shares(&[0, 1000], 500), [0, 500]);
    }
}
