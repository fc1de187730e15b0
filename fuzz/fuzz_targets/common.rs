#![allow(dead_code)]
// The fuzz targets and their regression tests write inputs to disk; the
// rules of clippy.toml are the library's.
#![allow(clippy::disallowed_methods)]
//! What the stage targets share: a store per process and a policy drawn
//! mostly near the sizes where boundary bugs live.

use std::sync::OnceLock;

use arbitrary::{Arbitrary, Unstructured};
use spillway::{Compression, Policy, Spiller, Store};

#[path = "../../tests/support/mod.rs"]
pub mod support;

pub fn store() -> &'static Store {
    static STORE: OnceLock<(tempfile::TempDir, Store)> = OnceLock::new();
    &STORE
        .get_or_init(|| {
            let dir = tempfile::tempdir().expect("tempdir");
            let store = Store::open(dir.path().join("store")).expect("store");
            (dir, store)
        })
        .1
}

/// Removes the process's store and its temporary folder. A static is
/// never dropped: a test done with the store calls this (a fuzz run's
/// store goes with the temporary folder `fuzz/run.sh` gives it).
pub fn remove_store() {
    if let Some(dir) = store().location().as_dir().and_then(|d| d.parent()) {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Removes what an iteration stored, so the disk does not fill.
pub fn clean(store: &Store) {
    let _ = std::fs::remove_dir_all(
        store
            .location()
            .as_dir()
            .expect("a local store")
            .join("v1")
            .join("objects"),
    );
}

/// The policy knobs, drawn from the front of the input (8 bytes).
#[derive(Arbitrary, Debug, Clone, Copy)]
pub struct Params {
    pub budget: u16,
    pub select: u8,
    pub lines: u8,
    pub percent: u8,
    pub chunk: u16,
    pub flags: u8,
}

impl Params {
    /// A budget near an interesting size: exactly the notice, just above
    /// it, a power of two ± 1, or the input's length ± 1.
    pub fn budget(&self, min: usize, len: usize) -> usize {
        let b = usize::from(self.budget);
        let wobble = (b % 3) as isize - 1;
        let raw = match self.select % 5 {
            0 => min,
            1 => min + b % 64,
            2 => ((1usize << (9 + b % 8)) as isize + wobble) as usize,
            3 => (len as isize + wobble).max(0) as usize,
            _ => min + b,
        };
        raw.clamp(min, 64 << 20)
    }

    pub fn lines(&self) -> Option<u64> {
        (self.flags & 1 == 1).then_some(1 + u64::from(self.lines % 60))
    }

    pub fn percent(&self) -> u8 {
        self.percent % 101
    }

    pub fn compression(&self) -> Compression {
        if self.flags & 2 == 2 {
            Compression::Zstd { level: 1 }
        } else {
            Compression::None
        }
    }

    /// Chunk sizes for a split write of the input.
    pub fn chunks(&self) -> Vec<usize> {
        let c = usize::from(self.chunk);
        vec![1 + c % 7, 1 + c % 509, 1 + (c >> 3) % 4099]
    }

    pub fn policy(&self, store: &Store, len: usize) -> Policy {
        let min = support::min_budget(store);
        let lines = self.lines().map(|l| l.max(1));
        support::policy(
            self.budget(min, len),
            lines,
            self.percent(),
            self.compression(),
        )
    }
}

/// Decodes a stage target's input: the parameters, then the bytes to feed.
/// Returns the store, the policy and a spiller for them.
pub fn setup(data: &[u8]) -> Option<(Params, &[u8], &'static Store, Policy, Spiller)> {
    let mut u = Unstructured::new(data);
    let p = Params::arbitrary(&mut u).ok()?;
    let input = u.take_rest();
    let store = store();
    let policy = p.policy(store, input.len());
    let spiller = Spiller::new(policy.clone(), store.clone()).expect("policy fits");
    Some((p, input, store, policy, spiller))
}
