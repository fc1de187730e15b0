//! Reading through the verified cache, listing, verify, gc and stats on S3.

use std::collections::HashMap;
use std::fs;
use std::io::{self, Seek};
use std::time::{Duration, SystemTime};

use futures_util::StreamExt;
use object_store::path::Path as Key;
use object_store::{ObjectStoreExt, PutPayload};

use super::Remote;
use crate::store::format::one_match;
use crate::store::fs::link_no_clobber;
use crate::store::maintain::{
    choose_and_remove, CorruptObject, GcOptions, GcReport, References, Stats, VerifyReport,
};
use crate::store::{
    ContentId, Encoding, IdPrefix, Local, StoreError, StoredObject, DEFAULT_TEMP_GRACE, ZSTD_SUFFIX,
};

/// How many trailers a listing reads at once.
const TRAILERS_AT_ONCE: usize = 32;

impl Remote {
    /// Runs `f` on the local cache once it holds a verified copy of `id`,
    /// fetching it first when it does not. A cached copy that fails its
    /// check (or vanished from the cache meanwhile) is fetched again, once.
    pub(crate) fn with_cache<T>(
        &self,
        id: &ContentId,
        f: &mut dyn FnMut(&Local) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        match self.cache.locate(id) {
            Ok((path, _)) => {
                // Recently read: the cache's gc removes least recently used first.
                if let Ok(file) = fs::OpenOptions::new().append(true).open(&path) {
                    let _ = file.set_modified(SystemTime::now());
                }
            }
            Err(_) => self.fetch(id)?,
        }
        match f(&self.cache) {
            Err(StoreError::Corrupt { .. } | StoreError::NotFound { .. }) => {
                self.evict(id);
                self.fetch(id)?;
                f(&self.cache)
            }
            r => r,
        }
    }

    /// [`Store::scan_good`] for an S3 store: through the cache, reporting
    /// the object's URL.
    pub(crate) fn scan_good(
        &self,
        id: &ContentId,
        f: &mut dyn FnMut(Option<&[u8]>),
    ) -> Result<StoredObject, StoreError> {
        let found = self.with_cache(id, &mut |cache| {
            let r = cache.scan_good(id, f);
            if r.is_err() {
                f(None);
            }
            r
        });
        let mut info = match found {
            Err(e @ StoreError::Corrupt { .. }) => {
                // A read found every copy damaged (a good one would have
                // been read): they are set aside at once, not left to be
                // served or to block the content's next write.
                for encoding in Encoding::ALL {
                    if self.head(&self.object_key(id, encoding))?.is_some() {
                        let _ = self.quarantine(id, encoding);
                    }
                }
                return Err(e);
            }
            other => other?,
        };
        info.path = self.url_of(&self.object_key(id, info.encoding));
        Ok(info)
    }

    fn evict(&self, id: &ContentId) {
        for encoding in Encoding::ALL {
            let _ = self
                .cache
                .fs()
                .remove_file(&self.cache.object_path(id, encoding));
        }
    }

    /// Downloads `id` into a temp file of the cache and checks it: the
    /// file, its encoding and what the download found.
    fn download(
        &self,
        id: &ContentId,
        encoding: Encoding,
    ) -> Result<Option<(std::path::PathBuf, StoredObject)>, StoreError> {
        let key = self.object_key(id, encoding);
        let got = match self.block_on(self.client.get(&key)) {
            Ok(g) => g,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(self.err("read", &key, e)),
        };
        let (tmp, mut file) = self.cache.create_temp()?;
        let remove = |e: StoreError| {
            let _ = self.cache.fs().remove_file(&tmp);
            e
        };
        let copied: Result<(), StoreError> = self.block_on(async {
            let mut stream = got.into_stream();
            let mut at = 0u64;
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(|e| self.err("read", &key, e))?;
                self.cache
                    .fs()
                    .write_all(&mut file, &tmp, at, &chunk)
                    .map_err(StoreError::io("write", &tmp))?;
                at += chunk.len() as u64;
            }
            Ok(())
        });
        copied.map_err(remove)?;
        file.rewind()
            .map_err(StoreError::io("read", &tmp))
            .map_err(remove)?;
        let info = self
            .cache
            .scan_file(file, id, &self.url_of(&key), encoding, &mut |_| {})
            .map_err(remove)?;
        Ok(Some((tmp, info)))
    }

    /// Puts a verified copy of `id` into the cache, then trims the cache
    /// to its bound.
    pub(crate) fn fetch(&self, id: &ContentId) -> Result<(), StoreError> {
        let mut first_error = None;
        for encoding in Encoding::ALL {
            let (tmp, _) = match self.download(id, encoding) {
                Ok(Some(got)) => got,
                Ok(None) => continue,
                Err(e @ StoreError::Corrupt { .. }) => {
                    first_error.get_or_insert(e);
                    continue;
                }
                Err(e) => return Err(e),
            };
            let dest = self.cache.object_path(id, encoding);
            let published = (|| {
                if let Some(shard) = dest.parent() {
                    self.cache.ensure_base()?;
                    self.cache.ensure_dir(shard)?;
                }
                match link_no_clobber(self.cache.fs(), &tmp, &dest) {
                    Ok(()) => Ok(()),
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
                    Err(e) => Err(StoreError::io("cache", &dest)(e)),
                }
            })();
            let _ = self.cache.fs().remove_file(&tmp);
            published?;
            self.trim_cache(id);
            return Ok(());
        }
        Err(first_error
            .or_else(|| self.missing_bucket("read"))
            .unwrap_or_else(|| StoreError::NotFound { id: id.to_string() }))
    }

    /// Keeps the cache within its bound, least recently used first, never
    /// removing `keep`.
    fn trim_cache(&self, keep: &ContentId) {
        let mut refs = References::default();
        refs.insert(*keep);
        let opts = GcOptions {
            max_bytes: Some(self.cache_bytes),
            keep: refs,
            temp_grace: DEFAULT_TEMP_GRACE,
            ..GcOptions::default()
        };
        let _ = self.cache.gc(&opts, &mut |_, _| {});
    }

    /// The one object whose id starts with `prefix`.
    /// (A whole id is looked up by [`Store::resolve`] itself.)
    pub(crate) fn resolve(&self, prefix: &IdPrefix) -> Result<ContentId, StoreError> {
        let hex = prefix.hex();
        let listed = self.list(&format!("objects/{}/", &hex[..2]))?;
        one_match(
            prefix,
            listed
                .iter()
                .filter_map(|m| parse_object_key(&m.location).map(|(id, _)| id)),
        )
    }

    /// Every object, with when it was last written (server time). A zstd
    /// object's size comes from its trailer (a ranged read of 24 bytes).
    pub(crate) fn list_objects(&self) -> Result<Vec<(StoredObject, SystemTime)>, StoreError> {
        let mut out = Vec::new();
        for meta in self.list("objects/")? {
            let Some((id, encoding)) = parse_object_key(&meta.location) else {
                continue;
            };
            let modified = SystemTime::from(meta.last_modified);
            out.push((
                StoredObject {
                    id,
                    path: self.url_of(&meta.location),
                    bytes: meta.size,
                    stored_bytes: meta.size,
                    encoding,
                    truncated: false,
                    dedup: false,
                    modified: Some(modified),
                },
                modified,
            ));
        }
        let zstd: Vec<usize> = (0..out.len())
            .filter(|&i| out[i].0.encoding == Encoding::Zstd)
            .collect();
        for batch in zstd.chunks(TRAILERS_AT_ONCE) {
            let handles: Vec<_> = batch
                .iter()
                .map(|&i| {
                    let client = self.client.clone();
                    let key = self.object_key(&out[i].0.id, Encoding::Zstd);
                    let size = out[i].0.stored_bytes;
                    self.rt().spawn(async move {
                        let len = super::super::format::TRAILER_LEN as u64;
                        if size < len {
                            return None;
                        }
                        let t = client.get_range(&key, size - len..size).await.ok()?;
                        super::super::format::parse_trailer(&t)
                    })
                })
                .collect();
            for (&i, h) in batch.iter().zip(handles) {
                out[i].0.bytes = self.block_on(h).ok().flatten().unwrap_or(0);
            }
        }
        out.sort_by(|a, b| a.0.id.cmp(&b.0.id).then(a.0.path.cmp(&b.0.path)));
        Ok(out)
    }

    /// Removes temporary keys (uploads of dead writers, objects a dead gc
    /// set aside) older than `grace`, by the time in their names.
    pub(crate) fn clean_temp(&self, grace: Duration) -> Result<usize, StoreError> {
        let now = super::super::now_nanos();
        let mut removed = 0;
        for meta in self.list("tmp/")? {
            let name = meta.location.filename().unwrap_or("");
            let old = match super::temp_stamp(name) {
                Some(t) => now.saturating_sub(t) > grace.as_nanos(),
                None => SystemTime::now()
                    .duration_since(SystemTime::from(meta.last_modified))
                    .is_ok_and(|age| age > grace),
            };
            if old && self.delete(&meta.location).is_ok() {
                removed += 1;
            }
        }
        Ok(removed + self.abort_stale_uploads(grace)?)
    }

    /// Downloads and checks every object; moves corrupt ones under
    /// `quarantine/`; removes stale temporary keys.
    pub(crate) fn verify_all(
        &self,
        temp_grace: Duration,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<VerifyReport, StoreError> {
        let objects = self.list_objects()?;
        let mut report = VerifyReport::default();
        for (i, (obj, _)) in objects.iter().enumerate() {
            match self.download(&obj.id, obj.encoding) {
                Ok(Some((tmp, info))) => {
                    let _ = self.cache.fs().remove_file(&tmp);
                    report.ok += 1;
                    report.ok_bytes += info.bytes;
                }
                // Removed meanwhile (a gc): nothing to check.
                Ok(None) => {}
                Err(e @ StoreError::Corrupt { .. }) => {
                    self.evict(&obj.id);
                    let quarantined = self.quarantine(&obj.id, obj.encoding).ok();
                    report.corrupt.push(CorruptObject {
                        id: obj.id,
                        reason: e.to_string(),
                        quarantined,
                    });
                }
                Err(e) => return Err(e),
            }
            progress(i + 1, objects.len());
        }
        report.temp_removed = self.clean_temp(temp_grace)?;
        Ok(report)
    }

    /// Moves an object under `quarantine/`: copied, then removed.
    pub(crate) fn quarantine(
        &self,
        id: &ContentId,
        encoding: Encoding,
    ) -> Result<std::path::PathBuf, StoreError> {
        let from = self.object_key(id, encoding);
        let to = self.key(&format!(
            "quarantine/{}{}.{}",
            id.to_hex(),
            encoding.suffix(),
            super::super::now_nanos()
        ));
        self.block_on(self.client.copy(&from, &to))
            .map_err(|e| self.err("quarantine", &from, e))?;
        self.delete(&from)?;
        Ok(self.url_of(&to))
    }

    /// The server's clock now, read from a key written for the purpose:
    /// gc compares it with the server's times, never with this machine's.
    fn server_now(&self) -> Result<SystemTime, StoreError> {
        let key = self.key(&format!(
            "tmp/clock-{}-{}",
            super::super::now_nanos(),
            std::process::id()
        ));
        self.block_on(self.client.put(&key, PutPayload::new()))
            .map_err(|e| self.err("read the server's clock at", &key, e))?;
        let meta = self.head(&key)?;
        let _ = self.delete(&key);
        meta.map(|m| SystemTime::from(m.last_modified))
            .ok_or_else(|| StoreError::NotFound {
                id: key.to_string(),
            })
    }

    /// When each object was last used: the later of its own write and its
    /// `used/` mark.
    fn marks(&self) -> Result<HashMap<ContentId, SystemTime>, StoreError> {
        let mut out = HashMap::new();
        for meta in self.list("used/")? {
            let mut parts = meta.location.parts();
            let rest: Vec<String> = parts.by_ref().map(|p| p.as_ref().to_string()).collect();
            let n = rest.len();
            if n < 2 {
                continue;
            }
            if let Ok(id) = ContentId::from_hex(&format!("{}{}", rest[n - 2], rest[n - 1])) {
                out.insert(id, SystemTime::from(meta.last_modified));
            }
        }
        Ok(out)
    }

    /// gc on S3. As on disk, each victim is first set aside (copied under
    /// `tmp/`, then removed), and put back if a writer marked it used after
    /// gc started; a writer, for its part, marks an object before it looks
    /// at it again (see [`Remote::dedup_hit`]).
    pub(crate) fn gc(
        &self,
        opts: &GcOptions,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<GcReport, StoreError> {
        let started = self.server_now()?;
        // S3 keeps times to the second: anything marked in gc's first
        // second counts as used after it started.
        let started_floor = floor_second(started);
        let marks = self.marks()?;
        // Last used: the later of the object's own write and its mark.
        let objects = self
            .list_objects()?
            .into_iter()
            .map(|(mut o, written)| {
                let used = marks.get(&o.id).map_or(written, |&m| m.max(written));
                o.modified = Some(used);
                o
            })
            .collect();
        let mut report = choose_and_remove(objects, started, opts, progress, &mut |obj, r| {
            self.remove_unless_reused(obj, started_floor, r)
        })?;
        if !opts.dry_run {
            report.temp_removed = self.clean_temp(opts.temp_grace)?;
            // Marks of objects that are gone.
            let live: std::collections::HashSet<ContentId> = self
                .list("objects/")?
                .iter()
                .filter_map(|m| parse_object_key(&m.location).map(|(id, _)| id))
                .collect();
            for (id, &at) in &marks {
                if !live.contains(id) && at < started_floor {
                    let _ = self.delete(&self.used_key(id));
                }
            }
        }
        Ok(report)
    }

    fn remove_unless_reused(
        &self,
        obj: &StoredObject,
        started: SystemTime,
        report: &mut GcReport,
    ) -> Result<bool, StoreError> {
        let key = self.object_key(&obj.id, obj.encoding);
        let aside = self.key(&format!(
            "tmp/gc-{}-{}{}",
            super::super::now_nanos(),
            obj.id.to_hex(),
            obj.encoding.suffix()
        ));
        match self.block_on(self.client.copy(&key, &aside)) {
            Ok(()) => {}
            // Gone already (another gc).
            Err(object_store::Error::NotFound { .. }) => return Ok(false),
            Err(e) => return Err(self.err("set aside", &key, e)),
        }
        self.delete(&key)?;
        let reused = match self.head(&self.used_key(&obj.id))? {
            Some(m) => SystemTime::from(m.last_modified) >= started,
            None => false,
        };
        if reused {
            // Put it back, unless an equal object was published meanwhile.
            self.copy_create(&aside, &key)?;
            self.delete(&aside)?;
            report.restored += 1;
            return Ok(false);
        }
        self.delete(&aside)?;
        let _ = self.delete(&self.used_key(&obj.id));
        self.evict(&obj.id);
        Ok(true)
    }

    /// Totals over the bucket's objects.
    pub(crate) fn stats(&self) -> Result<Stats, StoreError> {
        let objects: Vec<StoredObject> = self.list_objects()?.into_iter().map(|(o, _)| o).collect();
        Ok(Stats::of(
            &objects,
            self.list("tmp/")?.len(),
            self.list("quarantine/")?.len(),
        ))
    }
}

fn floor_second(t: SystemTime) -> SystemTime {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => SystemTime::UNIX_EPOCH + Duration::from_secs(d.as_secs()),
        Err(_) => t,
    }
}

/// The id and encoding of `…/objects/<h0h1>/<rest>[.zst]`.
fn parse_object_key(key: &Key) -> Option<(ContentId, Encoding)> {
    let parts: Vec<String> = key.parts().map(|p| p.as_ref().to_string()).collect();
    let n = parts.len();
    if n < 3 || parts[n - 3] != "objects" || parts[n - 2].len() != 2 {
        return None;
    }
    let name = &parts[n - 1];
    let (rest, encoding) = match name.strip_suffix(ZSTD_SUFFIX) {
        Some(r) => (r, Encoding::Zstd),
        None => (name.as_str(), Encoding::Raw),
    };
    let id = ContentId::from_hex(&format!("{}{rest}", parts[n - 2])).ok()?;
    Some((id, encoding))
}
