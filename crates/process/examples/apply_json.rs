//! Applies a policy to stdin with the library alone and prints the outcome
//! as JSON, as `spillway apply --json` does. The language bindings' tests
//! use it to check that Rust, the CLI and each binding agree byte for byte.
//!
//! ```text
//! cargo run -p spillway-process --example apply_json -- STORE_DIR '{"max_inline_bytes": "4KiB"}' < input
//! ```
//!
//! The store is named in the read hint, as the CLI and the bindings do for
//! a store given explicitly (`spillway_process::cli_read_hint`).

use std::io::Read;

use spillway::{PolicyConfig, Spiller, Store};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args_os().skip(1);
    let (Some(store), Some(config)) = (args.next(), args.next()) else {
        return Err("usage: apply_json STORE_DIR POLICY_JSON < input".into());
    };
    let config: PolicyConfig = serde_json::from_str(&config.to_string_lossy())?;
    let store = Store::open(store)?;
    let location = store.location().to_string();
    let hint = spillway_process::cli_read_hint(Some(&location));
    let policy = config.build_for_store(&store, &hint)?;
    let spiller = Spiller::new(policy, store)?;
    let mut input = Vec::new();
    std::io::stdin().lock().read_to_end(&mut input)?;
    let outcome = match spiller.apply(&input) {
        Ok(o) => o,
        Err(e) => e.into_outcome(),
    };
    println!("{}", serde_json::to_string(&outcome)?);
    Ok(())
}
