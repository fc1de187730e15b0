//! Arbitrary bytes as a session log: replay never panics and keeps exactly
//! the lines that are valid events.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spillway_registry::events::{replay, Event};

fuzz_target!(|data: &[u8]| {
    let _ = replay(data);
    let mut log = b"{\"format\":\"spillway-session\",\"version\":1}\n".to_vec();
    log.extend_from_slice(data);
    let r = replay(&log).expect("a valid header");
    let lines: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    let n = lines.len();
    let mut valid = 0;
    let mut invalid = 0;
    for (i, line) in lines.into_iter().enumerate() {
        if line.is_empty() && i + 1 == n {
            continue;
        }
        if serde_json::from_slice::<Event>(line).is_ok() {
            valid += 1;
        } else {
            invalid += 1;
        }
    }
    assert_eq!(r.events.len(), valid);
    assert_eq!(r.bad.len(), invalid);
});
