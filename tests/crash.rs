//! Crash consistency, modelled: every change a spill makes to the store is
//! recorded, and a power loss is simulated after each prefix of them (see
//! `spillway::CrashModel`). After every simulated reboot:
//!
//! * every spill that had returned in durable mode reads back exactly;
//! * no object name resolves to bytes other than its content;
//! * `verify` cleans whatever the crash left, and a second `verify` finds
//!   nothing;
//! * the same spill, run again, succeeds and reads back.
//!
//! Cases: raw and zstd, a small object and a large one (for zstd, two
//! frames: the second written by worker threads), into a fresh store and
//! into a warm one; two simulated crash kinds (only synced state survives;
//! every name survives but only synced bytes).
// Tests damage stores on purpose and drive them from threads of their
// own; the rules of clippy.toml are the library's.
#![allow(clippy::disallowed_methods)]

mod support;

use std::path::Path;
use std::time::Duration;

use spillway::{Compression, ContentId, Durability, Policy, Render, Selection, Spiller, Store};
use spillway::{CrashKind, CrashModel};

fn policy(compression: Compression) -> Policy {
    Policy::builder()
        .max_inline_bytes(4096)
        .render(Render::Raw)
        .compression(compression)
        .durability(Durability::Durable)
        .build()
        .unwrap()
}

/// What a crash at every point of `spills` (run in order) leaves.
fn check_every_crash_point(compression: Compression, inputs: &[Vec<u8>], warm: bool) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    std::fs::create_dir(&root).unwrap();
    if warm {
        let store = Store::open(&root).unwrap();
        let sp = Spiller::new(policy(compression), store).unwrap();
        sp.apply(&support::tool_output(991, 20_000)).unwrap();
    }
    let model = CrashModel::new(&root).unwrap();
    let store = Store::open(&root).unwrap().with_crash_model(&model);
    let sp = Spiller::new(policy(compression), store).unwrap();
    // (id, input, the crash point from which the spill had returned)
    let mut returned: Vec<(ContentId, &[u8], usize)> = Vec::new();
    for input in inputs {
        let o = sp.apply(input).unwrap();
        assert!(o.store_error.is_none(), "{:?}", o.store_error);
        returned.push((o.spill.unwrap().id, input, model.len()));
    }
    let points = model.len();
    assert!(points > 4, "the model saw only {points} changes");
    for at in 0..=points {
        for kind in [CrashKind::SyncedOnly, CrashKind::NamesWithoutData] {
            let after = dir.path().join(format!("crash-{at}-{kind:?}"));
            model.materialize(at, kind, &after).unwrap();
            let what = format!(
                "{} crash {kind:?} after {at} of {points} changes",
                compression.name()
            );
            check_rebooted(&after, compression, &returned, at, &what);
            std::fs::remove_dir_all(&after).unwrap();
        }
    }
}

fn check_rebooted(
    root: &Path,
    compression: Compression,
    returned: &[(ContentId, &[u8], usize)],
    at: usize,
    what: &str,
) {
    let store = Store::open(root).unwrap();
    for (id, input, done) in returned {
        if at >= *done {
            let back = store.read(id, &Selection::All);
            assert_eq!(
                back.ok().as_deref(),
                Some(*input),
                "{what}: a durable spill was lost"
            );
        }
    }
    for obj in store.list().unwrap() {
        if let Ok(bytes) = store.read(&obj.id, &Selection::All) {
            assert_eq!(
                ContentId::of(&bytes),
                obj.id,
                "{what}: wrong bytes under a name"
            );
        }
    }
    store.verify_all(Duration::ZERO, &mut |_, _| {}).unwrap();
    let again = store.verify_all(Duration::ZERO, &mut |_, _| {}).unwrap();
    assert!(again.corrupt.is_empty(), "{what}: {:?}", again.corrupt);
    assert_eq!(again.temp_removed, 0, "{what}");
    let sp = Spiller::new(policy(compression), store.clone()).unwrap();
    for (id, input, _) in returned {
        let o = sp.apply(input).unwrap();
        assert!(
            o.store_error.is_none(),
            "{what}: rerun failed: {:?}",
            o.store_error
        );
        assert_eq!(
            store.read(id, &Selection::All).unwrap(),
            *input,
            "{what}: rerun"
        );
    }
}

fn small() -> Vec<Vec<u8>> {
    vec![
        support::tool_output(1, 50_000),
        support::tool_output(2, 70_000),
    ]
}

#[test]
fn a_raw_spill_into_a_fresh_store_survives_a_crash_at_every_point() {
    check_every_crash_point(Compression::None, &small(), false);
}

#[test]
fn a_raw_spill_into_a_warm_store_survives_a_crash_at_every_point() {
    check_every_crash_point(Compression::None, &small(), true);
}

#[test]
fn a_zstd_spill_into_a_fresh_store_survives_a_crash_at_every_point() {
    check_every_crash_point(Compression::Zstd { level: 1 }, &small(), false);
}

#[test]
fn a_zstd_spill_into_a_warm_store_survives_a_crash_at_every_point() {
    check_every_crash_point(Compression::Zstd { level: 1 }, &small(), true);
}

/// Raw objects of several 1 MiB blocks, and zstd objects past 8 MiB, whose
/// second frame comes from worker threads.
#[test]
fn large_and_multi_frame_spills_survive_a_crash_at_every_point() {
    let big = support::tool_output(3, 3 << 20);
    check_every_crash_point(Compression::None, &[big], false);
    let huge = support::tool_output(4, 9 << 20);
    check_every_crash_point(Compression::Zstd { level: 1 }, &[huge], true);
}

/// `apply` of a large input writes it while another thread hashes it; the
/// second time the content is a hit, found by the hash, and the write under
/// way is dropped. Both publish paths hold at every crash point.
#[test]
fn a_whole_input_written_while_hashed_and_its_hit_survive_a_crash_at_every_point() {
    let big = support::tool_output(5, 5 << 20);
    check_every_crash_point(Compression::None, &[big.clone(), big.clone()], true);
    check_every_crash_point(Compression::Zstd { level: 1 }, &[big.clone(), big], false);
}
