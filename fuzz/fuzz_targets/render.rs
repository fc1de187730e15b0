//! The terminal render: no panic, nothing with an ESC or another control
//! byte reaches the content, the budget holds, any split of the input gives
//! the same outcome, the stored object is the raw input, and the notice's
//! ranges and the salient lines stay within the input. Memory is bounded by
//! libFuzzer's RSS limit.
#![no_main]

use libfuzzer_sys::fuzz_target;

mod common;
mod render_check;

fuzz_target!(|data: &[u8]| render_check::check(data));
