//! A stream's consumer moved to a thread of its own once the stream is long
//! enough for it to pay, so that it works beside the stage's own hashing,
//! counting and storing instead of after them (the JSON sketch).
//!
//! The consumer sees exactly the bytes it would see on the stage's thread,
//! in order, so its result is the same. Memory stays bounded: at most
//! [`QUEUED`] chunks of [`CHUNK`] bytes wait for it, and their buffers come
//! back to be reused. A consumer that gets no thread (none in the store's
//! budget, or none from the system) stays here. The threads come from
//! [`crate::threads`], as every thread of the core does.

use std::sync::mpsc::{self, Receiver, SyncSender};

use crate::threads::{self, Joined, Parallelism};

/// What takes a stream's bytes in order.
pub(crate) trait Feed: Send + 'static {
    fn feed(&mut self, data: &[u8]);
}

/// Bytes handed over at a time.
pub(crate) const CHUNK: usize = 1 << 20;

/// Chunks that may wait for the consumer before the stage waits for it.
pub(crate) const QUEUED: usize = 3;

/// Work on this many bytes or more pays for a thread of its own: a stream
/// consumer moves to one once this many bytes were fed here, a whole input
/// is stored on threads of its own (`Spiller::apply`, `Store::put`), and
/// `verify` hashes a raw object on two. The one threshold for all of them.
pub(crate) const THREAD_AFTER: u64 = 1 << 20;

/// A consumer, where it runs.
pub(crate) enum Offload<T: Feed> {
    Here(T),
    Thread(Remote<T>),
}

/// Bytes gathered for another thread, [`CHUNK`] at a time, in buffers
/// that thread sends back to be reused.
pub(crate) struct Chunks {
    buf: Vec<u8>,
    back: Receiver<Vec<u8>>,
}

impl Chunks {
    pub(crate) fn new(back: Receiver<Vec<u8>>) -> Chunks {
        Chunks {
            buf: Vec::with_capacity(CHUNK),
            back,
        }
    }

    /// Gathers the start of `data` until a chunk is full, and gives the
    /// rest.
    pub(crate) fn fill<'a>(&mut self, data: &'a [u8]) -> &'a [u8] {
        let n = (CHUNK - self.buf.len()).min(data.len());
        self.buf.extend_from_slice(&data[..n]);
        &data[n..]
    }

    pub(crate) fn is_full(&self) -> bool {
        self.buf.len() == CHUNK
    }

    /// The bytes gathered so far.
    pub(crate) fn gathered(&self) -> &[u8] {
        &self.buf
    }

    /// A buffer the other thread is done with, if one came back.
    pub(crate) fn spare(&mut self) -> Option<Vec<u8>> {
        self.back.try_recv().ok()
    }

    /// Takes the first `cut` bytes gathered; the rest starts the next chunk,
    /// in a buffer that came back if one did.
    pub(crate) fn take(&mut self, cut: usize) -> Vec<u8> {
        let mut next = self.back.try_recv().unwrap_or_default();
        next.clear();
        next.reserve(CHUNK);
        next.extend_from_slice(&self.buf[cut..]);
        self.buf.truncate(cut);
        std::mem::replace(&mut self.buf, next)
    }
}

/// The stage's end of a consumer on a thread.
pub(crate) struct Remote<T> {
    tx: SyncSender<Vec<u8>>,
    chunks: Chunks,
    thread: Joined<T>,
}

impl<T: Feed> Offload<T> {
    /// Feeds `data`; `fed` bytes came before it. Past [`THREAD_AFTER`] the
    /// consumer moves to a thread from `budget` first; a write that crosses
    /// it (a whole input written at once) is split there, so that its rest
    /// is read on the thread too.
    pub(crate) fn feed(self, data: &[u8], fed: u64, budget: &Parallelism) -> Self {
        let mut this = match self {
            Offload::Here(mut t) if fed < THREAD_AFTER => {
                let here =
                    usize::try_from(THREAD_AFTER - fed).map_or(data.len(), |n| n.min(data.len()));
                t.feed(&data[..here]);
                let rest = &data[here..];
                return if rest.is_empty() {
                    Offload::Here(t)
                } else {
                    Offload::Here(t).feed(rest, THREAD_AFTER, budget)
                };
            }
            Offload::Here(t) => match Remote::start(t, budget) {
                Ok(r) => Offload::Thread(r),
                Err(t) => Offload::Here(t),
            },
            other => other,
        };
        match &mut this {
            Offload::Here(t) => t.feed(data),
            Offload::Thread(r) => r.feed(data),
        }
        this
    }

    /// The consumer, with every byte fed to it consumed.
    pub(crate) fn into_inner(self) -> T {
        match self {
            Offload::Here(t) => t,
            Offload::Thread(r) => r.finish(),
        }
    }
}

impl<T: Feed> Remote<T> {
    /// Starts a thread for `consumer`; hands it back if none can be had.
    fn start(consumer: T, budget: &Parallelism) -> Result<Remote<T>, T> {
        let Some(permit) = budget.permit() else {
            return Err(consumer);
        };
        let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(QUEUED);
        let (back_tx, back) = mpsc::channel::<Vec<u8>>();
        let work = move |mut consumer: T| {
            for buf in rx {
                consumer.feed(&buf);
                // The stage may be gone: the buffer is then freed.
                let _ = back_tx.send(buf);
            }
            consumer
        };
        let thread = threads::start(permit, "spillway-feed", consumer, work)?;
        Ok(Remote {
            tx,
            chunks: Chunks::new(back),
            thread,
        })
    }

    fn hand_over(&mut self) {
        let len = self.chunks.gathered().len();
        if len > 0 {
            // Fails only when the thread has died, which `finish` reports.
            let _ = self.tx.send(self.chunks.take(len));
        }
    }

    fn feed(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            data = self.chunks.fill(data);
            if self.chunks.is_full() {
                self.hand_over();
            }
        }
    }

    fn finish(mut self) -> T {
        self.hand_over();
        let Remote { tx, thread, .. } = self;
        // Closing the channel ends the thread's loop.
        drop(tx);
        thread.join()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A consumer whose result depends on every byte and its order.
    struct Digest(blake3::Hasher, u64);

    impl Feed for Digest {
        fn feed(&mut self, data: &[u8]) {
            self.0.update(data);
            self.1 += data.len() as u64;
        }
    }

    #[test]
    fn a_consumer_on_a_thread_sees_every_byte_in_order() {
        let input: Vec<u8> = (0..(5u32 << 20) + 12345).map(|i| (i % 251) as u8).collect();
        // With a thread in the budget, and with none (the one fallback).
        // One write of it all, as `Spiller::apply` makes, moves too.
        let whole = input.len();
        for (piece, threads) in [
            (1000, 1),
            (256 << 10, 1),
            (3 << 20, 1),
            (whole, 1),
            (256 << 10, 0),
            (whole, 0),
        ] {
            let budget = Parallelism::new(threads);
            let mut o = Offload::Here(Digest(blake3::Hasher::new(), 0));
            let mut fed = 0u64;
            let mut moved = false;
            for p in input.chunks(piece) {
                o = o.feed(p, fed, &budget);
                fed += p.len() as u64;
                moved |= matches!(o, Offload::Thread(_));
            }
            assert_eq!(moved, threads > 0, "pieces of {piece}, {threads} thread(s)");
            let d = o.into_inner();
            assert_eq!(d.1, input.len() as u64);
            assert_eq!(d.0.finalize(), blake3::hash(&input), "pieces of {piece}");
        }
    }

    #[test]
    fn a_short_stream_stays_here() {
        let mut o = Offload::Here(Digest(blake3::Hasher::new(), 0));
        o = o.feed(b"short", 0, &Parallelism::new(1));
        assert!(matches!(o, Offload::Here(_)));
        assert_eq!(o.into_inner().1, 5);
    }
}
