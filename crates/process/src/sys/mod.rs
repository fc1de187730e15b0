//! The platform layer: Linux calls, and the portable unix fallbacks used on
//! every other unix system (and on Linux with the `portable` feature).

#[cfg(all(target_os = "linux", not(feature = "portable")))]
mod linux;
#[cfg(all(target_os = "linux", not(feature = "portable")))]
pub(crate) use linux::*;

#[cfg(any(not(target_os = "linux"), feature = "portable"))]
mod portable;
#[cfg(any(not(target_os = "linux"), feature = "portable"))]
pub(crate) use portable::*;
