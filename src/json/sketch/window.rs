//! The sketch's window: the last bytes of the document, which a tail-side
//! value is parsed again from when its container keeps it.
//!
//! A stream's window is a ring its bytes are copied into
//! ([`ByteRing`](crate::ring::ByteRing)). A whole input in memory is its own
//! window ([`Borrowed`]): nothing is copied, and after each part pushed the
//! same bytes are held, so the sketch of the same parts is the same.

use crate::ring::ByteRing;

/// The last bytes of the document, addressed by offset.
pub(crate) trait Window {
    /// The next bytes of the document, pushed before they are scanned.
    fn push(&mut self, data: &[u8]);
    /// The offset of the oldest byte held.
    fn oldest(&self) -> u64;
    /// Bytes `from..to` of the document, when all of them are held.
    fn copy(&self, from: u64, to: u64) -> Option<Vec<u8>>;
}

impl Window for ByteRing {
    #[inline]
    fn push(&mut self, data: &[u8]) {
        ByteRing::push(self, data);
    }

    #[inline]
    fn oldest(&self) -> u64 {
        ByteRing::oldest(self)
    }

    fn copy(&self, from: u64, to: u64) -> Option<Vec<u8>> {
        ByteRing::copy(self, from, to)
    }
}

/// The window of a document that is all in memory: the last `cap` bytes
/// pushed, read where they are.
pub(crate) struct Borrowed<'a> {
    input: &'a [u8],
    cap: usize,
    /// The length of the document pushed so far.
    end: usize,
}

impl<'a> Borrowed<'a> {
    /// The window of `input`, holding at most `cap` bytes, before any of
    /// it is pushed.
    pub(crate) fn new(input: &'a [u8], cap: usize) -> Self {
        Borrowed { input, cap, end: 0 }
    }
}

impl Window for Borrowed<'_> {
    /// `data` must be the input's next bytes (the part of it just past
    /// what was pushed before): the window reads the input, not `data`.
    #[inline]
    fn push(&mut self, data: &[u8]) {
        assert!(
            std::ptr::eq(data.as_ptr(), self.input[self.end..].as_ptr())
                && data.len() <= self.input.len() - self.end,
            "a borrowed window is pushed its input's next bytes"
        );
        self.end += data.len();
    }

    #[inline]
    fn oldest(&self) -> u64 {
        (self.end - self.end.min(self.cap)) as u64
    }

    fn copy(&self, from: u64, to: u64) -> Option<Vec<u8>> {
        if from < self.oldest() || to > self.end as u64 || from > to {
            return None;
        }
        Some(self.input[from as usize..to as usize].to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The borrowed window holds what the ring holds, for every capacity
    /// and pushing around it.
    #[test]
    fn a_borrowed_window_holds_what_the_ring_holds() {
        let doc: Vec<u8> = (0..600u32).map(|i| (i * 13 % 251) as u8).collect();
        for cap in [0, 1, 7, 64, 599, 600, 1000] {
            for piece in [1, 5, 64, 600] {
                let mut ring = ByteRing::new(cap);
                let mut borrowed = Borrowed::new(&doc, cap);
                for (k, p) in doc.chunks(piece).enumerate() {
                    Window::push(&mut ring, p);
                    borrowed.push(p);
                    let end = ((k * piece) + p.len()) as u64;
                    assert_eq!(Window::oldest(&ring), borrowed.oldest(), "cap {cap}");
                    for from in [0, borrowed.oldest().saturating_sub(1), borrowed.oldest()] {
                        for to in [from, end.min(from + 3), end, end + 1] {
                            assert_eq!(
                                Window::copy(&ring, from, to),
                                borrowed.copy(from, to),
                                "cap {cap}, piece {piece}, {from}..{to}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "its input's next bytes")]
    fn a_borrowed_window_takes_only_its_inputs_next_bytes() {
        let doc = b"[1,2,3]".to_vec();
        let other = doc.clone();
        let mut w = Borrowed::new(&doc, 4);
        w.push(&doc[..2]);
        w.push(&other[2..]);
    }
}
