//! The in-memory backend ([`Store::in_memory`](super::Store::in_memory)):
//! objects in a map, in the same encodings and verified by the same checks
//! as on disk, for tests of a harness and of the store itself. Nothing
//! survives the store's last handle.

use std::collections::BTreeMap;
use std::io::{self, Cursor};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use super::format::{first_good, one_match, parse_trailer, scan_stored, TRAILER_LEN};
use super::maintain::choose_and_remove;
use super::write::{Commit, ObjectOut};
use super::{
    Backend, ContentId, CorruptObject, Encoding, GcOptions, GcReport, IdPrefix, Location, Maintain,
    ObjectWriter, Reads, Stats, StoreError, StoredObject, VerifyReport, WriteOptions,
};

/// One stored object: its bytes as stored (raw, or zstd with its trailer)
/// and when it was last written or reused.
#[derive(Clone, Debug)]
struct Object {
    stored: Arc<Vec<u8>>,
    modified: SystemTime,
}

#[derive(Debug, Default)]
struct Objects {
    live: BTreeMap<(ContentId, Encoding), Object>,
    quarantined: usize,
}

/// The map, shared by the store's handles and its writers.
#[derive(Clone, Debug, Default)]
pub(crate) struct Memory(Arc<Mutex<Objects>>);

impl Memory {
    fn lock(&self) -> MutexGuard<'_, Objects> {
        // A writer that panicked left nothing half-done in the map.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn name(id: &ContentId, encoding: Encoding) -> PathBuf {
        PathBuf::from(format!("memory:{id}{}", encoding.suffix()))
    }

    fn get(&self, id: &ContentId, encoding: Encoding) -> Option<Object> {
        self.lock().live.get(&(*id, encoding)).cloned()
    }

    fn scan(
        &self,
        id: &ContentId,
        encoding: Encoding,
        obj: &Object,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<StoredObject, StoreError> {
        scan_stored(
            Cursor::new(obj.stored.as_slice()),
            obj.stored.len() as u64,
            Some(obj.modified),
            id,
            &Self::name(id, encoding),
            encoding,
            f,
        )
    }

    /// Removes a corrupt copy so that reads find a good one.
    fn quarantine(&self, id: &ContentId, encoding: Encoding) {
        let mut objects = self.lock();
        if objects.live.remove(&(*id, encoding)).is_some() {
            objects.quarantined += 1;
        }
    }

    /// Publishes what a writer stored, unless a sound copy is there already.
    pub(crate) fn publish(
        &self,
        id: ContentId,
        encoding: Encoding,
        stored: Vec<u8>,
        bytes: u64,
    ) -> Result<StoredObject, StoreError> {
        if let Some(hit) = self.verified_hit(&id, bytes)? {
            return Ok(hit);
        }
        let stored_bytes = stored.len() as u64;
        self.lock().live.insert(
            (id, encoding),
            Object {
                stored: Arc::new(stored),
                modified: SystemTime::now(),
            },
        );
        Ok(StoredObject {
            id,
            path: Self::name(&id, encoding),
            bytes,
            stored_bytes,
            encoding,
            truncated: false,
            dedup: false,
            modified: None,
        })
    }

    /// Replaces an object's stored bytes (tests of corruption).
    #[cfg(feature = "test-seams")]
    pub(crate) fn damage(&self, id: &ContentId, encoding: Encoding, bytes: &[u8]) -> bool {
        match self.lock().live.get_mut(&(*id, encoding)) {
            Some(obj) => {
                obj.stored = Arc::new(bytes.to_vec());
                true
            }
            None => false,
        }
    }
}

/// A memory store's location.
static MEMORY: Location = Location::Memory;

/// Where a writer's bytes collect until they are published.
pub(crate) struct MemoryOut {
    pub(crate) memory: Memory,
    pub(crate) buf: Vec<u8>,
}

impl ObjectOut for MemoryOut {
    fn label(&self) -> PathBuf {
        PathBuf::from("memory:")
    }

    fn commit(self: Box<Self>, c: Commit) -> Result<StoredObject, StoreError> {
        let MemoryOut { memory, buf } = *self;
        memory.publish(c.id, c.encoding, buf, c.bytes)
    }
}

impl io::Write for MemoryOut {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Backend for Memory {
    fn location(&self) -> &Location {
        &MEMORY
    }

    fn object_location(&self, id: &ContentId, encoding: Encoding) -> PathBuf {
        Self::name(id, encoding)
    }

    fn dedup_hit_content(
        &self,
        id: &ContentId,
        content: &[u8],
    ) -> Result<Option<StoredObject>, StoreError> {
        // `verified_hit` scans every copy against its id.
        self.verified_hit(id, content.len() as u64)
    }

    fn verified_hit(
        &self,
        id: &ContentId,
        _bytes: u64,
    ) -> Result<Option<StoredObject>, StoreError> {
        for encoding in Encoding::ALL {
            let Some(obj) = self.get(id, encoding) else {
                continue;
            };
            match self.scan(id, encoding, &obj, &mut |_| {}) {
                Ok(info) => {
                    if let Some(o) = self.lock().live.get_mut(&(*id, encoding)) {
                        o.modified = SystemTime::now();
                    }
                    return Ok(Some(StoredObject {
                        dedup: true,
                        modified: None,
                        ..info
                    }));
                }
                Err(StoreError::Corrupt { .. }) => self.quarantine(id, encoding),
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    fn writer(&self, opts: WriteOptions) -> Result<ObjectWriter, StoreError> {
        let out = MemoryOut {
            memory: self.clone(),
            buf: Vec::new(),
        };
        Ok(ObjectWriter::new(Box::new(out), opts))
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
    fn damage(&self, id: &ContentId, encoding: Encoding, bytes: &[u8]) -> bool {
        Memory::damage(self, id, encoding, bytes)
    }

    fn reads(&self) -> Result<&dyn Reads, StoreError> {
        Ok(self)
    }

    fn maintenance(&self) -> Result<&dyn Maintain, StoreError> {
        Ok(self)
    }
}

impl Reads for Memory {
    fn locate(&self, id: &ContentId) -> Result<(PathBuf, Encoding), StoreError> {
        let objects = self.lock();
        Encoding::ALL
            .into_iter()
            .find(|e| objects.live.contains_key(&(*id, *e)))
            .map(|e| (Self::name(id, e), e))
            .ok_or_else(|| StoreError::NotFound { id: id.to_string() })
    }

    fn resolve_prefix(&self, prefix: &IdPrefix) -> Result<ContentId, StoreError> {
        let ids: Vec<ContentId> = self.lock().live.keys().map(|(id, _)| *id).collect();
        one_match(prefix, ids.into_iter())
    }

    fn scan_good(
        &self,
        id: &ContentId,
        f: &mut dyn FnMut(Option<&[u8]>),
    ) -> Result<StoredObject, StoreError> {
        first_good(id, f, &mut |encoding, each| match self.get(id, encoding) {
            Some(obj) => match self.scan(id, encoding, &obj, each) {
                // Found damaged by a read: set aside at once.
                Err(e @ StoreError::Corrupt { .. }) => {
                    self.quarantine(id, encoding);
                    Err(e)
                }
                r => r.map(Some),
            },
            None => Ok(None),
        })
    }

    fn rescan(
        &self,
        id: &ContentId,
        found: &StoredObject,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<StoredObject, StoreError> {
        let obj = self
            .get(id, found.encoding)
            .ok_or_else(|| StoreError::NotFound { id: id.to_string() })?;
        self.scan(id, found.encoding, &obj, f)
    }

    fn list(&self) -> Result<Vec<StoredObject>, StoreError> {
        let objects = self.lock();
        Ok(objects
            .live
            .iter()
            .map(|(&(id, encoding), obj)| {
                let stored_bytes = obj.stored.len() as u64;
                let bytes = match encoding {
                    Encoding::Raw => stored_bytes,
                    Encoding::Zstd => obj
                        .stored
                        .len()
                        .checked_sub(TRAILER_LEN)
                        .and_then(|at| parse_trailer(&obj.stored[at..]))
                        .unwrap_or(0),
                };
                StoredObject {
                    id,
                    path: Self::name(&id, encoding),
                    bytes,
                    stored_bytes,
                    encoding,
                    truncated: false,
                    dedup: false,
                    modified: Some(obj.modified),
                }
            })
            .collect())
    }
}

impl Maintain for Memory {
    fn clean_temp(&self, _grace: Duration) -> Result<usize, StoreError> {
        Ok(0)
    }

    fn verify_all(
        &self,
        _temp_grace: Duration,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<VerifyReport, StoreError> {
        let objects = self.list()?;
        let mut report = VerifyReport::default();
        for (i, o) in objects.iter().enumerate() {
            if let Some(obj) = self.get(&o.id, o.encoding) {
                match self.scan(&o.id, o.encoding, &obj, &mut |_| {}) {
                    Ok(info) => {
                        report.ok += 1;
                        report.ok_bytes += info.bytes;
                    }
                    Err(e) => {
                        self.quarantine(&o.id, o.encoding);
                        report.corrupt.push(CorruptObject {
                            id: o.id,
                            reason: e.to_string(),
                            quarantined: Some(PathBuf::from("memory:quarantine")),
                        });
                    }
                }
            }
            progress(i + 1, objects.len());
        }
        Ok(report)
    }

    fn gc(
        &self,
        opts: &GcOptions,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<GcReport, StoreError> {
        let started = SystemTime::now();
        choose_and_remove(self.list()?, started, opts, progress, &mut |obj, report| {
            let mut objects = self.lock();
            let key = (obj.id, obj.encoding);
            match objects.live.get(&key) {
                // Reused since gc started: kept.
                Some(o) if o.modified >= started => {
                    report.restored += 1;
                    Ok(false)
                }
                Some(_) => {
                    objects.live.remove(&key);
                    Ok(true)
                }
                None => Ok(false),
            }
        })
    }

    fn stats(&self) -> Result<Stats, StoreError> {
        let quarantined = self.lock().quarantined;
        Ok(Stats::of(&self.list()?, 0, quarantined))
    }
}
