//! Keeping a store healthy: verify, gc, stats, and cleaning up after
//! crashed writers.

use std::collections::HashSet;
use std::fs;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use serde::Serialize;

use super::{ContentId, Encoding, Store, StoreError, StoredObject};

/// How old an unlocked temp file must be before cleanup removes it. A temp
/// file is only unlocked once its writer has finished or died.
pub const DEFAULT_TEMP_GRACE: Duration = Duration::from_secs(15 * 60);

/// What [`Store::verify_all`] found.
#[derive(Clone, Debug, Default, Serialize)]
#[non_exhaustive]
pub struct VerifyReport {
    /// Objects that verified.
    pub ok: usize,
    /// Their uncompressed bytes.
    pub ok_bytes: u64,
    /// Corrupt objects: id, reason, and where they were moved.
    pub corrupt: Vec<CorruptObject>,
    /// Temp files of dead writers that were removed.
    pub temp_removed: usize,
    /// Things at object or shard names that are not what belongs there (a
    /// symbolic link, a directory, a FIFO): moved to the quarantine folder.
    pub not_regular: Vec<Misplaced>,
}

/// Something at an object or shard name that is not a regular file (or,
/// for a shard, a real directory), found by [`Store::verify_all`].
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct Misplaced {
    /// Where it was.
    pub path: PathBuf,
    /// What it is: `symbolic link`, `directory`, `file`, `other`.
    pub kind: &'static str,
    /// Where it was moved, unless moving failed.
    pub quarantined: Option<PathBuf>,
}

/// A corrupt object found by [`Store::verify_all`].
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct CorruptObject {
    /// Its id.
    pub id: ContentId,
    /// What is wrong.
    pub reason: String,
    /// Where it was moved, unless moving failed.
    pub quarantined: Option<PathBuf>,
}

/// What [`Store::gc`] should remove.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct GcOptions {
    /// Remove least-recently-used objects until the store holds at most this
    /// many bytes on disk.
    pub max_bytes: Option<u64>,
    /// Remove objects not used for longer than this.
    pub max_age: Option<Duration>,
    /// Never remove what these refer to.
    pub keep: References,
    /// Report what would be removed, remove nothing.
    pub dry_run: bool,
    /// How old an unlocked temp file must be to be removed.
    pub temp_grace: Duration,
}

/// What [`Store::gc`] did.
#[derive(Clone, Debug, Default, Serialize)]
#[non_exhaustive]
pub struct GcReport {
    /// The objects removed (or, in a dry run, that would be). In JSON each
    /// is `{ "id", "path", "bytes", "stored_bytes", "compression" }`.
    #[serde(serialize_with = "listed")]
    pub removed: Vec<StoredObject>,
    /// Bytes on disk they took.
    pub freed_bytes: u64,
    /// Objects spared because a session still references them.
    pub kept_referenced: usize,
    /// Objects a concurrent writer reused while gc ran, put back.
    pub restored: usize,
    /// Objects left.
    pub remaining_objects: usize,
    /// Bytes on disk they take.
    pub remaining_bytes: u64,
    /// Temp files of dead writers that were removed.
    pub temp_removed: usize,
}

/// Totals over a store.
#[derive(Clone, Debug, Default, Serialize)]
#[non_exhaustive]
pub struct Stats {
    /// Objects.
    pub objects: usize,
    /// Of which zstd.
    pub zstd_objects: usize,
    /// Bytes on disk.
    pub stored_bytes: u64,
    /// Bytes before compression.
    pub bytes: u64,
    /// Temp files present (live or dead writers).
    pub temp_files: usize,
    /// Objects in quarantine.
    pub quarantined: usize,
}

impl Stats {
    /// The totals over `objects`, with the counts of temp files and of
    /// quarantined objects where the backend keeps them.
    pub(crate) fn of(objects: &[StoredObject], temp_files: usize, quarantined: usize) -> Stats {
        Stats {
            objects: objects.len(),
            zstd_objects: objects
                .iter()
                .filter(|o| o.encoding == Encoding::Zstd)
                .count(),
            stored_bytes: objects.iter().map(|o| o.stored_bytes).sum(),
            bytes: objects.iter().map(|o| o.bytes).sum(),
            temp_files,
            quarantined,
        }
    }

    /// `bytes / stored_bytes`, or 1 for an empty store.
    pub fn ratio(&self) -> f64 {
        if self.stored_bytes == 0 {
            1.0
        } else {
            self.bytes as f64 / self.stored_bytes as f64
        }
    }
}

/// Objects as a listing shows them: what the store knows of each, without
/// the per-write facts (`dedup`, `truncated`).
fn listed<S: serde::Serializer>(objects: &[StoredObject], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq;
    #[derive(Serialize)]
    struct Listed<'a> {
        id: &'a ContentId,
        path: &'a std::path::Path,
        bytes: u64,
        stored_bytes: u64,
        compression: Encoding,
    }
    let mut seq = s.serialize_seq(Some(objects.len()))?;
    for o in objects {
        seq.serialize_element(&Listed {
            id: &o.id,
            path: &o.path,
            bytes: o.bytes,
            stored_bytes: o.stored_bytes,
            compression: o.encoding,
        })?;
    }
    seq.end()
}

/// gc's choice, the same for both backends: least recently used first (by
/// `modified`), never what `opts.keep` names, until the store is within
/// `max_bytes` and holds nothing unused for longer than `max_age` (ages
/// from `started`). `remove` takes a victim away and says whether it is
/// gone (not when a writer reused it); a dry run calls it never.
pub(crate) fn choose_and_remove(
    mut objects: Vec<StoredObject>,
    started: SystemTime,
    opts: &GcOptions,
    progress: &mut dyn FnMut(usize, usize),
    remove: &mut dyn FnMut(&StoredObject, &mut GcReport) -> Result<bool, StoreError>,
) -> Result<GcReport, StoreError> {
    objects.sort_by_key(|o| o.modified.unwrap_or(SystemTime::UNIX_EPOCH));
    let mut total: u64 = objects.iter().map(|o| o.stored_bytes).sum();
    let mut report = GcReport::default();
    let mut remaining = objects.len();
    let n = objects.len();
    for (i, obj) in objects.into_iter().enumerate() {
        progress(i + 1, n);
        if opts.keep.keeps(&obj.id) {
            report.kept_referenced += 1;
            continue;
        }
        let age = obj
            .modified
            .and_then(|m| started.duration_since(m).ok())
            .unwrap_or_default();
        let too_old = opts.max_age.is_some_and(|a| age > a);
        let over = opts.max_bytes.is_some_and(|m| total > m);
        if !too_old && !over {
            continue;
        }
        if !opts.dry_run && !remove(&obj, &mut report)? {
            continue;
        }
        total -= obj.stored_bytes;
        remaining -= 1;
        report.freed_bytes += obj.stored_bytes;
        report.removed.push(obj);
    }
    report.remaining_objects = remaining;
    report.remaining_bytes = total;
    Ok(report)
}

pub(super) fn count_files(dir: &std::path::Path) -> usize {
    fs::read_dir(dir).map_or(0, |d| d.flatten().count())
}

impl Store {
    /// Removes temp files left by dead writers: unlocked and older than
    /// `grace`. Returns how many were removed.
    ///
    /// # Errors
    ///
    /// An I/O error listing the temp directory.
    pub fn clean_temp(&self, grace: Duration) -> Result<usize, StoreError> {
        self.backend().maintenance()?.clean_temp(grace)
    }

    /// Re-hashes every object; moves corrupt ones to the quarantine folder;
    /// removes temp files of dead writers older than `temp_grace`.
    /// `progress(done, total)` is called after each object.
    ///
    /// # Errors
    ///
    /// An I/O error listing the store. Per-object problems are reported, not
    /// returned.
    pub fn verify_all(
        &self,
        temp_grace: Duration,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<VerifyReport, StoreError> {
        self.backend()
            .maintenance()?
            .verify_all(temp_grace, progress)
    }

    /// Removes least-recently-used objects until the store is within
    /// `max_bytes` and holds nothing unused for longer than `max_age`. Never
    /// removes an object in `keep`, nor one a concurrent writer reuses while
    /// gc runs: each victim is first renamed aside, and put back if its mtime
    /// moved after gc started. `progress(done, total)` is called per object.
    ///
    /// # Errors
    ///
    /// An I/O error listing the store.
    pub fn gc(
        &self,
        opts: &GcOptions,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<GcReport, StoreError> {
        self.backend().maintenance()?.gc(opts, progress)
    }

    /// Totals over the store, without reading object contents.
    ///
    /// # Errors
    ///
    /// An I/O error listing the store.
    pub fn stats(&self) -> Result<Stats, StoreError> {
        self.backend().maintenance()?.stats()
    }
}

/// The objects a text refers to, in every form a notice can print: a full
/// id (`blake3:` and 64 hex digits), a short one (`blake3:` and at least
/// [`MIN_PREFIX_DIGITS`](super::MIN_PREFIX_DIGITS) hex digits), or an
/// object's path (`…/objects/<h0h1>/<h2…h63>[.zst]`).
///
/// # Examples
///
/// ```
/// use spillway::References;
/// use spillway::ContentId;
/// let id = ContentId::of(b"x");
/// let hex = id.to_hex();
/// let log = format!("read it at /cache/v1/objects/{}/{}.zst", &hex[..2], &hex[2..]);
/// assert!(References::scan(&log).keeps(&id));
/// assert!(References::scan(&format!("see blake3:{}", &hex[..12])).keeps(&id));
/// assert!(!References::scan("nothing here").keeps(&id));
/// ```
#[derive(Clone, Debug, Default)]
pub struct References {
    ids: HashSet<ContentId>,
    prefixes: Vec<super::IdPrefix>,
}

impl References {
    /// Every reference in `text`.
    pub fn scan(text: &str) -> Self {
        let mut r = References::default();
        r.add_text(text);
        r
    }

    /// Adds the references in `text`.
    pub fn add_text(&mut self, text: &str) {
        let hex_run = |s: &str| {
            s.bytes()
                .take_while(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
                .count()
        };
        let mut rest = text;
        while let Some(i) = rest.find("blake3:") {
            let after = &rest[i + 7..];
            let n = hex_run(after).min(64);
            if n == 64 {
                if let Ok(id) = ContentId::from_hex(&after[..64]) {
                    self.ids.insert(id);
                }
            } else if let Ok(p) = after[..n].parse::<super::IdPrefix>() {
                self.prefixes.push(p);
            }
            rest = after;
        }
        let mut rest = text;
        while let Some(i) = rest.find("objects/") {
            let after = &rest[i + 8..];
            if hex_run(after) == 2
                && after.as_bytes().get(2) == Some(&b'/')
                && hex_run(&after[3..]) >= 62
            {
                if let Ok(id) = ContentId::from_hex(&format!("{}{}", &after[..2], &after[3..65])) {
                    self.ids.insert(id);
                }
            }
            rest = after;
        }
    }

    /// Adds one id.
    pub fn insert(&mut self, id: ContentId) {
        self.ids.insert(id);
    }

    /// Whether the text referred to `id`. A short id keeps every object it
    /// could mean.
    pub fn keeps(&self, id: &ContentId) -> bool {
        self.ids.contains(id) || self.prefixes.iter().any(|p| p.matches(id))
    }

    /// Whether nothing was referred to.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty() && self.prefixes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_found_in_every_form_anywhere_in_text() {
        let [a, b, c, d, e] = [b"a", b"b", b"c", b"d", b"e"].map(|x| ContentId::of(x));
        let (ch, dh) = (c.to_hex(), d.to_hex());
        let text = format!(
            "{{\"x\":\"{a}\"}}\nnoise blake3:zz {b} blake3:{}; at /s/v1/objects/{}/{}.zst, /s/v1/objects/{}/{}",
            &ch[..10], &dh[..2], &dh[2..], &ch[..2], &ch[2..40]
        );
        let r = References::scan(&text);
        for id in [a, b, c, d] {
            assert!(r.keeps(&id), "{id}");
        }
        assert!(!r.keeps(&e));
        // Too short to be an id: not a reference.
        assert!(References::scan(&format!("blake3:{}", &e.to_hex()[..7])).is_empty());
    }
}
