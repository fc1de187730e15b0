//! The page, its script and its style, built into the binary: the viewer
//! needs no network and no file beside it.

/// The document.
pub(crate) const PAGE: &str = include_str!("../assets/index.html");
/// Its script.
pub(crate) const SCRIPT: &str = include_str!("../assets/app.js");
/// Its style.
pub(crate) const STYLE: &str = include_str!("../assets/app.css");
