//! Command-line interface.

mod args;
mod commands;

use std::io::{self, Write};

use anyhow::Result;
use clap::Parser;

pub use args::Cli;

/// Runs the command line; returns the exit code.
pub fn main() -> i32 {
    let cli = Cli::parse();
    match commands::run(cli) {
        Ok(code) => code,
        Err(e) => {
            if is_broken_pipe(&e) {
                return 0;
            }
            let _ = io::stdout().flush();
            eprintln!("spillway: {}", one_line(&e));
            1
        }
    }
}

/// The error and its causes on one line: `what: why: deeper why`.
fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let text = cause.to_string().replace('\n', " ");
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
    }
    parts.join(": ")
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// Writes everything to stdout, in one locked write.
pub(crate) fn emit(bytes: &[u8]) -> Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()?;
    Ok(())
}
