//! The sketch: what of a JSON document a preview can use, kept while the
//! document streams past, in memory bounded by the budget.
//!
//! # What is kept
//!
//! * **Head side.** Values in document order until their cost reaches
//!   `head_cost` (like the text head): each one whole, down to the keep
//!   depth.
//! * **Tail side.** Once a container stops taking head-side children, its
//!   later children are only noted: where each starts and ends. The last
//!   `window` bytes of the stream are kept as they are, so whichever of those
//!   children are still in the window when their container closes are
//!   parsed again from it, and only then. A child larger than the window is
//!   sketched when it closes (its own last children, a long string's head
//!   and tail), so the newest child is never lost. What fell out of the
//!   window goes to the container's gap. So the tail side costs almost
//!   nothing per value, and holds the last values before each container
//!   ends.
//! * **Strings** keep their first and last `str_keep` raw bytes; **numbers**
//!   longer than [`MAX_SCALAR`](super::scan::MAX_SCALAR) bytes keep only their
//!   length; **containers** deeper than `keep_depth` keep only their kind and
//!   count.
//! * **Gaps** count what was dropped: children, raw bytes, and the first and
//!   last dropped index.
//!
//! A node's cost is the raw bytes it keeps plus [`NODE_COST`] for its
//! bookkeeping. Memory: the head side (`head_cost`), the window, and for
//! each open container at most two sketched children larger than the
//! window.

mod builder;
mod gate;
mod tree;
mod window;

pub(crate) use builder::Builder;
pub(crate) use gate::{Gate, Gated};
pub(crate) use tree::{Child, Container, Node, Str};
pub(crate) use window::{Borrowed, Window};

/// The cost charged for each kept node on top of its bytes.
pub(crate) const NODE_COST: usize = 48;

/// How much to keep.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Keep {
    pub head_cost: usize,
    pub window: usize,
    pub str_keep: usize,
    pub max_key: usize,
    pub keep_depth: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::scan::Scanner;

    fn keep(budget: usize) -> Keep {
        Keep {
            head_cost: 2 * budget,
            window: 2 * budget,
            str_keep: budget,
            max_key: 256,
            keep_depth: 16,
        }
    }

    #[test]
    fn memory_stays_bounded_whatever_the_document() {
        let budget = 4096;
        // Independent of the document's size (each is over 1,000 budgets).
        let limit = 64 * budget;
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
                b.window.push(chunk);
                s.feed(chunk, &mut b);
                peak = peak.max(b.used());
            }
            s.finish(&mut b).unwrap();
            assert!(peak <= limit, "peak {peak} > {limit}");
            assert!(b.into_root().is_some());
        }
    }
}
