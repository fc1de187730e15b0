//! Where a stage's spilled bytes go: into the object being written or,
//! once the store failed (a full disk, a read-only store, a lost
//! connection), into their hash alone. The end then still knows the
//! content's id, and an object of that id the store already holds, read
//! back and checked, is reported as stored: a hit found is a hit, in every
//! input mode, whatever the write met.

use crate::store::{ContentId, ObjectWriter, Store, StoreError, StoredObject, WriteOptions};

/// The object being written, or the hash of what it would have held.
pub(crate) enum Storing {
    Writing(Box<ObjectWriter>),
    Failed {
        error: StoreError,
        /// The hash of every byte given and their count (`None` for a
        /// writer that did not hash).
        hash: Option<Box<(blake3::Hasher, u64)>>,
    },
}

impl Storing {
    /// Starts writing an object; when no writer can be had, hashing starts
    /// instead.
    pub(crate) fn start(store: &Store, opts: WriteOptions) -> Storing {
        match store.writer(opts) {
            Ok(w) => Storing::Writing(Box::new(w)),
            Err(error) => Storing::Failed {
                error,
                hash: Some(Box::new((blake3::Hasher::new(), 0))),
            },
        }
    }

    /// Appends `data`. Never fails: a store error is kept for
    /// [`finish`](Self::finish), and the bytes are hashed from then on.
    pub(crate) fn write(&mut self, data: &[u8]) {
        match self {
            Storing::Writing(w) => {
                if let Err(error) = w.write_all(data) {
                    let failed = Storing::Failed { error, hash: None };
                    if let Storing::Writing(w) = std::mem::replace(self, failed) {
                        // Dropping the writer removes its temp file.
                        let hash = (*w).into_hash().map(Box::new);
                        if let Storing::Failed { hash: h, .. } = self {
                            *h = hash;
                        }
                    }
                }
            }
            Storing::Failed { hash: Some(h), .. } => {
                h.0.update(data);
                h.1 += data.len() as u64;
            }
            Storing::Failed { hash: None, .. } => {}
        }
    }

    /// The stored object: the one written, or, when the store failed, one
    /// of the same content it holds already. An fsync error is final: what
    /// could not be made durable is never reported stored.
    pub(crate) fn finish(self, store: &Store) -> Result<StoredObject, StoreError> {
        let (error, content) = match self {
            Storing::Writing(w) => {
                let content = w.content();
                match (*w).finish() {
                    Ok(stored) => return Ok(stored),
                    Err(e) => (e, content),
                }
            }
            Storing::Failed { error, hash } => {
                let content = hash.map(|h| (ContentId::from_hash(h.0.finalize()), h.1));
                (error, content)
            }
        };
        let fsync = matches!(&error, StoreError::Io { op, .. } if op.starts_with("fsync"));
        match content {
            Some((id, bytes)) if !fsync => match store.verified_hit(&id, bytes) {
                Ok(Some(hit)) => Ok(hit),
                // The store's own error says more than a failed check.
                Ok(None) | Err(_) => Err(error),
            },
            _ => Err(error),
        }
    }
}
