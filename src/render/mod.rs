//! The render stage: what the model reads of terminal output.
//!
//! With [`Render::Terminal`] the input is read as a terminal would show it
//! ([`terminal`]), runs of identical lines are folded ([`side`]), and the
//! parts a preview can use are kept in bounded memory ([`collect`]). The
//! store always gets the raw bytes; the preview's notice names raw lines and
//! bytes.

use serde::{Deserialize, Serialize};

pub(crate) mod collect;
pub(crate) mod middle;
pub(crate) mod side;
pub(crate) mod strip;
pub(crate) mod terminal;
pub(crate) mod worker;

// The render's AVX-512 blocks: with `sys`, the places of the core allowed
// `unsafe` (each block says why it is sound).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod vector;

use collect::{Collector, Plain, TailCollector};
pub(crate) use collect::{MiddleLines, Parts};
use middle::RawScan;
use terminal::Terminal;
use worker::Scan;

use crate::salient::{Candidate, Matcher};
use crate::threads::Parallelism;

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

/// The raw bytes a stage keeps at the end of the stream for the rendered
/// tail, for a budget of `cap` bytes: room for a tail of escapes and
/// progress frames that renders to a full share.
pub(crate) fn raw_window(cap: usize) -> usize {
    cap.saturating_mul(3).saturating_add(64 << 10)
}

/// The most bytes the head's terminal is given at a time.
const HEAD_PIECE: usize = 16 << 10;

/// The render stage of one stream: the head is rendered as it streams; the
/// middle is only scanned for salient lines; the tail is rendered at the end
/// from the last raw bytes.
pub(crate) struct Renderer {
    terminal: Option<Terminal>,
    head: Collector,
    scan: Option<Scan>,
    fed: u64,
    /// Where the scan's thread comes from.
    budget: Parallelism,
    /// How many raw bytes the head's terminal was given.
    #[cfg(test)]
    given: u64,
}

impl Renderer {
    pub(crate) fn new(cap: usize, matcher: Option<Matcher>, budget: Parallelism) -> Renderer {
        Renderer {
            terminal: Some(Terminal::new()),
            head: Collector::new(cap),
            scan: matcher.map(|m| Scan::Here(Box::new(RawScan::new(m, raw_window(cap) as u64)))),
            fed: 0,
            budget,
            #[cfg(test)]
            given: 0,
        }
    }

    pub(crate) fn feed(&mut self, data: &[u8]) {
        self.render(data);
        self.scan(data);
    }

    /// Renders the next bytes into the head, while it takes them: a
    /// piece at a time, so that rendering stops soon after the head is
    /// full (a stream's first buffer is a MiB, a head a few KiB; coloured
    /// output and progress frames take the slow path, dozens of
    /// instructions a byte). The head is the same: it takes nothing once
    /// full, and a line leaves the terminal at the same byte however the
    /// input is cut.
    pub(crate) fn render(&mut self, data: &[u8]) {
        for piece in data.chunks(HEAD_PIECE) {
            let Some(t) = self.terminal.as_mut() else {
                return;
            };
            t.feed(&mut self.head, piece);
            #[cfg(test)]
            {
                self.given += piece.len() as u64;
            }
            if self.head.is_full() {
                // The rest is rendered only if it ends up in the tail.
                self.terminal = None;
                let end = self.head.raw_end();
                if let Some(s) = self.scan.as_mut() {
                    s.set_head_end(end);
                }
            }
        }
    }

    /// Scans the next bytes, which [`render`](Self::render) was given.
    /// (The scan may be told the head's end before it is given the bytes
    /// before it: it places its lines by their offsets.)
    pub(crate) fn scan(&mut self, data: &[u8]) {
        if let Some(s) = self.moved_scan(data.len() as u64) {
            s.feed(data);
        }
        self.fed += data.len() as u64;
    }

    /// [`scan`](Self::scan) for bytes in a buffer of their own: on the
    /// scan's thread, `buf` itself is handed over instead of a copy of its
    /// bytes. Gives back a buffer to read the next bytes into (its bytes
    /// stale).
    pub(crate) fn scan_buf(&mut self, buf: Vec<u8>) -> Vec<u8> {
        let len = buf.len() as u64;
        let back = match self.moved_scan(len) {
            Some(s) => s.feed_buf(buf),
            None => buf,
        };
        self.fed += len;
        back
    }

    /// The scan, moved to its thread first once the stream is long enough
    /// with the `next` bytes it is about to be given.
    fn moved_scan(&mut self, next: u64) -> Option<&mut Scan> {
        if let Some(s) = self.scan.take() {
            self.scan = Some(s.maybe_move(self.fed + next, &self.budget));
        }
        self.scan.as_mut()
    }

    /// The parts. `window` is the last raw bytes of the stream (all of them
    /// when the stream is that short), and `newlines` the stream's count.
    pub(crate) fn finish(self, window: &[u8], newlines: u64) -> Parts {
        let Renderer {
            terminal,
            mut head,
            scan,
            fed,
            ..
        } = self;
        if let Some(t) = terminal {
            t.finish(&mut head);
        }
        if !head.is_full() {
            head.folder.flush(&mut head.head);
            let folded = head.folder.folded;
            return Parts {
                head: head.head,
                tail: None,
                whole: true,
                middle: MiddleLines::default(),
                folded,
            };
        }
        let win_start = fed - window.len() as u64;
        if win_start == 0 {
            // The window holds the whole stream: render it once, as one
            // text, and the preview cuts its head and its tail from that
            // text as the raw preview cuts raw bytes. (The head collected
            // above took the whole budget in case everything fit; a tail
            // rendered only from its end would be starved whenever the
            // input is a little over the budget.)
            let mut all = TailCollector::default();
            let mut t = Terminal::new();
            t.feed(&mut all, window);
            t.finish(&mut all);
            all.folder.flush(&mut all.side);
            let folded = all.folder.folded;
            return Parts {
                head: all.side,
                tail: None,
                whole: true,
                middle: MiddleLines::default(),
                folded,
            };
        }
        let head_end = head.raw_end();
        // The tail starts at a raw line start in the window, or, when the
        // first one leaves less than half of it (the window is mostly one
        // long line: a progress bar's frames), at the window's start; never
        // before the head's end.
        let from = if win_start <= head_end {
            head_end
        } else {
            match memchr::memchr(b'\n', window) {
                Some(i) if window.len() - (i + 1) >= window.len() / 2 => win_start + i as u64 + 1,
                _ => win_start,
            }
        };
        let rel = (from - win_start) as usize;
        let rest = &window[rel.min(window.len())..];
        let line = 1 + newlines - bytecount::count(rest, b'\n') as u64;
        let starts_line = if rel > 0 {
            window[rel - 1] == b'\n'
        } else {
            from == 0 || head.head.text.ends_with('\n')
        };
        let mut tail = TailCollector::default();
        let mut t = Terminal::starting_at(from, line, starts_line);
        t.feed(&mut tail, rest);
        t.finish(&mut tail);
        tail.folder.flush(&mut tail.side);
        let middle = match scan {
            Some(s) => s.into_scan().finish(head_end, from, |h, rank, shape| {
                let mut p = Plain::default();
                let mut t = Terminal::new();
                t.feed(&mut p, &h.bytes);
                t.finish(&mut p);
                Candidate::new(&p.one_line(), h.line, (h.raw, h.raw_end), rank, shape)
            }),
            None => MiddleLines::default(),
        };
        let folded = head.folder.folded || tail.folder.folded;
        Parts {
            head: head.head,
            tail: Some(tail.side),
            whole: false,
            middle,
            folded,
        }
    }
}

/// Renders a whole buffer.
pub(crate) fn render_all(input: &[u8], cap: usize, matcher: Option<Matcher>) -> Parts {
    let mut r = Renderer::new(cap, matcher, Parallelism::process());
    r.feed(input);
    let newlines = bytecount::count(input, b'\n') as u64;
    r.finish(input, newlines)
}

impl Parts {
    /// Whether the text shown renders differently from its raw bytes.
    pub(crate) fn changed(&self) -> bool {
        self.folded
            || std::iter::once(&self.head)
                .chain(self.tail.as_ref())
                .any(|s| s.anchors.iter().any(|a| !a.span.exact))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Coloured lines (the terminal's slow path) whose head is full within
    /// the first piece: the head's terminal is given a piece or two of a
    /// MiB fed at once, and the head is the one made of the same bytes fed
    /// a few hundred at a time.
    #[test]
    fn the_head_stops_rendering_soon_after_it_is_full() {
        let input: String = (0..20_000)
            .map(|i| format!("\x1b[1m\x1b[32m   Compiling\x1b[0m crate-{i} v0.1.0\r\n"))
            .collect();
        let input = input.as_bytes();
        let cap = 4096;
        let mut whole = Renderer::new(cap, None, Parallelism::process());
        whole.feed(input);
        assert!(whole.given <= 2 * HEAD_PIECE as u64, "{}", whole.given);
        let mut small = Renderer::new(cap, None, Parallelism::process());
        for c in input.chunks(333) {
            small.feed(c);
        }
        assert!(small.given < whole.given + 333, "{}", small.given);
        let newlines = bytecount::count(input, b'\n') as u64;
        let window = &input[input.len() - raw_window(cap)..];
        let (a, b) = (
            whole.finish(window, newlines),
            small.finish(window, newlines),
        );
        assert!(
            !a.whole && a.head.text.len() > cap / 2,
            "{}",
            a.head.text.len()
        );
        assert_eq!(a.head.text, b.head.text);
        assert_eq!(
            format!("{:?}", a.head.anchors),
            format!("{:?}", b.head.anchors)
        );
        assert_eq!(a.tail.map(|t| t.text), b.tail.map(|t| t.text));
    }

    /// The scan moves to its thread with the bytes that bring the stream
    /// to its first MiB, before it scans them: a stream that starts with a
    /// whole MiB has all of it scanned there, one a byte shorter none.
    #[test]
    fn the_scan_moves_with_the_bytes_that_reach_its_threshold() {
        let lines = |n: usize| {
            let mut b: Vec<u8> = b"error: disk full\n".repeat(n / 17 + 1);
            b.truncate(n);
            b
        };
        let on_thread = |r: &Renderer| matches!(r.scan, Some(Scan::Worker(_)));
        let at = crate::offload::THREAD_AFTER as usize;
        let matcher = || crate::SalientPatterns::default().matcher();
        let mut r = Renderer::new(4096, matcher(), Parallelism::new(1));
        r.scan_buf(lines(at - 1));
        assert!(!on_thread(&r), "short of the threshold: here");
        r.scan_buf(lines(1));
        assert!(on_thread(&r), "the byte that reaches it: there");
        let mut r = Renderer::new(4096, matcher(), Parallelism::new(1));
        r.scan_buf(lines(at));
        assert!(
            on_thread(&r),
            "a whole MiB at once: there, before it is scanned"
        );
        let mut r = Renderer::new(4096, matcher(), Parallelism::new(1));
        r.scan(&lines(at));
        assert!(
            on_thread(&r),
            "bytes that are not a buffer of their own too"
        );
    }
}
