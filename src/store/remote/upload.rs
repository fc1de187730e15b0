//! Streaming one object to S3: held in memory up to a part, else a
//! multipart upload to a temporary key; then published create-only.

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path as Key;
use object_store::{MultipartUpload, ObjectStoreExt, PutPayload};

use super::Remote;
use crate::store::{ContentId, Encoding, StoreError, StoredObject};

/// The size of one uploaded part, and the most stored bytes an object may
/// have to be sent in a single `PUT`: 8 MiB.
pub(crate) const PART: usize = 8 << 20;

/// Parts uploading at once. With the part being filled, memory is bounded
/// by `(IN_FLIGHT + 1) × PART`.
const IN_FLIGHT: usize = 4;

/// How often publishing is tried when a concurrent gc removes the object
/// between "it exists" and "it is still there".
const PUBLISH_TRIES: usize = 8;

struct Multipart {
    upload: Box<dyn MultipartUpload>,
    parts: VecDeque<tokio::task::JoinHandle<object_store::Result<()>>>,
}

/// The stored bytes of one object on their way to S3. Dropped unfinished,
/// it aborts its multipart upload (or removes its completed temporary key).
pub(crate) struct Upload {
    remote: Arc<Remote>,
    buf: Vec<u8>,
    written: u64,
    temp: Key,
    multipart: Option<Multipart>,
    /// The temporary key holds a completed object that must be removed.
    temp_exists: bool,
    /// The whole object is held and sent to its key at the end, however
    /// large.
    single: bool,
}

impl Upload {
    pub(crate) fn new(remote: Arc<Remote>) -> Upload {
        let temp = remote.temp_key();
        Upload {
            remote,
            buf: Vec::new(),
            written: 0,
            temp,
            multipart: None,
            temp_exists: false,
            single: false,
        }
    }

    /// An upload of a whole content the caller holds: kept in memory and
    /// sent to its object key, never to a temporary key: one create-only
    /// `PUT` up to 32 MiB, else a multipart upload at the key, parts in
    /// parallel, completed create-only (see [`super::direct`]).
    pub(crate) fn whole(remote: Arc<Remote>) -> Upload {
        let mut u = Upload::new(remote);
        u.single = true;
        u
    }

    /// The temporary key, as errors name it.
    pub(crate) fn label(&self) -> std::path::PathBuf {
        self.remote.url_of(&self.temp)
    }

    fn io_err(&self, op: &'static str, e: object_store::Error) -> io::Error {
        io::Error::other(self.remote.err(op, &self.temp, e))
    }

    /// Sends `part`, starting the multipart upload first if needed, and
    /// waits for the oldest part while too many are in flight.
    fn send(&mut self, part: Vec<u8>) -> io::Result<()> {
        if self.multipart.is_none() {
            let upload = self
                .remote
                .block_on(self.remote.client.put_multipart(&self.temp))
                .map_err(|e| self.io_err("start upload", e))?;
            self.multipart = Some(Multipart {
                upload,
                parts: VecDeque::new(),
            });
        }
        let Some(m) = self.multipart.as_mut() else {
            return Ok(());
        };
        let fut = m.upload.put_part(PutPayload::from(part));
        m.parts.push_back(self.remote.rt().spawn(fut));
        while self
            .multipart
            .as_ref()
            .is_some_and(|m| m.parts.len() > IN_FLIGHT)
        {
            self.wait_oldest()?;
        }
        Ok(())
    }

    fn wait_oldest(&mut self) -> io::Result<()> {
        let Some(handle) = self.multipart.as_mut().and_then(|m| m.parts.pop_front()) else {
            return Ok(());
        };
        match self.remote.block_on(handle) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(self.io_err("upload part", e)),
            Err(e) => Err(io::Error::other(format!("upload part: {e}"))),
        }
    }

    /// Publishes the object as `id`: create-only, "already exists" being a
    /// dedup hit.
    pub(crate) fn publish(
        mut self,
        id: ContentId,
        encoding: Encoding,
        bytes: u64,
    ) -> Result<StoredObject, StoreError> {
        let remote = Arc::clone(&self.remote);
        let dest = remote.object_key(&id, encoding);
        let fresh = StoredObject {
            id,
            path: remote.url_of(&dest),
            bytes,
            stored_bytes: self.written,
            encoding,
            truncated: false,
            dedup: false,
            modified: None,
        };
        if self.multipart.is_none() {
            if let Some(hit) = remote.verified_hit(&id, encoding, bytes)? {
                return Ok(hit);
            }
            let payload = Bytes::from(std::mem::take(&mut self.buf));
            for _ in 0..PUBLISH_TRIES {
                // A streamed object here is one part at most: one `PUT`.
                if remote.create_whole(&dest, payload.clone())? {
                    return Ok(fresh);
                }
                if let Some(hit) = remote.verified_hit(&id, encoding, bytes)? {
                    return Ok(hit);
                }
            }
            return Err(contended(&remote, &dest));
        }
        // The last part, then every part, then the whole.
        let last = std::mem::take(&mut self.buf);
        let label = self.label();
        let io_err = |e: io::Error| StoreError::Io {
            op: "upload",
            path: label.clone(),
            source: e,
        };
        if !last.is_empty() {
            self.send(last).map_err(io_err)?;
        }
        while self.multipart.as_ref().is_some_and(|m| !m.parts.is_empty()) {
            self.wait_oldest().map_err(io_err)?;
        }
        if let Some(mut m) = self.multipart.take() {
            match remote.block_on(m.upload.complete()) {
                Ok(_) => self.temp_exists = true,
                Err(e) => {
                    let _ = remote.block_on(m.upload.abort());
                    return Err(remote.err("complete upload", &self.temp, e));
                }
            }
        }
        let result = (|| {
            if let Some(hit) = remote.verified_hit(&id, encoding, bytes)? {
                return Ok(hit);
            }
            for _ in 0..PUBLISH_TRIES {
                if remote.copy_create(&self.temp, &dest)? {
                    return Ok(fresh.clone());
                }
                if let Some(hit) = remote.verified_hit(&id, encoding, bytes)? {
                    return Ok(hit);
                }
            }
            Err(contended(&remote, &dest))
        })();
        if remote.delete(&self.temp).is_ok() {
            self.temp_exists = false;
        }
        result
    }
}

impl Remote {
    /// A dedup hit the writer may report as stored: an object of this id
    /// that reads back as its id says (it is fetched into the cache, which
    /// the next read then finds). A damaged object is quarantined, so the
    /// writer publishes its own good bytes in its place; so is an object at
    /// the writer's key that is not even the right size.
    fn verified_hit(
        &self,
        id: &ContentId,
        encoding: Encoding,
        bytes: u64,
    ) -> Result<Option<StoredObject>, StoreError> {
        let Some(hit) = self.dedup_hit(id, Some(bytes))? else {
            // Only an object of the wrong size is set aside: one that is
            // simply there now was published meanwhile by another writer,
            // and the next attempt finds it.
            let wrong = self
                .head(&self.object_key(id, encoding))?
                .is_some_and(|m| !super::could_hold(encoding, m.size, Some(bytes)));
            if wrong {
                self.set_aside(id, encoding)?;
            }
            return Ok(None);
        };
        match self.fetch(id) {
            Ok(()) => Ok(Some(hit)),
            Err(StoreError::Corrupt { .. }) => {
                for e in Encoding::ALL {
                    if self.head(&self.object_key(id, e))?.is_some() {
                        self.set_aside(id, e)?;
                    }
                }
                Ok(None)
            }
            // Removed meanwhile (a gc): publish it again.
            Err(StoreError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// [`verified_hit`](Self::verified_hit) for a whole content of `bytes`
    /// bytes, whatever encoding it would be written in: an object under
    /// any encoding's key that cannot hold it is set aside first.
    pub(crate) fn verified_whole_hit(
        &self,
        id: &ContentId,
        bytes: u64,
    ) -> Result<Option<StoredObject>, StoreError> {
        for encoding in Encoding::ALL {
            let wrong = self
                .head(&self.object_key(id, encoding))?
                .is_some_and(|m| !super::could_hold(encoding, m.size, Some(bytes)));
            if wrong {
                self.set_aside(id, encoding)?;
            }
        }
        self.verified_hit(id, Encoding::Raw, bytes)
    }

    /// Quarantines a damaged object; another writer that did so first is
    /// no error.
    fn set_aside(&self, id: &ContentId, encoding: Encoding) -> Result<(), StoreError> {
        match self.quarantine(id, encoding) {
            Ok(_) => Ok(()),
            Err(_) if self.head(&self.object_key(id, encoding))?.is_none() => Ok(()),
            Err(e) => Err(e),
        }
    }
}

fn contended(remote: &Remote, dest: &Key) -> StoreError {
    StoreError::Io {
        op: "publish",
        path: remote.url_of(dest),
        source: io::Error::other(
            "the object kept disappearing while it was published (a concurrent gc)",
        ),
    }
}

impl crate::store::write::ObjectOut for Upload {
    fn label(&self) -> std::path::PathBuf {
        Upload::label(self)
    }

    fn commit(self: Box<Self>, c: crate::store::write::Commit) -> Result<StoredObject, StoreError> {
        self.publish(c.id, c.encoding, c.bytes)
    }
}

impl io::Write for Upload {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.buf.capacity() == 0 {
            self.buf.reserve(data.len().max(256 << 10));
        }
        self.buf.extend_from_slice(data);
        self.written += data.len() as u64;
        if self.buf.len() >= PART && !self.single {
            let rest = self.buf.split_off(PART);
            let mut next = Vec::with_capacity(PART.max(rest.len()));
            next.extend_from_slice(&rest);
            let part = std::mem::replace(&mut self.buf, next);
            self.send(part)?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        if let Some(mut m) = self.multipart.take() {
            for p in m.parts.drain(..) {
                p.abort();
            }
            let _ = self.remote.block_on(m.upload.abort());
        }
        if self.temp_exists {
            let _ = self.remote.delete(&self.temp);
        }
    }
}
