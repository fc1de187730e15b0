//! Every input a fuzz target ever failed on, replayed through the same check
//! the target runs. Inputs live in `fuzz/regressions/<target>/`.

#[path = "../fuzz/fuzz_targets/common.rs"]
mod common;
#[path = "../fuzz/fuzz_targets/render_check.rs"]
mod render_check;

use common::support;
use std::path::Path;

fn inputs(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/regressions")
        .join(target);
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

/// One test, so the targets' shared store is never cleaned under another
/// test's feet.
#[test]
fn every_saved_fuzz_failure_now_passes() {
    // The store's folder is removed when the test ends, failed or not.
    struct RemoveStore;
    impl Drop for RemoveStore {
        fn drop(&mut self) {
            common::remove_store();
        }
    }
    let _remove = RemoveStore;
    oracle_target_regressions();
    stage_target_regressions();
    render_target_regressions();
}

/// The `render` target: no escape reaches the content, budgets, split
/// invariance, ranges, the raw object.
fn render_target_regressions() {
    let cases = inputs("render");
    assert!(!cases.is_empty());
    for (_, data) in cases {
        render_check::check(&data);
    }
}

/// The `oracle` target: the streaming stage against the whole-buffer oracle.
fn oracle_target_regressions() {
    let cases = inputs("oracle");
    assert!(!cases.is_empty());
    for (name, data) in cases {
        let (p, input, store, policy, spiller) = common::setup(&data).expect("a decodable input");
        let got = support::apply_chunked(&spiller, input, &p.chunks());
        support::check_rules(input, &policy, &got);
        assert_eq!(
            support::observed(&got),
            support::expected(input, &policy, store),
            "{name}"
        );
        common::clean(store);
    }
}

/// The `stage` target: every rule, split invariance, exact read-back.
fn stage_target_regressions() {
    let cases = inputs("stage");
    assert!(!cases.is_empty());
    for (name, data) in cases {
        let (p, input, store, policy, spiller) = common::setup(&data).expect("a decodable input");
        let one = spiller.apply(input).expect("preview mode never fails");
        support::check_rules(input, &policy, &one);
        let split = support::apply_chunked(&spiller, input, &p.chunks());
        assert_eq!(support::observed(&split), support::observed(&one), "{name}");
        if let Some(s) = &one.spill {
            let back = store.read(&s.id, &spillway::Selection::All).unwrap();
            assert_eq!(&back[..], &input[..s.bytes as usize], "{name}");
        }
        common::clean(store);
    }
}
