//! Keeping the local directory healthy: cleaning up after crashed
//! writers, verify (quarantining what is corrupt), gc and stats.

use std::fs;
use std::io;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use super::super::maintain::{choose_and_remove, count_files};
use super::super::{
    ContentId, CorruptObject, GcOptions, GcReport, Misplaced, Stats, StoreError, StoredObject,
    VerifyReport, ZSTD_SUFFIX,
};
use super::{open_regular, same_file, Local};
use crate::sys::{is_locked, try_lock};

impl Local {
    /// Removes temp files left by dead writers: unlocked and older than
    /// `grace`. Returns how many were removed.
    ///
    /// # Errors
    ///
    /// An I/O error listing the temp directory.
    pub(crate) fn clean_temp(&self, grace: Duration) -> Result<usize, StoreError> {
        let dir = self.tmp_dir();
        let entries = match fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(StoreError::io("list", dir)(e)),
        };
        let now = SystemTime::now();
        let mut removed = 0;
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else { continue };
            let age = meta
                .modified()
                .ok()
                .and_then(|m| now.duration_since(m).ok())
                .unwrap_or_default();
            if age < grace || (meta.is_file() && is_locked(&path)) {
                continue;
            }
            let gone = if meta.is_dir() {
                self.fs().remove_dir_all(&path)
            } else {
                self.fs().remove_file(&path)
            };
            if gone.is_ok() {
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Re-hashes every object; moves corrupt ones to the quarantine folder;
    /// removes temp files of dead writers older than `temp_grace`.
    /// `progress(done, total)` is called after each object.
    ///
    /// # Errors
    ///
    /// An I/O error listing the store. Per-object problems are reported, not
    /// returned.
    pub(crate) fn verify_all(
        &self,
        temp_grace: Duration,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<VerifyReport, StoreError> {
        let objects = self.list()?;
        let mut report = VerifyReport::default();
        for (i, obj) in objects.iter().enumerate() {
            match self.verify_path(&obj.id, &obj.path, obj.encoding) {
                Ok(info) => {
                    report.ok += 1;
                    report.ok_bytes += info.bytes;
                }
                Err(e) => {
                    let quarantined = self.quarantine(&obj.path).ok();
                    report.corrupt.push(CorruptObject {
                        id: obj.id,
                        reason: e.to_string(),
                        quarantined,
                    });
                }
            }
            progress(i + 1, objects.len());
        }
        report.not_regular = self.quarantine_misplaced()?;
        report.temp_removed = self.clean_temp(temp_grace)?;
        Ok(report)
    }

    /// Moves aside everything at a shard or object name that the store
    /// would not read: links, directories and special files where objects
    /// belong, links and files where shards belong.
    fn quarantine_misplaced(&self) -> Result<Vec<Misplaced>, StoreError> {
        let mut out = Vec::new();
        if !self.real_dirs_exist()? {
            return Ok(out);
        }
        let objects = self.objects_dir();
        let kind_of = |t: fs::FileType| {
            if t.is_symlink() {
                "symbolic link"
            } else if t.is_dir() {
                "directory"
            } else if t.is_file() {
                "file"
            } else {
                "other"
            }
        };
        let is_hex = |s: &str| {
            s.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        };
        let mut move_aside = |path: PathBuf, kind: &'static str| {
            let quarantined = self.quarantine(&path).ok();
            out.push(Misplaced {
                path,
                kind,
                quarantined,
            });
        };
        for shard in fs::read_dir(objects).map_err(StoreError::io("list", objects))? {
            let shard = shard.map_err(StoreError::io("list", objects))?;
            let name = shard.file_name();
            let Some(name) = name.to_str().filter(|n| n.len() == 2 && is_hex(n)) else {
                continue;
            };
            let Ok(t) = shard.file_type() else { continue };
            if !t.is_dir() {
                move_aside(shard.path(), kind_of(t));
                continue;
            }
            let dir = shard.path();
            for entry in fs::read_dir(&dir).map_err(StoreError::io("list", &dir))? {
                let entry = entry.map_err(StoreError::io("list", &dir))?;
                let file = entry.file_name();
                let Some(file) = file.to_str() else { continue };
                let rest = file.strip_suffix(ZSTD_SUFFIX).unwrap_or(file);
                if ContentId::from_hex(&format!("{name}{rest}")).is_err() {
                    continue;
                }
                match entry.file_type() {
                    Ok(t) if !t.is_file() => move_aside(entry.path(), kind_of(t)),
                    _ => {}
                }
            }
        }
        Ok(out)
    }

    /// Moves a file into the quarantine folder under a unique name.
    pub(crate) fn quarantine(&self, path: &std::path::Path) -> Result<PathBuf, StoreError> {
        self.ensure_dir(self.quarantine_dir())?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let shard = path
            .parent()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dest = self.quarantine_dir().join(format!(
            "{shard}{name}.{}",
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        self.fs()
            .rename(path, &dest)
            .map_err(StoreError::io("quarantine", path))?;
        Ok(dest)
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
    pub(crate) fn gc(
        &self,
        opts: &GcOptions,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<GcReport, StoreError> {
        let started = SystemTime::now();
        let mut report =
            choose_and_remove(self.list()?, started, opts, progress, &mut |obj, r| {
                self.remove_unless_reused(obj, started, r)
            })?;
        if !opts.dry_run {
            report.temp_removed = self.clean_temp(opts.temp_grace)?;
        }
        Ok(report)
    }

    /// Renames `obj` aside, then deletes it unless a writer touched it after
    /// `started`, in which case it is put back. Returns whether it is gone.
    ///
    /// The object's inode is locked first and stays locked while it is
    /// aside, so temp-file cleanup (of this gc or another) never takes it
    /// for a dead writer's file, and a second gc skips it.
    fn remove_unless_reused(
        &self,
        obj: &StoredObject,
        started: SystemTime,
        report: &mut GcReport,
    ) -> Result<bool, StoreError> {
        self.ensure_dir(self.tmp_dir())?;
        let file = match open_regular(self.root(), &obj.path) {
            Ok(f) => f,
            // Gone already (another gc), or not a file: nothing to do here.
            Err(_) => return Ok(false),
        };
        if !try_lock(&file) || !same_file(&file, &obj.path) {
            return Ok(false);
        }
        let aside = self.tmp_dir().join(format!(
            "gc-{}-{}.trash",
            std::process::id(),
            obj.id.to_hex()
        ));
        match self.fs().rename(&obj.path, &aside) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(StoreError::io("move aside", &obj.path)(e)),
        }
        let reused = file
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|m| m >= started);
        if reused {
            // Put it back, unless an equal object was published meanwhile.
            match self.fs().link(&aside, &obj.path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(StoreError::io("restore", &obj.path)(e)),
            }
            let _ = self.fs().remove_file(&aside);
            report.restored += 1;
            return Ok(false);
        }
        match self.fs().remove_file(&aside) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(true),
            Err(e) => Err(StoreError::io("remove", &aside)(e)),
        }
    }

    /// Totals over the store, without reading object contents.
    ///
    /// # Errors
    ///
    /// An I/O error listing the store.
    pub(crate) fn stats(&self) -> Result<Stats, StoreError> {
        Ok(Stats::of(
            &self.list()?,
            count_files(self.tmp_dir()),
            count_files(self.quarantine_dir()),
        ))
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests damage stores and drive them from threads of their own
mod tests {
    use super::*;
    use crate::store::{Durability, Store, WriteOptions};

    const RELAXED: WriteOptions = WriteOptions::raw().durability(Durability::Relaxed);

    /// A store, and the local directory behind it.
    fn store() -> (tempfile::TempDir, Store, Local) {
        let d = tempfile::tempdir().unwrap();
        let l = Local::open(&d.path().join("s")).unwrap();
        let s = Store::over(std::sync::Arc::new(l.clone()));
        (d, s, l)
    }

    fn age(path: &std::path::Path, secs: u64) {
        let f = fs::File::options().write(true).open(path).unwrap();
        f.set_modified(SystemTime::now() - Duration::from_secs(secs))
            .unwrap();
    }

    /// gc listed the object as stale, then a writer reused it (fresh mtime)
    /// before gc moved it: gc must put it back.
    #[test]
    fn gc_restores_an_object_reused_after_it_started() {
        let (_d, s, l) = store();
        let stored = s.put(b"reused", RELAXED).unwrap();
        age(&stored.path, 7200);
        let listed = s.list().unwrap().remove(0);
        let started = SystemTime::now();
        // The writer's dedup hit happens here.
        assert!(l.dedup_hit(&stored.id).unwrap().is_some());
        let mut report = GcReport::default();
        let gone = l
            .remove_unless_reused(&listed, started, &mut report)
            .unwrap();
        assert!(!gone);
        assert_eq!(report.restored, 1);
        assert_eq!(
            s.read(&stored.id, &crate::Selection::All).unwrap(),
            b"reused"
        );
        assert_eq!(fs::read_dir(l.tmp_dir()).unwrap().count(), 0);
    }

    /// Without reuse, the same object goes.
    #[test]
    fn gc_removes_a_stale_object_nobody_reused() {
        let (_d, s, l) = store();
        let stored = s.put(b"stale", RELAXED).unwrap();
        age(&stored.path, 7200);
        let listed = s.list().unwrap().remove(0);
        let mut report = GcReport::default();
        assert!(l
            .remove_unless_reused(&listed, SystemTime::now(), &mut report)
            .unwrap());
        assert!(!stored.path.exists());
    }

    /// gc moved the object away after the writer opened it: the writer must
    /// not report a hit on a name that no longer holds it.
    #[test]
    fn a_dedup_hit_needs_the_name_to_still_hold_the_file() {
        let (_d, s, l) = store();
        let stored = s.put(b"moved", RELAXED).unwrap();
        let f = super::super::open_regular(l.root(), &stored.path).unwrap();
        let aside = l.tmp_dir().join("aside");
        fs::rename(&stored.path, &aside).unwrap();
        assert!(!super::super::same_file(&f, &stored.path));
        assert!(l.dedup_hit(&stored.id).unwrap().is_none());
    }

    #[test]
    fn locked_temp_files_of_live_writers_survive_cleanup() {
        let (_d, s, l) = store();
        let mut w = s.writer(RELAXED).unwrap();
        w.write_all(b"in progress").unwrap();
        let temp = fs::read_dir(l.tmp_dir())
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        age(&temp, 7200);
        assert_eq!(
            s.clean_temp(Duration::ZERO).unwrap(),
            0,
            "a live writer's file stays"
        );
        w.finish().unwrap();
        let dead = l.tmp_dir().join("1-2-3.tmp");
        fs::write(&dead, b"left by a crash").unwrap();
        assert_eq!(
            s.clean_temp(Duration::from_secs(3600)).unwrap(),
            0,
            "too young"
        );
        age(&dead, 7200);
        assert_eq!(s.clean_temp(Duration::from_secs(3600)).unwrap(), 1);
    }
}
