//! The sketch's tree: the values kept, the gaps that count what was
//! dropped, and what each costs.

use std::collections::VecDeque;

use super::super::scan::{Kind, Offset};

/// The raw bytes of a member name, a scalar or a string's ends: up to [`Bytes::IN_PLACE`]
/// of them in place (most names, numbers and short strings, which so cost no allocation
/// to keep or to drop), longer ones on the heap.
#[derive(Clone)]
pub(crate) enum Bytes {
    InPlace { len: u8, buf: [u8; Bytes::IN_PLACE] },
    Heap(Box<[u8]>),
}

impl Bytes {
    /// The most bytes kept in place.
    pub(crate) const IN_PLACE: usize = 22;
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::InPlace { len, buf } => &buf[..usize::from(*len)],
            Bytes::Heap(b) => b,
        }
    }
}

impl From<&[u8]> for Bytes {
    fn from(raw: &[u8]) -> Bytes {
        if raw.len() <= Bytes::IN_PLACE {
            let mut buf = [0; Bytes::IN_PLACE];
            buf[..raw.len()].copy_from_slice(raw);
            Bytes::InPlace {
                len: raw.len() as u8,
                buf,
            }
        } else {
            Bytes::Heap(raw.into())
        }
    }
}

impl From<Vec<u8>> for Bytes {
    fn from(raw: Vec<u8>) -> Bytes {
        if raw.len() <= Bytes::IN_PLACE {
            Bytes::from(raw.as_slice())
        } else {
            Bytes::Heap(raw.into_boxed_slice())
        }
    }
}

impl Default for Bytes {
    fn default() -> Bytes {
        Bytes::InPlace {
            len: 0,
            buf: [0; Bytes::IN_PLACE],
        }
    }
}

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self))
    }
}

/// A kept value.
#[derive(Debug)]
pub(crate) enum Node {
    /// A number or literal, whole.
    Scalar(Bytes),
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
    pub head: Bytes,
    /// The last bytes, when the content is longer than `head`.
    pub tail: Bytes,
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
    /// The indexes of members whose name an earlier member of this object
    /// already has, in order: a pointer names the first member of a name,
    /// so none names these.
    pub repeated: Vec<u64>,
    /// The first member whose name could not be checked against all the
    /// earlier ones (an object of more than [`KEY_SET_CAP`] names).
    pub unsure_from: Option<u64>,
}

/// How many member names an object remembers to find repeated ones (about
/// 16 bytes each).
pub(crate) const KEY_SET_CAP: usize = 1 << 16;

impl Container {
    /// Whether a pointer names the member at `index` exactly: no earlier
    /// member has its name. Always true in an array.
    pub(crate) fn names_exactly(&self, index: u64) -> bool {
        self.kind == Kind::Array
            || (self.repeated.binary_search(&index).is_err()
                && self.unsure_from.is_none_or(|u| index < u))
    }

    /// How many kept children the head side and the tail side may take:
    /// neither reaches across the gap.
    pub(crate) fn sides(&self) -> (usize, usize) {
        let all = self.head.len() + self.tail.len();
        if self.gap.count > 0 {
            (self.head.len(), self.tail.len())
        } else {
            (all, all)
        }
    }
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
    pub key: Option<Bytes>,
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
pub(super) fn compact_len(node: &Node) -> Option<u64> {
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
