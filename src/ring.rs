//! The last bytes of a stream, kept in a ring: the stage's tail and the
//! JSON sketch's window of the bytes it may still need.

/// The last `cap` bytes of a stream, addressed by stream offset.
pub(crate) struct ByteRing {
    buf: Vec<u8>,
    cap: usize,
    /// Where the oldest byte is, once `buf` is full.
    start: usize,
    /// The offset just past the newest byte.
    end: u64,
}

impl ByteRing {
    pub(crate) fn new(cap: usize) -> Self {
        ByteRing {
            buf: Vec::new(),
            cap,
            start: 0,
            end: 0,
        }
    }

    pub(crate) fn push(&mut self, data: &[u8]) {
        self.end += data.len() as u64;
        if self.cap == 0 {
            return;
        }
        if data.len() >= self.cap {
            self.buf.clear();
            self.buf.extend_from_slice(&data[data.len() - self.cap..]);
            self.start = 0;
            return;
        }
        let mut data = data;
        if self.buf.len() < self.cap {
            let n = (self.cap - self.buf.len()).min(data.len());
            self.buf.extend_from_slice(&data[..n]);
            data = &data[n..];
        }
        while !data.is_empty() {
            let n = (self.cap - self.start).min(data.len());
            self.buf[self.start..self.start + n].copy_from_slice(&data[..n]);
            self.start = (self.start + n) % self.cap;
            data = &data[n..];
        }
    }

    /// The newest byte.
    pub(crate) fn last(&self) -> Option<u8> {
        if self.buf.len() < self.cap || self.buf.is_empty() {
            self.buf.last().copied()
        } else {
            let i = (self.start + self.cap - 1) % self.cap;
            self.buf.get(i).copied()
        }
    }

    /// The offset of the oldest byte held.
    pub(crate) fn oldest(&self) -> u64 {
        self.end - self.buf.len() as u64
    }

    /// Bytes `from..to` of the stream, when all of them are held.
    pub(crate) fn copy(&self, from: u64, to: u64) -> Option<Vec<u8>> {
        if from < self.oldest() || to > self.end || from > to {
            return None;
        }
        let len = self.buf.len();
        let phys = |p: u64| (self.start + (p - self.oldest()) as usize) % len.max(1);
        let (a, n) = (phys(from), (to - from) as usize);
        let mut out = Vec::with_capacity(n);
        if a + n <= len {
            out.extend_from_slice(&self.buf[a..a + n]);
        } else {
            out.extend_from_slice(&self.buf[a..]);
            out.extend_from_slice(&self.buf[..n - (len - a)]);
        }
        Some(out)
    }

    /// The bytes held, oldest first.
    pub(crate) fn into_vec(mut self) -> Vec<u8> {
        self.buf.rotate_left(self.start);
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against the naive oracle (the whole stream, cut), for every chunking
    /// and capacity around the chunk sizes.
    #[test]
    fn a_ring_holds_exactly_the_last_bytes_in_any_chunking() {
        let stream: Vec<u8> = (0..997u32).map(|i| (i * 7 % 251) as u8).collect();
        for cap in [0, 1, 2, 7, 64, 100, 996, 997, 2000] {
            for piece in [1, 3, 50, 99, 1000] {
                let mut r = ByteRing::new(cap);
                for p in stream.chunks(piece) {
                    r.push(p);
                }
                let want = &stream[stream.len().saturating_sub(cap)..];
                assert_eq!(r.last(), want.last().copied(), "cap {cap}, piece {piece}");
                assert_eq!(r.oldest(), (stream.len() - want.len()) as u64);
                let from = r.oldest() + want.len() as u64 / 3;
                assert_eq!(
                    r.copy(from, stream.len() as u64).as_deref(),
                    Some(&stream[from as usize..])
                );
                if want.len() < stream.len() {
                    assert_eq!(r.copy(r.oldest() - 1, r.oldest()), None);
                }
                assert_eq!(r.into_vec(), want, "cap {cap}, piece {piece}");
            }
        }
    }
}
