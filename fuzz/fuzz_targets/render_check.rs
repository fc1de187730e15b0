//! The render target's check, shared with the regression test.

use spillway::{Render, Selection, Spiller, Tokenizer};

use crate::common::{self, support};

/// Checks one input: see the `render` target.
pub fn check(data: &[u8]) {
    let Some((p, input, store, policy, _)) = common::setup(data) else {
        return;
    };
    let mut b = policy.to_config().builder();
    b.render(Render::Terminal)
        .templates(policy.templates().clone());
    if p.flags & 4 == 4 {
        b.salient(Vec::<String>::new());
    }
    if p.flags & 8 == 8 {
        // Approximate tokens keep the target fast; the vocabularies are
        // checked by the property tests.
        b.tokenizer(Tokenizer::Approx)
            .max_inline_tokens(Some(policy.max_inline_bytes() as u64 / 5 + 120));
    }
    let Ok(policy) = b.build() else { return };
    let Ok(spiller) = Spiller::new(policy.clone(), store.clone()) else {
        return;
    };
    let one = spiller.apply(input).expect("preview mode never fails");
    assert!(!one.content.contains('\x1b'), "an ESC reached the content");
    // A `\r` reaches it only as part of a `\r\n` line ending.
    assert!(
        !one.content
            .replace("\r\n", "\n")
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t'),
        "a control character reached the content"
    );
    assert!(one.content.len() <= policy.max_inline_bytes());
    if let Some(l) = policy.max_inline_lines() {
        assert!(one.content.lines().count() as u64 <= l);
    }
    if let (Some(max), Some(n)) = (policy.max_inline_tokens(), one.tokens.map(|t| t.count)) {
        assert!(n <= max);
        assert_eq!(n, Tokenizer::Approx.count(&one.content) as u64);
    }
    assert_eq!(one.total_bytes, input.len() as u64);
    if let Some([first, last]) = one.omitted_range {
        assert!(1 <= first && first <= last && last <= one.total_lines.max(1));
        assert!(one.omitted_lines <= last - first + 1);
        for n in &one.salient_lines {
            assert!(first <= *n && *n <= last);
        }
    }
    let split = support::apply_chunked(&spiller, input, &p.chunks());
    assert_eq!(split.content, one.content, "chunking changed the content");
    assert_eq!(split.omitted_range, one.omitted_range);
    assert_eq!(split.omitted_bytes, one.omitted_bytes);
    if let Some(s) = &one.spill {
        let back = store
            .read(&s.id, &Selection::All)
            .expect("stored object reads back");
        assert_eq!(&back[..], &input[..s.bytes as usize]);
    }
    common::clean(store);
}
