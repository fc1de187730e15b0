//! The render stage: what the model reads of terminal output.
//!
//! With [`Render::Terminal`] the input is read as a terminal would show it
//! ([`terminal`]), runs of identical lines are folded ([`side`]), and the
//! parts a preview can use are kept in bounded memory ([`collect`]). The
//! store always gets the raw bytes; the preview's notice names raw lines and
//! bytes.

use serde::{Deserialize, Serialize};

pub(crate) mod collect;
pub(crate) mod side;
pub(crate) mod terminal;

pub(crate) use collect::{Collector, Parts};
pub(crate) use terminal::Terminal;

use crate::salient::Matcher;

/// What the model-facing text is made of.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Render {
    /// The input's bytes as they are: escape sequences pass through (never
    /// cut inside), nothing is folded, no salient lines. Every guarantee of
    /// the preview holds byte for byte.
    Raw,
    /// What a person would read on the terminal: escape sequences removed,
    /// `\r` and cursor movement applied, progress bars as their final
    /// frame, exact repeats folded, and the error lines of an omitted middle
    /// shown with their line numbers. The default.
    #[default]
    Terminal,
}

impl Render {
    /// The name used in configs and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Render::Raw => "raw",
            Render::Terminal => "terminal",
        }
    }
}

impl std::str::FromStr for Render {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "raw" => Ok(Render::Raw),
            "terminal" => Ok(Render::Terminal),
            other => Err(format!(
                "unknown render {other:?} (expected raw or terminal)"
            )),
        }
    }
}

/// The terminal renderer and the collector it feeds.
pub(crate) struct Renderer {
    terminal: Terminal,
    collector: Collector,
}

impl Renderer {
    pub(crate) fn new(cap: usize, matcher: Option<Matcher>) -> Renderer {
        Renderer {
            terminal: Terminal::new(),
            collector: Collector::new(cap, matcher),
        }
    }

    pub(crate) fn feed(&mut self, data: &[u8]) {
        self.terminal.feed(&mut self.collector, data);
    }

    /// The parts, and whether anything rendered differently from the raw
    /// bytes.
    pub(crate) fn finish(mut self) -> (Parts, bool) {
        let changed = self.terminal.changed();
        self.terminal.finish(&mut self.collector);
        let parts = self.collector.finish();
        let changed = changed || parts.folded;
        (parts, changed)
    }
}

/// Renders a whole buffer.
pub(crate) fn render_all(input: &[u8], cap: usize, matcher: Option<Matcher>) -> (Parts, bool) {
    let mut r = Renderer::new(cap, matcher);
    r.feed(input);
    r.finish()
}
