//! A deterministic generator of realistic tool output, shared by the tests
//! and the benchmarks.

/// Generated tool output: build lines with ANSI colour, tracebacks, CRLF,
/// non-ASCII text, and the occasional very long line. Deterministic in `seed`.
pub fn tool_output(seed: u64, target: usize) -> Vec<u8> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407)
        | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = Vec::with_capacity(target + 256);
    let mut i = 0u64;
    while out.len() < target {
        i += 1;
        match next() % 10 {
            0..=3 => out.extend_from_slice(
                format!(
                    "\x1b[32m   Compiling\x1b[0m crate-{i} v0.{}.0\n",
                    next() % 50
                )
                .as_bytes(),
            ),
            4 => out.extend_from_slice(
                format!("test module_{i}::case_{} ... ok\n", next() % 999).as_bytes(),
            ),
            5 => out.extend_from_slice(
                b"Traceback (most recent call last):\r\n  File \"app.py\", line 3, in <module>\r\n",
            ),
            6 => out.extend_from_slice(
                format!(
                    "{{\"id\":{i},\"msg\":\"r\u{e9}sum\u{e9} \u{2713} \u{1F600}\",\"ok\":true}}\n"
                )
                .as_bytes(),
            ),
            7 => out.extend_from_slice("warning: unused variable `\u{3b1}\u{3b2}`\n".as_bytes()),
            8 => {
                let n = (next() % 3000) as usize;
                out.extend(std::iter::repeat_n(b'x', n));
                out.push(b'\n');
            }
            _ => out.extend_from_slice(
                format!("\x1b]8;;https://example.org/{i}\x1b\\link\x1b]8;;\x1b\\ done\n")
                    .as_bytes(),
            ),
        }
    }
    out
}
