fn main() {
    let mut out = Vec::new();
    let mut i = 0u64;
    while out.len() < 16 << 20 {
        i += 1;
        let line = match i % 4 {
            0 => format!(
                "\x1b[1m\x1b[92m   Compiling\x1b[0m crate-{i} v0.{}.0\n",
                i % 50
            ),
            1 => format!("\x1b[1m\x1b[33mwarning\x1b[0m\x1b[1m: unused variable `x{i}`\x1b[0m\n"),
            2 => format!("  \x1b[1m\x1b[94m-->\x1b[0m src/lib.rs:{}:9\n", i % 400),
            _ => format!(
                "test_mod.py::test_{i} \x1b[32mPASSED\x1b[0m\x1b[32m [{:>3}%]\x1b[0m\n",
                i % 100
            ),
        };
        out.extend_from_slice(line.as_bytes());
    }
    let dir = tempfile::tempdir().unwrap();
    let store = spillway::Store::open(dir.path()).unwrap();
    let p = spillway::Policy::builder()
        .compression(spillway::Compression::None)
        .durability(spillway::Durability::Relaxed)
        .build()
        .unwrap();
    let sp = spillway::Spiller::new(p, store).unwrap();
    let t = std::time::Instant::now();
    for k in 0..3 {
        out[0] = b'a' + k;
        let o = sp.apply(&out).unwrap();
        std::hint::black_box(o);
    }
    eprintln!("{:?}", t.elapsed() / 3);
}
