//! Building the sketch from the tokenizer's events: the head side in
//! document order, the tail side noted and parsed again from the window
//! when its container closes.

use std::collections::VecDeque;

use super::super::scan::{Kind, Offset, Scanner, Tokens};
use super::tree::{compact_len, Bytes, Child, Container, Gap, Node, Str, KEY_SET_CAP};
use super::window::Window;
use super::{Keep, NODE_COST};
use crate::ring::ByteRing;

/// The pending member name of an object frame on the tail side, from the
/// window.
pub(super) fn tail_name(window: &impl Window, f: &Frame) -> Option<Bytes> {
    if !f.is_object() || f.key_end <= f.key_from + 1 {
        return None;
    }
    window.copy(f.key_from + 1, f.key_end - 1).map(Bytes::from)
}

/// A tail-side child: where it is, or its sketch when it was larger than
/// the window.
enum Entry {
    Span {
        index: u64,
        /// Where its member name starts (its start, in an array).
        from: Offset,
        start: Offset,
        end: Offset,
    },
    Node(Box<Child>),
}

impl Entry {
    fn bounds(&self) -> (u64, Offset, Offset) {
        match self {
            Entry::Span {
                index, start, end, ..
            } => (*index, *start, *end),
            Entry::Node(c) => (c.index, c.start, c.end),
        }
    }
}

/// A member name's hash, eight bytes a step (names are short, and a
/// hostile document that makes two of its names collide only gets one of
/// them marked as repeated).
fn name_hash(name: &[u8]) -> u64 {
    const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
    let step = |h: u64, w: u64| (h.rotate_left(5) ^ w).wrapping_mul(K);
    let mut h = name.len() as u64;
    let mut words = name.chunks_exact(8);
    for w in &mut words {
        h = step(h, crate::word::le_word(w));
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut w = [0; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = step(h, u64::from_le_bytes(w));
    }
    h ^ (h >> 29)
}

/// The hashes of an object's member names seen so far: the first
/// [`FEW_NAMES`] in place, the rest in a set. Most objects are small, and so
/// cost no allocation and no second hash.
#[derive(Default)]
pub(super) struct Names {
    few: [u64; FEW_NAMES],
    len: usize,
    many: std::collections::HashSet<u64, NameHashes>,
}

/// How many names' hashes a frame holds in place.
const FEW_NAMES: usize = 8;

impl Names {
    fn len(&self) -> usize {
        self.len + self.many.len()
    }

    fn contains(&self, h: u64) -> bool {
        self.few[..self.len].contains(&h) || (!self.many.is_empty() && self.many.contains(&h))
    }

    fn insert(&mut self, h: u64) {
        if self.len < FEW_NAMES {
            self.few[self.len] = h;
            self.len += 1;
        } else {
            self.many.insert(h);
        }
    }
}

/// The set's keys are hashes already: it needs no second hash.
#[derive(Clone, Copy, Default)]
pub(super) struct NameHashes;

impl std::hash::BuildHasher for NameHashes {
    type Hasher = Passed;
    fn build_hasher(&self) -> Passed {
        Passed(0)
    }
}

/// A hasher that hands on the one `u64` it is given.
#[derive(Default)]
pub(super) struct Passed(u64);

impl std::hash::Hasher for Passed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only `u64`s are hashed here; anything else folds in, byte by byte.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// An open container.
pub(super) struct Frame {
    container: Container,
    entries: VecDeque<Entry>,
    start: Offset,
    from: Offset,
    /// Whether new children may still go to the head side.
    head_side: bool,
    /// Whether this container itself started on the head side.
    placed_head: bool,
    index: u64,
    /// The pending member name (head side) and where it starts.
    key: Option<Bytes>,
    key_from: Offset,
    /// Where the pending member name ends (tail side).
    key_end: Offset,
    /// Cost of the head-side children.
    cost: usize,
    pub(super) my_key: Option<Bytes>,
    my_index: u64,
    /// Hashes of the member names seen so far (an object's), to find a
    /// repeated name.
    keys: Names,
}

impl Frame {
    /// Whether it is an object's frame.
    pub(super) fn is_object(&self) -> bool {
        self.container.kind == Kind::Object
    }

    fn gap(&mut self, e: &Entry) {
        let (index, start, end) = e.bounds();
        let gap = &mut self.container.gap;
        if gap.count == 0 {
            gap.first_start = start;
            gap.first_index = index;
        }
        gap.count += 1;
        gap.last_end = end;
        gap.last_index = index;
    }
}

/// An open head-side string (or member name): its head, and the last bytes
/// as a ring.
struct OpenStr {
    head: Vec<u8>,
    len: u64,
    ring: Vec<u8>,
    ring_start: usize,
    start: Offset,
    key: bool,
}

/// An open tail-side string: only its length, and its head once it grows
/// long enough that the window may lose it.
struct TailStr {
    start: Offset,
    len: u64,
    head: Option<Vec<u8>>,
    key: bool,
    /// Its member name, kept with the head.
    name: Option<Bytes>,
}

/// Builds the sketch from the tokenizer's events, parsing tail-side values
/// again from its window `W`.
pub(crate) struct Builder<W = ByteRing> {
    pub(super) keep: Keep,
    /// Added to every offset the tokenizer reports (for a reparse).
    base: u64,
    /// The last bytes of the stream; the caller pushes each chunk before
    /// it scans it.
    pub(crate) window: W,
    pub(super) stack: Vec<Frame>,
    /// Levels of nesting past the keep depth, and the child count of the
    /// outermost of them.
    opaque: u64,
    opaque_count: u64,
    opaque_start: Offset,
    opaque_from: Offset,
    opaque_kind: Kind,
    opaque_key: Option<Bytes>,
    opaque_index: u64,
    opaque_head: bool,
    string: Option<OpenStr>,
    tail_str: Option<TailStr>,
    /// The raw bytes of the member name being read.
    key_buf: Option<Vec<u8>>,
    /// Emptied entry lists, to reuse: most tail-side containers are small
    /// and short-lived.
    spare: Vec<VecDeque<Entry>>,
    head_used: usize,
    /// A key longer than `max_key` was seen: the document gets the text
    /// preview.
    pub(crate) key_too_long: bool,
    root: Option<Child>,
}

impl Builder {
    /// A builder whose window is a ring of `keep.window` bytes.
    pub(crate) fn new(keep: Keep) -> Self {
        Builder::with_window(keep, ByteRing::new(keep.window))
    }
}

impl<W: Window> Builder<W> {
    /// A builder reading tail-side values again from `window`, which holds
    /// `keep.window` bytes.
    pub(crate) fn with_window(keep: Keep, window: W) -> Self {
        Builder {
            keep,
            base: 0,
            window,
            stack: Vec::new(),
            opaque: 0,
            opaque_count: 0,
            opaque_start: 0,
            opaque_from: 0,
            opaque_kind: Kind::Array,
            opaque_key: None,
            opaque_index: 0,
            opaque_head: false,
            string: None,
            tail_str: None,
            key_buf: None,
            spare: Vec::new(),
            head_used: 0,
            key_too_long: false,
            root: None,
        }
    }

    /// The whole document's sketch, once the tokenizer finished cleanly.
    pub(crate) fn into_root(self) -> Option<Child> {
        self.root
    }

    /// Memory held by sketches, in the units the limits count (for tests).
    #[cfg(test)]
    pub(crate) fn used(&self) -> usize {
        let nodes: usize = self
            .stack
            .iter()
            .flat_map(|f| f.entries.iter())
            .map(|e| match e {
                Entry::Node(c) => c.cost,
                Entry::Span { .. } => 32,
            })
            .sum();
        self.head_used + nodes
    }

    /// Whether the next value starts on the head side.
    fn head_side(&self) -> bool {
        match self.stack.last() {
            None => true,
            Some(f) => f.head_side && self.head_used < self.keep.head_cost,
        }
    }

    /// The name, index and first offset (its name's, for a member) of a
    /// value starting at `at`.
    fn slot(&mut self, at: Offset) -> (Option<Bytes>, u64, Offset) {
        match self.stack.last_mut() {
            None => (None, 0, at),
            Some(f) => {
                let i = f.index;
                f.index += 1;
                let from = match f.container.kind {
                    Kind::Object => f.key_from,
                    Kind::Array => at,
                };
                (f.key.take(), i, from)
            }
        }
    }

    /// Places a finished head-side value in its parent (or as the root).
    fn place_head(&mut self, child: Child) {
        let Some(f) = self.stack.last_mut() else {
            self.root = Some(child);
            return;
        };
        f.container.count += 1;
        f.cost += child.cost;
        self.head_used += child.cost;
        f.container.head.push(child);
    }

    /// Notes a finished tail-side value, and drops from the front what the
    /// window no longer holds (never the newest).
    ///
    /// In line where it is called: an entry built by the caller and read
    /// back by a call sixteen bytes at a time stalled on the eight-byte
    /// writes that made it.
    #[inline(always)]
    fn push_entry(&mut self, entry: Entry) {
        let oldest = self.window.oldest();
        let half = (self.keep.window / 2) as u64;
        let Some(f) = self.stack.last_mut() else {
            return;
        };
        f.container.count += 1;
        f.head_side = false;
        if !f.placed_head && entry.bounds().2 - f.start < half {
            // A tail-side container this small is parsed again whole if it
            // is kept (it fits the window); its children need no notes.
            // If it grows past the window, its notes start here.
            f.gap(&entry);
            return;
        }
        f.entries.push_back(entry);
        // No preview shows more children than half its budget: older notes
        // go to the gap.
        let most = self.keep.str_keep / 2 + 2;
        while f.entries.len() > most {
            if let Some(e) = f.entries.pop_front() {
                f.gap(&e);
            }
        }
        while f.entries.len() > 1 {
            let gone = match &f.entries[0] {
                Entry::Span { from, .. } => *from < oldest,
                Entry::Node(c) => c.end <= oldest,
            };
            if !gone {
                break;
            }
            if let Some(e) = f.entries.pop_front() {
                f.gap(&e);
            }
        }
    }

    /// A member name was read: notes whether an earlier member of the
    /// object has it (the value that follows takes the frame's next index).
    fn key_done(&mut self, raw: &[u8]) {
        if raw.len() > self.keep.max_key {
            return;
        }
        let Some(f) = self.stack.last_mut() else {
            return;
        };
        if !f.is_object() {
            return;
        }
        // A name without an escape is its own unescaped form (no copy).
        let h = if memchr::memchr(b'\\', raw).is_none() {
            name_hash(std::str::from_utf8(raw).unwrap_or("").as_bytes())
        } else {
            name_hash(super::super::pointer::unescape(raw).as_bytes())
        };
        if f.keys.contains(h) {
            // Equal hashes of different names only cost a pointer.
            f.container.repeated.push(f.index);
        } else if f.keys.len() >= KEY_SET_CAP {
            f.container.unsure_from.get_or_insert(f.index);
        } else {
            f.keys.insert(h);
        }
    }

    /// A value's bytes parsed again from the window: `[value]` or
    /// `{"name": value}`.
    fn reparse(&self, e: &Entry, member: bool, depth: usize) -> Option<Child> {
        self.reparse_run(std::slice::from_ref(e), member, depth)?
            .pop()
    }

    /// A whole head-side string (`at` and `end` with the base added): the
    /// same node as `str_begin`, `str_part` and `str_end` make of it.
    fn head_string(&mut self, key: bool, at: Offset, raw: &[u8], end: Offset) {
        if key {
            let cap = self.keep.max_key;
            if raw.len() > cap {
                self.key_too_long = true;
            }
            self.key_done(raw);
            if let Some(f) = self.stack.last_mut() {
                f.key_from = at;
                f.key = Some(raw[..raw.len().min(cap)].into());
            }
            return;
        }
        let cap = self.keep.str_keep;
        let (head, rest) = raw.split_at(raw.len().min(cap));
        let tail = &rest[rest.len() - rest.len().min(cap)..];
        let (key, index, _) = self.slot(at);
        let cost = NODE_COST + head.len() + tail.len() + key.as_ref().map_or(0, |k| k.len());
        let mut child = Child {
            index,
            key,
            node: Node::Str(Str {
                head: head.into(),
                tail: tail.into(),
                len: raw.len() as u64,
            }),
            start: at,
            end,
            cost,
            compact: None,
        };
        child.compact = compact_len(&child.node);
        self.place_head(child);
    }

    /// A run of spans, consecutive children of one container, parsed again
    /// from the window at once (`[a,b,…]` or `{"x":a,"y":b,…}`): the same
    /// children as [`reparse`](Self::reparse) makes of each alone, with one
    /// parser and one copy for all. `None` when the run is not exactly those
    /// children (the caller then takes them one by one).
    fn reparse_run(&self, spans: &[Entry], member: bool, depth: usize) -> Option<Vec<Child>> {
        let (Some(Entry::Span { from, .. }), Some(Entry::Span { end, .. })) =
            (spans.first(), spans.last())
        else {
            return None;
        };
        let bytes = self.window.copy(*from, *end)?;
        let mut b = Builder::new(Keep {
            head_cost: usize::MAX / 4,
            window: 0,
            keep_depth: self.keep.keep_depth.saturating_sub(depth),
            ..self.keep
        });
        b.base = from - 1;
        let mut s = Scanner::new();
        let (open, close): (&[u8], &[u8]) = if member { (b"{", b"}") } else { (b"[", b"]") };
        s.feed(open, &mut b);
        s.feed(&bytes, &mut b);
        s.feed(close, &mut b);
        s.finish(&mut b).ok()?;
        let Node::Container(c) = b.root?.node else {
            return None;
        };
        if c.head.len() != spans.len() {
            return None;
        }
        let mut children = c.head;
        for (child, span) in children.iter_mut().zip(spans) {
            let Entry::Span {
                index, start, end, ..
            } = span
            else {
                return None;
            };
            if (child.start, child.end) != (*start, *end) {
                return None;
            }
            child.index = *index;
        }
        Some(children)
    }

    /// Ends a container: sketches its tail-side children from the window.
    fn close(&mut self, mut f: Frame, end: Offset) -> Child {
        let depth = self.stack.len() + 1;
        let member = f.is_object();
        let mut cost = f.cost;
        let mut entries = std::mem::take(&mut f.entries);
        // What the window lost, and everything before it, is the gap: it
        // must sit between the head side and the children kept.
        let oldest = self.window.oldest();
        let lost = entries
            .iter()
            .rposition(|e| matches!(e, Entry::Span { from, .. } if *from < oldest));
        if let Some(j) = lost {
            for e in entries.drain(..=j) {
                f.gap(&e);
            }
        }
        let mut kept = Vec::with_capacity(entries.len());
        let mut failed = false;
        let all = entries.make_contiguous();
        let mut k = 0;
        while k < all.len() {
            if let Entry::Node(_) = all[k] {
                kept.push(None);
                k += 1;
                continue;
            }
            // A run of spans: consecutive children, parsed again at once.
            let run = all[k..]
                .iter()
                .position(|e| matches!(e, Entry::Node(_)))
                .map_or(all.len(), |r| k + r);
            match self.reparse_run(&all[k..run], member, depth) {
                Some(children) => kept.extend(children.into_iter().map(Some)),
                None => {
                    for span in &all[k..run] {
                        match self.reparse(span, member, depth) {
                            Some(c) => kept.push(Some(c)),
                            None => failed = true,
                        }
                    }
                }
            }
            k = run;
        }
        debug_assert!(!failed, "a span in the window did not parse again");
        for (e, c) in entries.into_iter().zip(kept) {
            if failed {
                // Never with a well-formed span; the gap stays contiguous.
                f.gap(&e);
                continue;
            }
            let c = match (e, c) {
                (Entry::Node(n), _) => *n,
                (_, Some(c)) => c,
                (e, None) => {
                    f.gap(&e);
                    continue;
                }
            };
            cost += c.cost;
            f.container.tail.push_back(c);
        }
        let key_len = f.my_key.as_ref().map_or(0, |k| k.len());
        let mut child = Child {
            index: f.my_index,
            key: f.my_key,
            node: Node::Container(Box::new(f.container)),
            start: f.start,
            end,
            cost: cost + NODE_COST + key_len,
            compact: None,
        };
        child.compact = compact_len(&child.node);
        child
    }

    /// Whether a container starting now would be on the tail side (and so
    /// can be skimmed while it is small).
    #[inline]
    pub(super) fn tail_side_next(&self) -> bool {
        self.opaque == 0
            && !self.stack.is_empty()
            && !self.head_side()
            && self.stack.len() < self.keep.keep_depth
    }

    /// A container skimmed from `start` to `end` with `count` children,
    /// never opened: a span when the window holds it, else its kind and
    /// count with every child in the gap, and its member name: `name`
    /// (taken when it started, which the window may have lost since), else
    /// the window's.
    #[inline]
    pub(super) fn skimmed(
        &mut self,
        kind: Kind,
        start: Offset,
        end: Offset,
        count: u64,
        name: Option<Bytes>,
    ) {
        let (start, end) = (start + self.base, end + self.base);
        let (key, index, from) = self.slot(start);
        if from >= self.window.oldest() {
            self.push_entry(Entry::Span {
                index,
                from,
                start,
                end,
            });
            return;
        }
        let key = key
            .or(name)
            .or_else(|| tail_name(&self.window, self.stack.last()?));
        let mut gap = Gap::default();
        if count > 0 {
            gap = Gap {
                count,
                first_start: start + 1,
                last_end: end - 1,
                first_index: 0,
                last_index: count - 1,
            };
        }
        let key_len = key.as_ref().map_or(0, |k| k.len());
        self.push_entry(Entry::Node(Box::new(Child {
            index,
            key,
            node: Node::Container(Box::new(Container {
                kind,
                head: Vec::new(),
                gap,
                tail: VecDeque::new(),
                count,
                repeated: Vec::new(),
                unsure_from: None,
            })),
            start,
            end,
            cost: NODE_COST + key_len,
            compact: None,
        })));
    }

    /// The quiet container grew past its limit after `count` children (the
    /// next starts at `at`): they are its gap; events flow again.
    #[inline]
    pub(super) fn wake(&mut self, count: u64, at: Offset) {
        let at = at + self.base;
        let Some(f) = self.stack.last_mut() else {
            return;
        };
        f.index = count;
        f.container.count = count;
        f.head_side = false;
        if count > 0 {
            let gap = &mut f.container.gap;
            gap.count = count;
            gap.first_start = f.start + 1;
            gap.first_index = 0;
            gap.last_end = at;
            gap.last_index = count - 1;
        }
    }

    /// A value starts: counts it when it is a direct child of an opaque
    /// container. Returns whether it is inside one.
    fn opaque_value(&mut self) -> bool {
        if self.opaque == 0 {
            return false;
        }
        if self.opaque == 1 {
            self.opaque_count += 1;
        }
        true
    }

    /// Places a finished value whose sketch is made: on the head side, or
    /// as a tail-side entry (a span when the window holds all of it).
    fn finish_value(&mut self, child: Child, from: Offset, head_side: bool) {
        if head_side {
            self.place_head(child);
        } else if from >= self.window.oldest() {
            self.push_entry(Entry::Span {
                index: child.index,
                from,
                start: child.start,
                end: child.end,
            });
        } else {
            self.push_entry(Entry::Node(Box::new(child)));
        }
    }
}

// The tokenizer's events reach the builder through the gate (gate.rs); a
// module of their own may land in another codegen unit, so the builder's
// handlers are offered for inlining there (without it the dense-JSON
// preview measured 5% slower once the sketch was split into files).
impl<W: Window> Tokens for Builder<W> {
    #[inline]
    fn begin(&mut self, kind: Kind, at: Offset) {
        let at = at + self.base;
        if self.opaque_value() {
            self.opaque += 1;
            return;
        }
        let head_side = self.head_side();
        let (key, index, from) = self.slot(at);
        // A tail-side member's name, while the window holds it: needed if
        // the value grows past the window.
        let key = key.or_else(|| self.stack.last().and_then(|f| tail_name(&self.window, f)));
        if self.stack.len() >= self.keep.keep_depth {
            self.opaque = 1;
            self.opaque_count = 0;
            self.opaque_start = at;
            self.opaque_from = from;
            self.opaque_kind = kind;
            self.opaque_key = key;
            self.opaque_index = index;
            self.opaque_head = head_side;
            return;
        }
        self.stack.push(Frame {
            container: Container {
                kind,
                head: Vec::new(),
                gap: Gap::default(),
                tail: VecDeque::new(),
                count: 0,
                repeated: Vec::new(),
                unsure_from: None,
            },
            keys: Names::default(),
            entries: self.spare.pop().unwrap_or_default(),
            start: at,
            from,
            head_side,
            placed_head: head_side,
            index: 0,
            key: None,
            key_from: 0,
            key_end: 0,
            cost: 0,
            my_key: key,
            my_index: index,
        });
    }

    #[inline]
    fn end(&mut self, end: Offset) {
        let end = end + self.base;
        if self.opaque > 0 {
            self.opaque -= 1;
            if self.opaque == 0 {
                let key = self.opaque_key.take();
                let cost = NODE_COST + key.as_ref().map_or(0, |k| k.len());
                let child = Child {
                    index: self.opaque_index,
                    key,
                    node: Node::Summary {
                        kind: self.opaque_kind,
                        count: self.opaque_count,
                    },
                    start: self.opaque_start,
                    end,
                    cost,
                    compact: None,
                };
                if self.opaque_head {
                    self.place_head(child);
                } else {
                    self.push_entry(Entry::Node(Box::new(child)));
                }
            }
            return;
        }
        let Some(mut f) = self.stack.pop() else {
            return;
        };
        if !f.placed_head && f.from >= self.window.oldest() {
            let mut entries = std::mem::take(&mut f.entries);
            entries.clear();
            if self.spare.len() < 64 {
                self.spare.push(entries);
            }
            // All of it is in the window: a span, parsed again if its
            // container keeps it.
            self.push_entry(Entry::Span {
                index: f.my_index,
                from: f.from,
                start: f.start,
                end,
            });
            return;
        }
        let placed_head = f.placed_head;
        let child = self.close(f, end);
        if placed_head {
            // Its head-side children were counted as they came.
            let Some(parent) = self.stack.last_mut() else {
                self.root = Some(child);
                return;
            };
            let inner: usize = match &child.node {
                Node::Container(c) => c.head.iter().map(|k| k.cost).sum(),
                _ => 0,
            };
            parent.container.count += 1;
            parent.cost += child.cost;
            self.head_used = self.head_used - inner + child.cost;
            parent.container.head.push(child);
        } else {
            self.push_entry(Entry::Node(Box::new(child)));
        }
    }

    #[inline]
    fn str_begin(&mut self, key: bool, at: Offset) {
        let at = at + self.base;
        if !key && self.opaque_value() {
            return;
        }
        if self.opaque > 0 {
            return;
        }
        if key {
            if let Some(f) = self.stack.last_mut() {
                f.key_from = at;
            }
            self.key_buf = Some(Vec::new());
        }
        if self.head_side() {
            self.string = Some(OpenStr {
                head: Vec::new(),
                len: 0,
                ring: Vec::new(),
                ring_start: 0,
                start: at,
                key,
            });
        } else {
            self.tail_str = Some(TailStr {
                start: at,
                len: 0,
                head: None,
                key,
                name: None,
            });
        }
    }

    #[inline]
    fn string(&mut self, key: bool, at: Offset, raw: &[u8], end: Offset) {
        // The common case on the tail side, without the string's state.
        if self.opaque == 0 && !self.head_side() {
            let at = at + self.base;
            if key {
                if raw.len() > self.keep.max_key {
                    self.key_too_long = true;
                }
                self.key_done(raw);
                if let Some(f) = self.stack.last_mut() {
                    f.key_from = at;
                    f.key_end = end + self.base;
                }
                return;
            }
            let (_, index, from) = self.slot(at);
            if from >= self.window.oldest() {
                self.push_entry(Entry::Span {
                    index,
                    from,
                    start: at,
                    end: end + self.base,
                });
                return;
            }
            // Back to the general path (its slot is taken again there).
            if let Some(f) = self.stack.last_mut() {
                f.index -= 1;
            }
        } else if self.opaque == 0
            && self.tail_str.is_none()
            && self.string.is_none()
            && self.key_buf.is_none()
        {
            // The head side's common case: what `str_begin`, `str_part`
            // and `str_end` make of a whole string, without their state.
            self.head_string(key, at + self.base, raw, end + self.base);
            return;
        }
        self.str_begin(key, at);
        if !raw.is_empty() {
            self.str_part(raw);
        }
        self.str_end(end);
    }

    #[inline]
    fn str_part(&mut self, mut raw: &[u8]) {
        if let Some(k) = self.key_buf.as_mut() {
            // Past `max_key`, the document gets the text preview anyway.
            let n = raw
                .len()
                .min((self.keep.max_key + 1).saturating_sub(k.len()));
            k.extend_from_slice(&raw[..n]);
        }
        if let Some(t) = self.tail_str.as_mut() {
            t.len += raw.len() as u64;
            if t.key {
                if t.len > self.keep.max_key as u64 {
                    self.key_too_long = true;
                }
            } else if t.head.is_none() && t.len as usize >= self.keep.window / 4 {
                // Long enough that the window may lose its start: keep
                // its head now, while the window still holds it.
                let from = t.start + 1;
                let to = from + t.len.min(self.keep.str_keep as u64);
                t.head = Some(self.window.copy(from, to).unwrap_or_default());
                t.name = self.stack.last().and_then(|f| tail_name(&self.window, f));
            }
            return;
        }
        let Some(o) = self.string.as_mut() else {
            return;
        };
        o.len += raw.len() as u64;
        let cap = if o.key {
            self.keep.max_key
        } else {
            self.keep.str_keep
        };
        let room = cap - o.head.len();
        if room > 0 {
            let n = room.min(raw.len());
            o.head.extend_from_slice(&raw[..n]);
            raw = &raw[n..];
        }
        if raw.is_empty() {
            return;
        }
        if o.key {
            self.key_too_long = true;
            return;
        }
        // The ring of the last `cap` bytes past the head.
        if raw.len() >= cap {
            o.ring.clear();
            o.ring.extend_from_slice(&raw[raw.len() - cap..]);
            o.ring_start = 0;
            return;
        }
        if o.ring.len() < cap {
            let n = (cap - o.ring.len()).min(raw.len());
            o.ring.extend_from_slice(&raw[..n]);
            raw = &raw[n..];
        }
        while !raw.is_empty() {
            let n = (cap - o.ring_start).min(raw.len());
            o.ring[o.ring_start..o.ring_start + n].copy_from_slice(&raw[..n]);
            o.ring_start = (o.ring_start + n) % cap;
            raw = &raw[n..];
        }
    }

    #[inline]
    fn str_end(&mut self, end: Offset) {
        let end = end + self.base;
        if let Some(k) = self.key_buf.take() {
            self.key_done(&k);
        }
        if let Some(t) = self.tail_str.take() {
            if t.key {
                if let Some(f) = self.stack.last_mut() {
                    f.key_end = end;
                }
                return;
            }
            let (key, index, from) = self.slot(t.start);
            let key = key.or(t.name);
            if from >= self.window.oldest() {
                self.push_entry(Entry::Span {
                    index,
                    from,
                    start: t.start,
                    end,
                });
                return;
            }
            // Longer than the window: its head, kept in time, and its tail.
            let head = t.head.unwrap_or_default();
            let tail_len = (self.keep.str_keep as u64).min(t.len - head.len() as u64);
            let tail = self
                .window
                .copy(end - 1 - tail_len, end - 1)
                .unwrap_or_default();
            let cost = NODE_COST + head.len() + tail.len() + key.as_ref().map_or(0, |k| k.len());
            let s = Str {
                head: head.into(),
                tail: tail.into(),
                len: t.len,
            };
            self.push_entry(Entry::Node(Box::new(Child {
                index,
                key,
                node: Node::Str(s),
                start: t.start,
                end,
                cost,
                compact: None,
            })));
            return;
        }
        let Some(mut o) = self.string.take() else {
            return;
        };
        if o.key {
            if let Some(f) = self.stack.last_mut() {
                f.key = Some(Bytes::from(o.head));
            }
            return;
        }
        o.ring.rotate_left(o.ring_start);
        let s = Str {
            head: o.head.into(),
            tail: o.ring.into(),
            len: o.len,
        };
        let (key, index, _) = self.slot(o.start);
        let cost = NODE_COST + s.head.len() + s.tail.len() + key.as_ref().map_or(0, |k| k.len());
        let mut child = Child {
            index,
            key,
            node: Node::Str(s),
            start: o.start,
            end,
            cost,
            compact: None,
        };
        child.compact = compact_len(&child.node);
        self.place_head(child);
    }

    #[inline]
    fn scalar(&mut self, raw: Option<&[u8]>, at: Offset, end: Offset) {
        let (at, end) = (at + self.base, end + self.base);
        if self.opaque_value() {
            return;
        }
        let head_side = self.head_side();
        let (key, index, from) = self.slot(at);
        if !head_side {
            self.push_entry(Entry::Span {
                index,
                from,
                start: at,
                end,
            });
            return;
        }
        let node = match raw {
            Some(r) => Node::Scalar(r.into()),
            None => Node::LongNumber,
        };
        let cost = NODE_COST + raw.map_or(0, <[u8]>::len) + key.as_ref().map_or(0, |k| k.len());
        let mut child = Child {
            index,
            key,
            node,
            start: at,
            end,
            cost,
            compact: None,
        };
        child.compact = compact_len(&child.node);
        self.finish_value(child, from, true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The direct children of the outermost container in `doc`: where each
    /// one's name (or, in an array, the child itself) starts, and its value.
    fn spans(doc: &[u8]) -> Vec<Entry> {
        let mut b = Builder::new(Keep {
            head_cost: usize::MAX / 4,
            window: 0,
            str_keep: 1 << 20,
            max_key: 4096,
            keep_depth: 48,
        });
        let mut s = Scanner::new();
        s.feed(doc, &mut b);
        s.finish(&mut b).unwrap();
        let Node::Container(c) = b.into_root().unwrap().node else {
            panic!("not a container");
        };
        c.head
            .iter()
            .map(|child| {
                // A member's name ends at the last quote before its colon.
                let from = match &child.key {
                    Some(k) => {
                        let before = &doc[..child.start as usize];
                        let colon = before.iter().rposition(|&b| b == b':').unwrap();
                        let close = before[..colon].iter().rposition(|&b| b == b'"').unwrap();
                        (close - k.len() - 1) as u64
                    }
                    None => child.start,
                };
                Entry::Span {
                    index: child.index + 100,
                    from,
                    start: child.start,
                    end: child.end,
                }
            })
            .collect()
    }

    #[test]
    fn a_run_of_children_parses_again_as_each_one_alone() {
        let docs: [&[u8]; 4] = [
            br#"[{"a":1,"a":2},"x\n",[[1,2],[]],-0.5e3,true,null,{"b":{"c":[{}]}}]"#,
            br#"{"one": 1, "two" :[ 2, 3 ],"three":"a long string","four":{"x":{"y":null}},"a":1,"a":2}"#,
            b"[ 1 ,\n 2 ,\t\"three\" , {\"k\\\"ey\": [4]} ]",
            br#"{"k":[1],"l":{"m":"n"},"o":"p","q":[]}"#,
        ];
        for doc in docs {
            let entries = spans(doc);
            assert!(entries.len() >= 4, "{}", String::from_utf8_lossy(doc));
            let member = doc[0] == b'{';
            for keep_depth in [48, 3, 2] {
                let mut b = Builder::new(Keep {
                    head_cost: 0,
                    window: 1 << 20,
                    str_keep: 8,
                    max_key: 4096,
                    keep_depth,
                });
                b.window.push(doc);
                let run = b.reparse_run(&entries, member, 1).expect("a run");
                let one_by_one: Vec<Child> = entries
                    .iter()
                    .map(|e| b.reparse(e, member, 1).expect("one"))
                    .collect();
                assert_eq!(format!("{run:?}"), format!("{one_by_one:?}"));
                assert_eq!(run[0].index, 100);
                // A run that is not exactly those children is refused.
                assert!(b.reparse_run(&entries[1..], member, 1).is_some());
                let skipped = [entries[0].clone_span(), entries[2].clone_span()];
                assert!(b.reparse_run(&skipped, member, 1).is_none());
            }
        }
    }

    impl Entry {
        fn clone_span(&self) -> Entry {
            let Entry::Span {
                index,
                from,
                start,
                end,
            } = *self
            else {
                panic!("a span");
            };
            Entry::Span {
                index,
                from,
                start,
                end,
            }
        }
    }
}
