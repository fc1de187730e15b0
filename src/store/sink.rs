//! The store's smallest face: what a stage needs to spill, public so that
//! a harness can spill into blob storage of its own.
//!
//! A [`SpillSink`] begins an object, takes its bytes as they stream, and
//! publishes them under the id spillway computed (the BLAKE3 hash of the
//! bytes), saying where the object now is. Wrapped by
//! [`Store::from_sink`](super::Store::from_sink), it is a store a
//! [`Spiller`](crate::Spiller) spills into like any other; reading it back
//! is the harness's business, and the store's read operations say so.

use std::fmt;
use std::io;
use std::path::PathBuf;

use super::{
    Backend, ContentId, Encoding, Location, Maintain, ObjectWriter, Reads, StoreError,
    StoreErrorKind, StoredObject, WriteOptions,
};

/// Blob storage a stage spills into: begin an object, write it, publish it.
///
/// # Examples
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use spillway::{ContentId, Policy, Spiller, SpillSink, SpillWriter, Store, StoreError};
///
/// /// Objects kept in a map, by id.
/// #[derive(Debug, Default)]
/// struct Blobs(Arc<Mutex<Vec<(ContentId, Vec<u8>)>>>);
///
/// struct Blob(Arc<Mutex<Vec<(ContentId, Vec<u8>)>>>, Vec<u8>);
///
/// impl SpillSink for Blobs {
///     fn name(&self) -> String {
///         "blobs".into()
///     }
///     fn begin(&self) -> Result<Box<dyn SpillWriter>, StoreError> {
///         Ok(Box::new(Blob(self.0.clone(), Vec::new())))
///     }
///     fn max_location_len(&self) -> usize {
///         "blobs/".len() + 71
///     }
/// }
///
/// impl SpillWriter for Blob {
///     fn write(&mut self, data: &[u8]) -> std::io::Result<()> {
///         self.1.extend_from_slice(data);
///         Ok(())
///     }
///     fn publish(self: Box<Self>, id: &ContentId) -> Result<String, StoreError> {
///         self.0.lock().unwrap().push((*id, self.1));
///         Ok(format!("blobs/{id}"))
///     }
/// }
///
/// let blobs = Blobs::default();
/// let kept = blobs.0.clone();
/// let store = Store::from_sink(blobs);
/// let spiller = Spiller::new(Policy::builder().max_inline_bytes(1024).build()?, store)?;
/// let input: String = (1..=1000).map(|i| format!("line {i}\n")).collect();
/// let outcome = spiller.apply(input.as_bytes())?;
/// assert!(outcome.spilled);
/// let spill = outcome.spill.unwrap();
/// assert_eq!(spill.path.to_str(), Some(format!("blobs/{}", spill.id).as_str()));
/// assert_eq!(kept.lock().unwrap()[0].1, input.as_bytes());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait SpillSink: Send + Sync + fmt::Debug {
    /// What the sink is called where a store's location is printed.
    fn name(&self) -> String;

    /// Begins an object.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when no object can be begun; the stage then still
    /// gives a bounded preview whose notice says the output was not saved.
    fn begin(&self) -> Result<Box<dyn SpillWriter>, StoreError>;

    /// The length in bytes of the longest location
    /// [`SpillWriter::publish`] returns: notices reserve room for it
    /// before the cut, so it must not be exceeded.
    fn max_location_len(&self) -> usize;
}

/// One object being written into a [`SpillSink`].
pub trait SpillWriter: Send {
    /// Takes the object's next bytes.
    ///
    /// # Errors
    ///
    /// An I/O error; the object is then abandoned (dropped unpublished).
    fn write(&mut self, data: &[u8]) -> io::Result<()>;

    /// Publishes the object under `id`, the BLAKE3 hash of all its bytes,
    /// and says where it is now, as a notice prints it (at most
    /// [`SpillSink::max_location_len`] bytes).
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when it cannot be published.
    fn publish(self: Box<Self>, id: &ContentId) -> Result<String, StoreError>;
}

/// A store over a harness's sink: writes only.
pub(crate) struct SpillSinkBackend {
    sink: Box<dyn SpillSink>,
    location: Location,
}

impl fmt::Debug for SpillSinkBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpillSinkBackend")
            .field("sink", &self.sink)
            .finish()
    }
}

impl SpillSinkBackend {
    pub(crate) fn new(sink: Box<dyn SpillSink>) -> SpillSinkBackend {
        SpillSinkBackend {
            location: Location::Sink(sink.name()),
            sink,
        }
    }

    fn unreadable(&self) -> StoreError {
        StoreError::Remote {
            op: "read",
            target: self.location.to_string(),
            kind: StoreErrorKind::Config,
            source: "this store is a harness's own sink: spillway writes to it and does not read it back"
                .into(),
        }
    }
}

/// An object being written into a sink, as the store's writer drives it.
pub(crate) struct SinkOut {
    writer: Option<Box<dyn SpillWriter>>,
    pub(crate) label: PathBuf,
    /// The longest location the sink said it returns.
    max_location_len: usize,
}

impl SinkOut {
    pub(crate) fn publish(mut self, id: ContentId, bytes: u64) -> Result<StoredObject, StoreError> {
        let writer = self.writer.take().ok_or_else(|| StoreError::Io {
            op: "publish",
            path: self.label.clone(),
            source: io::Error::other("an earlier write to this object failed"),
        })?;
        let location = writer.publish(&id)?;
        // A longer location would outgrow the room the notice reserved.
        if location.len() > self.max_location_len {
            return Err(StoreError::Remote {
                op: "publish",
                target: self.label.display().to_string(),
                kind: StoreErrorKind::Config,
                source: format!(
                    "the sink named a location of {} bytes, longer than the {} its max_location_len promised",
                    location.len(),
                    self.max_location_len
                )
                .into(),
            });
        }
        Ok(StoredObject {
            id,
            path: PathBuf::from(location),
            bytes,
            stored_bytes: bytes,
            encoding: Encoding::Raw,
            truncated: false,
            dedup: false,
            modified: None,
        })
    }
}

impl super::write::ObjectOut for SinkOut {
    fn label(&self) -> PathBuf {
        self.label.clone()
    }

    fn commit(self: Box<Self>, c: super::write::Commit) -> Result<StoredObject, StoreError> {
        self.publish(c.id, c.bytes)
    }
}

impl io::Write for SinkOut {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.writer {
            Some(w) => match w.write(buf) {
                Ok(()) => Ok(buf.len()),
                Err(e) => {
                    // Abandoned: dropped unpublished.
                    self.writer = None;
                    Err(e)
                }
            },
            None => Err(io::Error::other("an earlier write to this object failed")),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Backend for SpillSinkBackend {
    fn location(&self) -> &Location {
        &self.location
    }

    fn object_location(&self, _id: &ContentId, _encoding: Encoding) -> PathBuf {
        PathBuf::from("x".repeat(self.sink.max_location_len()))
    }

    fn verified_hit(
        &self,
        _id: &ContentId,
        _bytes: u64,
    ) -> Result<Option<StoredObject>, StoreError> {
        // Deduplication, if any, is the sink's.
        Ok(None)
    }

    fn dedup_hit_content(
        &self,
        _id: &ContentId,
        _content: &[u8],
    ) -> Result<Option<StoredObject>, StoreError> {
        Ok(None)
    }

    fn writer(&self, opts: WriteOptions) -> Result<ObjectWriter, StoreError> {
        let writer = self.sink.begin()?;
        let out = SinkOut {
            writer: Some(writer),
            label: PathBuf::from(self.location.to_string()),
            max_location_len: self.sink.max_location_len(),
        };
        // The sink gets the bytes as they are; compressing them is its
        // business.
        Ok(ObjectWriter::new(
            Box::new(out),
            WriteOptions::raw().durability(opts.durability_mode()),
        ))
    }

    #[cfg(feature = "test-seams")]
    fn with_fs(
        &self,
        _: &dyn Fn(
            std::sync::Arc<dyn crate::store::fs::Fs>,
        ) -> std::sync::Arc<dyn crate::store::fs::Fs>,
    ) -> Option<std::sync::Arc<dyn Backend>> {
        None
    }

    #[cfg(feature = "test-seams")]
    fn damage(&self, _: &ContentId, _: Encoding, _: &[u8]) -> bool {
        false
    }

    fn reads(&self) -> Result<&dyn Reads, StoreError> {
        Err(self.unreadable())
    }

    fn maintenance(&self) -> Result<&dyn Maintain, StoreError> {
        Err(self.unreadable())
    }
}
