//! Uses a store from inside async code, as a tokio harness does: opens it,
//! applies a policy to stdin and drops the spiller, all inside a task of a
//! multi-threaded runtime and then of a current-thread one. Prints each
//! outcome as a JSON line. The S3 tests run it against an `s3://` store.
//!
//! ```text
//! cargo run --example in_async --features s3 -- STORE_URL BUDGET < input
//! ```

use std::io::Read;

use spillway::{Outcome, Policy, Spiller, Store};

type Error = Box<dyn std::error::Error + Send + Sync>;

fn apply(url: &str, budget: u64, input: &[u8]) -> Result<Outcome, Error> {
    let store = Store::open_url(url)?;
    let policy = Policy::builder().max_inline_bytes(budget).build()?;
    let spiller = Spiller::new(policy, store)?;
    let outcome = match spiller.apply(input) {
        Ok(o) => o,
        Err(e) => e.into_outcome(),
    };
    // The last handle on the store goes here, inside the task.
    drop(spiller);
    Ok(outcome)
}

fn main() -> Result<(), Error> {
    let mut args = std::env::args().skip(1);
    let (Some(url), Some(budget)) = (args.next(), args.next()) else {
        return Err("usage: in_async STORE_URL BUDGET < input".into());
    };
    let budget: u64 = budget.parse()?;
    let mut input = Vec::new();
    std::io::stdin().lock().read_to_end(&mut input)?;
    let runtimes = [
        tokio::runtime::Builder::new_multi_thread().build()?,
        tokio::runtime::Builder::new_current_thread().build()?,
    ];
    for rt in runtimes {
        let (url, input) = (url.clone(), input.clone());
        let outcome =
            rt.block_on(
                async move { tokio::spawn(async move { apply(&url, budget, &input) }).await },
            )??;
        println!("{}", serde_json::to_string(&outcome)?);
    }
    Ok(())
}
