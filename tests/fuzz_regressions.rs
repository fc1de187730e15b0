//! Every input a fuzz target ever failed on, replayed through the same check
//! the target runs. Inputs live in `fuzz/regressions/<target>/`.

#[path = "../fuzz/fuzz_targets/common.rs"]
mod common;

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

/// The `oracle` target: the streaming stage against the whole-buffer oracle.
#[test]
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
