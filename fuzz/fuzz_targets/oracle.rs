//! The streaming stage against the naive whole-buffer oracle.
#![no_main]

use libfuzzer_sys::fuzz_target;

mod common;
use common::support;

fuzz_target!(|data: &[u8]| {
    let Some((p, input, store, policy, spiller)) = common::setup(data) else {
        return;
    };
    let got = support::apply_chunked(&spiller, input, &p.chunks());
    assert_eq!(
        support::observed(&got),
        support::expected(input, &policy, store)
    );
    common::clean(store);
});
