//! The sketch: what of a JSON document a preview can use, kept while the
//! document streams past, in memory bounded by the budget.
//!
//! # What is kept
//!
//! * **Head side.** Values in document order until their cost reaches
//!   `head_cost` (like the text head): each one whole, down to the keep
//!   depth.
//! * **Tail side.** Once a container stops taking head-side children, its
//!   later children go to a ring. Rings along the open path share one
//!   `tail_cost`; past it the oldest entry in document order (the front of
//!   the outermost ring) is dropped into its container's gap, never the
//!   newest. So the tail side is the last values before each container ends.
//! * **Strings** keep their first and last `str_keep` raw bytes; **numbers**
//!   longer than [`MAX_SCALAR`](super::scan::MAX_SCALAR) bytes keep only their
//!   length; **containers** deeper than `keep_depth` keep only their kind,
//!   size and count.
//! * **Gaps** count what was dropped: children, raw bytes, and the first and
//!   last dropped index.
//!
//! A node's cost is the raw bytes it keeps plus [`NODE_COST`] for its
//! bookkeeping, so memory stays within a small multiple of
//! `head_cost + tail_cost` whatever the document.

use std::collections::VecDeque;

use super::scan::{Kind, Offset, Sink};

/// The cost charged for each kept node on top of its bytes.
pub(crate) const NODE_COST: usize = 48;

/// How much to keep.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Keep {
    pub head_cost: usize,
    pub tail_cost: usize,
    pub str_keep: usize,
    pub max_key: usize,
    pub keep_depth: usize,
}

/// A kept value.
#[derive(Debug)]
pub(crate) enum Node {
    /// A number or literal, whole.
    Scalar(Box<[u8]>),
    /// A number too long to keep.
    LongNumber,
    /// A string: its raw content's first and last bytes.
    Str(Str),
    /// An array or object.
    Container(Box<Container>),
    /// A container past the keep depth: only its kind and child count.
    Summary { kind: Kind, count: u64 },
}

/// A string's kept raw content (escapes as written).
#[derive(Debug, Default)]
pub(crate) struct Str {
    /// The first bytes; the whole content when `len == head.len()`.
    pub head: Vec<u8>,
    /// The last bytes, when the content is longer than `head`.
    pub tail: Vec<u8>,
    /// Raw content length.
    pub len: u64,
}

impl Str {
    pub(crate) fn complete(&self) -> bool {
        self.len == self.head.len() as u64
    }
}

/// A container's kept children and what was dropped between them.
#[derive(Debug)]
pub(crate) struct Container {
    pub kind: Kind,
    /// The first children, in order.
    pub head: Vec<Child>,
    /// The dropped children, all between `head` and `tail`.
    pub gap: Gap,
    /// The last children, in order.
    pub tail: VecDeque<Child>,
    /// All children.
    pub count: u64,
}

/// Dropped children.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Gap {
    pub count: u64,
    /// Raw bytes from the first dropped child's start to the last's end.
    pub first_start: Offset,
    pub last_end: Offset,
    pub first_index: u64,
    pub last_index: u64,
}

/// A kept child (or the document's root).
#[derive(Debug)]
pub(crate) struct Child {
    pub index: u64,
    /// A member's name, raw (escapes as written, no quotes).
    pub key: Option<Box<[u8]>>,
    pub node: Node,
    /// The value's raw byte range.
    pub start: Offset,
    pub end: Offset,
    /// Bytes and bookkeeping kept, this node and all below it.
    pub cost: usize,
    /// The value's length as compact JSON, when all of it was kept.
    pub compact: Option<u64>,
}

/// The compact length of a node, when all of it is kept.
fn compact_len(node: &Node) -> Option<u64> {
    match node {
        Node::Scalar(raw) => Some(raw.len() as u64),
        Node::LongNumber | Node::Summary { .. } => None,
        Node::Str(s) => s.complete().then_some(s.len + 2),
        Node::Container(c) => {
            if c.gap.count > 0 {
                return None;
            }
            let mut n = 2 + c.count.saturating_sub(1);
            for k in c.head.iter().chain(c.tail.iter()) {
                n += k.compact?;
                if let Some(key) = &k.key {
                    n += key.len() as u64 + 3;
                }
            }
            Some(n)
        }
    }
}

impl Child {
    /// Raw bytes of the value.
    pub(crate) fn raw_len(&self) -> u64 {
        self.end - self.start
    }
}

/// An open container.
struct Frame {
    container: Container,
    start: Offset,
    /// Whether new children may still go to the head side.
    head_side: bool,
    /// Whether this container itself started on the head side.
    placed_head: bool,
    index: u64,
    key: Option<Box<[u8]>>,
    /// Cost held in this frame's ring.
    ring_cost: usize,
    /// Cost of everything kept below this frame (head and ring).
    cost: usize,
    /// This frame's own key and index in its parent.
    my_key: Option<Box<[u8]>>,
    my_index: u64,
}

/// An open string.
struct OpenStr {
    s: Str,
    /// The last bytes seen, as a ring: `ring[ring_start..]` then `ring[..ring_start]`.
    ring: Vec<u8>,
    ring_start: usize,
    start: Offset,
    key: bool,
}

/// Builds the sketch from the tokenizer's events.
pub(crate) struct Builder {
    keep: Keep,
    stack: Vec<Frame>,
    /// Levels of nesting past the keep depth, and the child count of the
    /// outermost of them.
    opaque: u64,
    opaque_count: u64,
    opaque_start: Offset,
    opaque_kind: Kind,
    opaque_key: Option<Box<[u8]>>,
    opaque_index: u64,
    string: Option<OpenStr>,
    head_used: usize,
    tail_used: usize,
    /// A key longer than `max_key` was seen: the document gets the text
    /// preview.
    pub(crate) key_too_long: bool,
    root: Option<Child>,
}

impl Builder {
    pub(crate) fn new(keep: Keep) -> Self {
        Builder {
            keep,
            stack: Vec::new(),
            opaque: 0,
            opaque_count: 0,
            opaque_start: 0,
            opaque_kind: Kind::Array,
            opaque_key: None,
            opaque_index: 0,
            string: None,
            head_used: 0,
            tail_used: 0,
            key_too_long: false,
            root: None,
        }
    }

    /// The whole document's sketch, once the tokenizer finished cleanly.
    pub(crate) fn into_root(self) -> Option<Child> {
        self.root
    }

    /// Memory held, in the units the limits count (for tests).
    #[cfg(test)]
    pub(crate) fn used(&self) -> usize {
        self.head_used + self.tail_used
    }

    /// Whether the next value starts on the head side.
    fn head_side(&self) -> bool {
        match self.stack.last() {
            None => true,
            Some(f) => f.head_side && self.head_used < self.keep.head_cost,
        }
    }

    /// Takes the key and index for a value starting now.
    fn slot(&mut self) -> (Option<Box<[u8]>>, u64) {
        match self.stack.last_mut() {
            None => (None, 0),
            Some(f) => {
                let i = f.index;
                f.index += 1;
                (f.key.take(), i)
            }
        }
    }

    /// Places a finished value in its parent (or as the root): on the head
    /// side when it started there.
    fn place(&mut self, mut child: Child, head_side: bool) {
        child.compact = compact_len(&child.node);
        let Some(f) = self.stack.last_mut() else {
            self.root = Some(child);
            return;
        };
        f.container.count += 1;
        if head_side {
            f.cost += child.cost;
            self.head_used += child.cost;
            f.container.head.push(child);
            return;
        }
        f.head_side = false;
        f.cost += child.cost;
        f.ring_cost += child.cost;
        self.tail_used += child.cost;
        f.container.tail.push_back(child);
        self.evict();
    }

    /// Drops the oldest ring entries until the tail side fits, never the
    /// newest one.
    fn evict(&mut self) {
        let Some(newest) = self
            .stack
            .iter()
            .rposition(|f| !f.container.tail.is_empty())
        else {
            return;
        };
        let mut level = 0;
        while self.tail_used > self.keep.tail_cost && level < self.stack.len() {
            let f = &mut self.stack[level];
            let keep = usize::from(level == newest);
            if f.container.tail.len() <= keep {
                level += 1;
                continue;
            }
            let Some(old) = f.container.tail.pop_front() else {
                level += 1;
                continue;
            };
            let gap = &mut f.container.gap;
            if gap.count == 0 {
                gap.first_start = old.start;
                gap.first_index = old.index;
            }
            gap.count += 1;
            gap.last_end = old.end;
            gap.last_index = old.index;
            f.ring_cost -= old.cost;
            f.cost -= old.cost;
            self.tail_used -= old.cost;
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
}

impl Sink for Builder {
    fn begin(&mut self, kind: Kind, at: Offset) {
        if self.opaque_value() {
            self.opaque += 1;
            return;
        }
        let (key, index) = self.slot();
        if self.stack.len() >= self.keep.keep_depth {
            self.opaque = 1;
            self.opaque_count = 0;
            self.opaque_start = at;
            self.opaque_kind = kind;
            self.opaque_key = key;
            self.opaque_index = index;
            return;
        }
        let head_side = self.head_side();
        self.stack.push(Frame {
            container: Container {
                kind,
                head: Vec::new(),
                gap: Gap::default(),
                tail: VecDeque::new(),
                count: 0,
            },
            start: at,
            head_side,
            placed_head: head_side,
            index: 0,
            key: None,
            ring_cost: 0,
            cost: 0,
            my_key: key,
            my_index: index,
        });
    }

    fn end(&mut self, end: Offset) {
        if self.opaque > 0 {
            self.opaque -= 1;
            if self.opaque == 0 {
                let key = self.opaque_key.take();
                let cost = NODE_COST + key.as_ref().map_or(0, |k| k.len());
                let head_side = self.head_side();
                self.place(
                    Child {
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
                    },
                    head_side,
                );
            }
            return;
        }
        let Some(f) = self.stack.pop() else {
            return;
        };
        // Whatever this frame holds moves with it into its parent: take its
        // costs off the books, `place` puts the total back.
        self.head_used -= f.cost - f.ring_cost;
        self.tail_used -= f.ring_cost;
        let key_len = f.my_key.as_ref().map_or(0, |k| k.len());
        self.place(
            Child {
                index: f.my_index,
                key: f.my_key,
                node: Node::Container(Box::new(f.container)),
                start: f.start,
                end,
                cost: f.cost + NODE_COST + key_len,
                compact: None,
            },
            f.placed_head,
        );
    }

    fn str_begin(&mut self, key: bool, at: Offset) {
        if !key && self.opaque_value() {
            return;
        }
        if self.opaque > 0 {
            return;
        }
        self.string = Some(OpenStr {
            s: Str::default(),
            ring: Vec::new(),
            ring_start: 0,
            start: at,
            key,
        });
    }

    fn str_part(&mut self, mut raw: &[u8]) {
        let Some(o) = self.string.as_mut() else {
            return;
        };
        o.s.len += raw.len() as u64;
        let cap = if o.key {
            self.keep.max_key
        } else {
            self.keep.str_keep
        };
        let room = cap - o.s.head.len();
        if room > 0 {
            let n = room.min(raw.len());
            o.s.head.extend_from_slice(&raw[..n]);
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

    fn str_end(&mut self, end: Offset) {
        let Some(mut o) = self.string.take() else {
            return;
        };
        if o.key {
            if let Some(f) = self.stack.last_mut() {
                f.key = Some(o.s.head.into_boxed_slice());
            }
            return;
        }
        o.ring.rotate_left(o.ring_start);
        o.s.tail = o.ring;
        let (key, index) = self.slot();
        let cost =
            NODE_COST + o.s.head.len() + o.s.tail.len() + key.as_ref().map_or(0, |k| k.len());
        let head_side = self.head_side();
        self.place(
            Child {
                index,
                key,
                node: Node::Str(o.s),
                start: o.start,
                end,
                cost,
                compact: None,
            },
            head_side,
        );
    }

    fn scalar(&mut self, raw: Option<&[u8]>, at: Offset, end: Offset) {
        if self.opaque_value() {
            return;
        }
        let (key, index) = self.slot();
        let node = match raw {
            Some(r) => Node::Scalar(r.into()),
            None => Node::LongNumber,
        };
        let cost = NODE_COST + raw.map_or(0, <[u8]>::len) + key.as_ref().map_or(0, |k| k.len());
        let head_side = self.head_side();
        self.place(
            Child {
                index,
                key,
                node,
                start: at,
                end,
                cost,
                compact: None,
            },
            head_side,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::scan::Scanner;

    fn keep(budget: usize) -> Keep {
        Keep {
            head_cost: 2 * budget,
            tail_cost: 2 * budget,
            str_keep: budget,
            max_key: 256,
            keep_depth: 16,
        }
    }

    #[test]
    fn memory_stays_bounded_whatever_the_document() {
        let budget = 4096;
        let limit = 4 * budget + 3 * budget + 16 * NODE_COST * 4;
        let docs: Vec<Vec<u8>> = vec![
            // Many small records.
            {
                let mut d = b"{\"items\":[".to_vec();
                for i in 0..200_000 {
                    d.extend_from_slice(format!("{{\"id\":{i},\"v\":[1,2,3]}},").as_bytes());
                }
                d.extend_from_slice(b"0],\"n\":1}");
                d
            },
            // One long string, then more.
            format!(
                "[\"{}\",{}]",
                "x".repeat(5 << 20),
                "[1],".repeat(50_000) + "2"
            )
            .into_bytes(),
            // Wide nesting, each level with many members.
            {
                let mut d = Vec::new();
                for _ in 0..10 {
                    d.extend_from_slice(b"[");
                    d.extend_from_slice("7,".repeat(20_000).as_bytes());
                }
                d.extend_from_slice(b"0");
                for _ in 0..10 {
                    d.extend_from_slice(b"]");
                }
                d
            },
        ];
        for doc in docs {
            let mut s = Scanner::new();
            let mut b = Builder::new(keep(budget));
            let mut peak = 0;
            for chunk in doc.chunks(64 << 10) {
                s.feed(chunk, &mut b);
                peak = peak.max(b.used());
            }
            s.finish(&mut b).unwrap();
            assert!(peak <= limit, "peak {peak} > {limit}");
            assert!(b.into_root().is_some());
        }
    }
}
