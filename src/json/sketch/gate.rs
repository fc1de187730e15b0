//! The gate in front of the builder: the events inside a small tail-side
//! container are held back until it grows.

use super::super::scan::{Kind, Offset, Tokens};
use super::builder::{tail_name, Builder};
use super::tree::Bytes;
use super::window::Window;

/// Holds back the events inside a tail-side container while it is small
/// (the builder has no use for them), and lets them through once it grows.
#[derive(Default)]
pub(crate) struct Gate {
    /// Nesting inside the quiet container (0: not quiet).
    level: u64,
    start: Offset,
    count: u64,
    limit: u64,
    object: bool,
    /// Its member name, taken while the window held it.
    name: Option<Bytes>,
    /// Every container token by token (tests compare the two ways).
    #[cfg(test)]
    pub(crate) no_skim: bool,
}

/// A [`Builder`] behind its [`Gate`].
pub(crate) struct Gated<'a, W> {
    pub(crate) gate: &'a mut Gate,
    pub(crate) builder: &'a mut Builder<W>,
}

impl<W: Window> Gated<'_, W> {
    /// A direct child of the quiet container starts at `at`: wake when the
    /// container has grown past its limit. Returns whether still quiet.
    #[inline(always)]
    fn child(&mut self, at: Offset) -> bool {
        let g = &mut *self.gate;
        if at - g.start >= g.limit {
            self.wake(at);
            return false;
        }
        g.count += 1;
        true
    }

    /// How long a quiet container may grow before it is opened.
    #[inline(always)]
    fn quiet_limit(&self) -> usize {
        self.builder.keep.window / 2
    }

    /// The member name of a quiet container starting now, while the window
    /// holds it (an array's child has none).
    #[inline(always)]
    fn quiet_name(&self) -> Option<Bytes> {
        match self.builder.stack.last() {
            Some(f) if f.is_object() => tail_name(&self.builder.window, f),
            _ => None,
        }
    }

    /// The quiet container grew past its limit: it is opened now, with the
    /// children it had so far as its gap.
    #[cold]
    #[inline(never)]
    fn wake(&mut self, at: Offset) {
        let g = &mut *self.gate;
        let count = g.count;
        g.level = 0;
        // Opened now, with its name taken when it started (the window may
        // have lost it since).
        let kind = if g.object { Kind::Object } else { Kind::Array };
        let name = g.name.take();
        self.builder.begin(kind, g.start);
        if let Some(f) = self.builder.stack.last_mut() {
            f.my_key = f.my_key.take().or(name);
        }
        self.builder.wake(count, at);
    }
}

impl<W: Window> Tokens for Gated<'_, W> {
    #[inline(always)]
    fn begin(&mut self, kind: Kind, at: Offset) {
        if self.gate.level > 0 {
            let direct = self.gate.level == 1 && !self.gate.object;
            if !direct || self.child(at) {
                self.gate.level += 1;
                return;
            }
        }
        if self.builder.tail_side_next() {
            // Skimmed without a frame until it grows. Set a field at a
            // time: a whole new `Gate` was built on the stack a byte at a
            // time and read back sixteen at a time, which stalled.
            let (limit, name) = (self.quiet_limit() as u64, self.quiet_name());
            let g = &mut *self.gate;
            g.level = 1;
            g.start = at;
            g.count = 0;
            g.limit = limit;
            g.object = kind == Kind::Object;
            // Taken when the last quiet container ended or woke.
            debug_assert!(g.name.is_none());
            g.name = name;
            return;
        }
        self.builder.begin(kind, at);
    }

    #[inline(always)]
    fn end(&mut self, end: Offset) {
        if self.gate.level > 0 {
            self.gate.level -= 1;
            if self.gate.level > 0 {
                return;
            }
            // Never woken: it was never opened either.
            let kind = if self.gate.object {
                Kind::Object
            } else {
                Kind::Array
            };
            let name = self.gate.name.take();
            self.builder
                .skimmed(kind, self.gate.start, end, self.gate.count, name);
            return;
        }
        self.builder.end(end);
    }

    #[inline(always)]
    fn str_begin(&mut self, key: bool, at: Offset) {
        if self.gate.level > 0 {
            let direct = self.gate.level == 1 && (key || !self.gate.object);
            if !direct || self.child(at) {
                return;
            }
        }
        self.builder.str_begin(key, at);
    }

    #[inline(always)]
    fn str_part(&mut self, raw: &[u8]) {
        if self.gate.level == 0 {
            self.builder.str_part(raw);
        }
    }

    #[inline(always)]
    fn str_end(&mut self, end: Offset) {
        if self.gate.level == 0 {
            self.builder.str_end(end);
        }
    }

    #[inline(always)]
    fn string(&mut self, key: bool, at: Offset, raw: &[u8], end: Offset) {
        if self.gate.level > 0 {
            let direct = self.gate.level == 1 && (key || !self.gate.object);
            if !direct || self.child(at) {
                return;
            }
        }
        self.builder.string(key, at, raw, end);
    }

    #[inline(always)]
    fn scalar(&mut self, raw: Option<&[u8]>, at: Offset, end: Offset) {
        if self.gate.level > 0 {
            let direct = self.gate.level == 1 && !self.gate.object;
            if !direct || self.child(at) {
                return;
            }
        }
        self.builder.scalar(raw, at, end);
    }

    /// A tail-side container no longer than the gate's limit is taken
    /// whole: the gate would hold back all its events and only count its
    /// children.
    #[inline(always)]
    fn skim_limit(&mut self) -> usize {
        #[cfg(test)]
        if self.gate.no_skim {
            return 0;
        }
        if self.gate.level == 0 && self.builder.tail_side_next() {
            self.quiet_limit()
        } else {
            0
        }
    }

    /// As the gate ends a quiet container that never woke; its member name
    /// is still where the window holds it (no copy the builder would not
    /// use: a skimmed container is most often a span of the window).
    #[inline(always)]
    fn skimmed(&mut self, kind: Kind, at: Offset, end: Offset, count: u64) {
        self.builder.skimmed(kind, at, end, count, None);
    }
}
