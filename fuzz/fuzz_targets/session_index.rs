//! Arbitrary bytes as a session log in either dialect, indexed as a viewer
//! indexes it (in steps, and whole): indexing never panics; for spillway's
//! own log, every page of cards is exactly the whole log's projection; for
//! DeepSeek Harness's, every card and notice is well formed.
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;
use spillway_registry::card::cards;
use spillway_registry::events::replay;
use spillway_registry::session::SessionIndex;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, body)) = data.split_first() else {
        return;
    };
    let header: &[u8] = if mode % 2 == 0 {
        b"{\"format\":\"spillway-session\",\"version\":1}\n"
    } else {
        b"{\"type\":\"session\",\"version\":0,\"id\":\"s\",\"delegationDepth\":0}\n"
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(header).unwrap();
    f.write_all(body).unwrap();
    drop(f);
    let whole = SessionIndex::open(&path).expect("a valid header");
    // In steps as small as one byte past a line, as the viewer's follower
    // indexes: the same cards.
    let step = u64::from(mode / 2) + 1;
    let (mut stepped, _) = SessionIndex::open_up_to(&path, step).unwrap();
    while stepped.refresh_up_to(step).unwrap().more {}
    assert_eq!(stepped.len(), whole.len());
    assert_eq!(stepped.bad_lines().0, whole.bad_lines().0);
    let all = whole.cards(0, usize::MAX).unwrap();
    assert_eq!(all, stepped.cards(0, usize::MAX).unwrap());
    assert_eq!(all.len(), whole.len());
    if mode % 2 == 0 {
        let mut log = header.to_vec();
        log.extend_from_slice(body);
        // Only complete lines are indexed; replay reads a last line too.
        let complete = log.len() - log.iter().rev().take_while(|&&b| b != b'\n').count();
        let events = replay(&log[..complete]).unwrap().events;
        assert_eq!(all, cards(&events));
    }
    for c in &all {
        assert_eq!(c.pending, c.content.is_none());
        for d in &c.dispatches {
            assert_eq!(d.pending, d.content.is_none());
        }
        for n in c
            .notices
            .iter()
            .chain(c.dispatches.iter().flat_map(|d| d.notices.iter()))
        {
            assert!(n.start < n.end);
        }
    }
    let _ = whole.search("error", 10).unwrap();
});
