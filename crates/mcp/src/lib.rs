//! spillway over the Model Context Protocol (MCP), on the stdio transport.
//!
//! * [`proxy`]: sits between any MCP client and any MCP server, relays every
//!   message unchanged except that `tools/call` results pass through the
//!   spill stage, and adds the tools that read what was stored.
//! * [`server`]: a server of spillway's own with `run` (a shell command,
//!   bounded), `run_code` (a JavaScript program that calls those tools),
//!   `spill_read` and `spill_grep`.
//!
//! Both speak newline-delimited JSON-RPC 2.0 over stdio with `serde_json`
//! and nothing else: the proxy must pass on messages it does not know
//! (newer protocol revisions, vendor extensions) exactly as they came, which
//! a typed SDK would re-encode or refuse.

#![deny(missing_docs)]
#![warn(rust_2018_idioms)]
#![forbid(unsafe_code)]

mod bound;
mod code;
pub mod code_proxy;
mod diagnostics;
mod front;
pub mod proxy;
mod rpc;
pub mod server;
mod tools;
mod upstream;

pub use bound::bound_result;
pub use diagnostics::Diagnostics;
pub use tools::ToolNames;
pub use upstream::ServerSpec;
