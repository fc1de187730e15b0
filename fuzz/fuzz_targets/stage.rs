//! The stage: every preview rule, split invariance, and a byte-exact read
//! back of the stored object with the right id.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spillway::{ContentId, Selection};

mod common;
use common::support;

fuzz_target!(|data: &[u8]| {
    let Some((p, input, store, policy, spiller)) = common::setup(data) else {
        return;
    };
    let one = spiller.apply(input).expect("preview mode never fails");
    support::check_rules(input, &policy, &one);
    let split = support::apply_chunked(&spiller, input, &p.chunks());
    assert_eq!(
        support::observed(&split),
        support::observed(&one),
        "chunking changed the outcome"
    );
    let buffered = support::apply_buffered(&spiller, input, &p.chunks());
    assert_eq!(
        support::observed(&buffered),
        support::observed(&one),
        "feeding buffers changed the outcome"
    );
    if let Some(s) = &one.spill {
        let back = store
            .read(&s.id, &Selection::All)
            .expect("stored object reads back");
        assert_eq!(&back[..], &input[..s.bytes as usize]);
        assert_eq!(s.id, ContentId::of(&back));
    }
    common::clean(store);
});
