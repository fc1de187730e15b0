//! A store in a local directory: its layout, the directories it makes
//! (private, each synced into its parent), its temp files, and the
//! `Backend`, `Reads` and `Maintain` it implements. Its reads are in
//! `read.rs`, its object out (temp file, fsync, `link(2)`) in `publish.rs`,
//! its maintenance in `maintain.rs`.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::fs::{Fs, RealFs};
use super::{
    now_nanos, Backend, ContentId, Encoding, GcOptions, GcReport, IdPrefix, Location, Maintain,
    ObjectWriter, Reads, Stats, StoreError, StoredObject, VerifyReport, WriteOptions,
    LAYOUT_VERSION,
};
use crate::sys;

mod maintain;
mod publish;
mod read;

/// A store in a local directory: its paths, the counter that names its
/// temp files, and the test seam. Cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct Local(Arc<Dirs>);

#[derive(Debug)]
pub(crate) struct Dirs {
    location: Location,
    root: PathBuf,
    base: PathBuf,
    objects: PathBuf,
    tmp: PathBuf,
    quarantine: PathBuf,
    counter: AtomicU64,
    /// Where every change to the disk goes.
    fs: Arc<dyn Fs>,
}

impl Local {
    /// The store rooted at `root` (absolute), changing the disk through
    /// `fs`.
    pub(crate) fn at(root: PathBuf, fs: Arc<dyn Fs>) -> Local {
        let base = root.join(LAYOUT_VERSION);
        Local(Arc::new(Dirs {
            location: Location::Dir(root.clone()),
            objects: base.join("objects"),
            tmp: base.join("tmp"),
            quarantine: base.join("quarantine"),
            base,
            root,
            counter: AtomicU64::new(0),
            fs,
        }))
    }

    /// The store rooted at `root`, made absolute against the current
    /// directory.
    pub(crate) fn open(root: &Path) -> Result<Local, StoreError> {
        let root = if root.is_absolute() {
            root.to_path_buf()
        } else {
            std::env::current_dir()
                .map_err(StoreError::io("read current directory for", root))?
                .join(root)
        };
        Ok(Local::at(root, Arc::new(RealFs)))
    }

    /// The filesystem every change to this store's disk goes through.
    pub(crate) fn fs(&self) -> &dyn Fs {
        &*self.0.fs
    }

    pub(crate) fn root(&self) -> &Path {
        &self.0.root
    }

    pub(crate) fn tmp_dir(&self) -> &Path {
        &self.0.tmp
    }

    pub(crate) fn quarantine_dir(&self) -> &Path {
        &self.0.quarantine
    }

    pub(crate) fn objects_dir(&self) -> &Path {
        &self.0.objects
    }

    /// The file of an object of this id and encoding.
    pub(crate) fn object_path(&self, id: &ContentId, encoding: Encoding) -> PathBuf {
        let hex = id.to_hex();
        let mut name = hex[2..].to_string();
        name.push_str(encoding.suffix());
        self.0.objects.join(&hex[..2]).join(name)
    }

    /// Creates `dir` (0700) if needed and checks it is a real directory. A
    /// directory it creates is made durable in its parent at once: a name
    /// published inside it later is only durable if the directory is.
    pub(crate) fn ensure_dir(&self, dir: &Path) -> Result<(), StoreError> {
        match self.fs().create_dir(dir) {
            Ok(()) => {
                if let Some(parent) = dir.parent() {
                    self.sync_dir(parent)?;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(StoreError::io("create directory", dir)(e)),
        }
        let meta = std::fs::symlink_metadata(dir).map_err(StoreError::io("inspect", dir))?;
        if meta.file_type().is_symlink() {
            return Err(StoreError::Symlink {
                path: dir.to_path_buf(),
            });
        }
        if !meta.is_dir() {
            return Err(StoreError::WrongKind {
                path: dir.to_path_buf(),
                expected: "directory",
            });
        }
        Ok(())
    }

    /// Checks the root and the version directory, creating them if needed.
    pub(crate) fn ensure_base(&self) -> Result<(), StoreError> {
        let root = &self.0.root;
        match std::fs::symlink_metadata(root) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(StoreError::Symlink { path: root.clone() })
            }
            Ok(m) if !m.is_dir() => {
                return Err(StoreError::WrongKind {
                    path: root.clone(),
                    expected: "directory",
                })
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if let Some(parent) = root.parent() {
                    self.fs()
                        .create_dir_all(parent)
                        .map_err(StoreError::io("create directory", parent))?;
                }
                self.ensure_dir(root)?;
            }
            Err(e) => return Err(StoreError::io("inspect", root)(e)),
        }
        self.ensure_dir(&self.0.base)?;
        self.ensure_dir(&self.0.objects)
    }

    /// fsyncs a directory, making the names in it durable.
    pub(crate) fn sync_dir(&self, dir: &Path) -> Result<(), StoreError> {
        self.fs()
            .sync_dir(dir)
            .map_err(StoreError::io("fsync directory", dir))
    }

    /// Creates a new private temp file in `tmp/`.
    pub(crate) fn create_temp(&self) -> Result<(PathBuf, std::fs::File), StoreError> {
        self.ensure_base()?;
        self.ensure_dir(&self.0.tmp)?;
        loop {
            let n = self.0.counter.fetch_add(1, Ordering::Relaxed);
            let name = format!("{}-{}-{n}.tmp", std::process::id(), now_nanos());
            let path = self.0.tmp.join(name);
            match self.fs().create_new(&path, false) {
                Ok(file) => {
                    // Held while the writer lives (the kernel drops it if the
                    // process dies), so cleanup can tell a live writer from
                    // a crashed one.
                    let _ = sys::try_lock(&file);
                    return Ok((path, file));
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(StoreError::io("create temp file", &path)(e)),
            }
        }
    }

    /// An existing, verified object of this id, with its mtime refreshed.
    ///
    /// Safe against a concurrent gc: the object is verified and touched
    /// through one open file, and only counts as a hit if its name still
    /// points at that file afterwards. gc, for its part, restores an object
    /// whose mtime moved after gc started (see [`Store::gc`](super::Store::gc)).
    pub(crate) fn dedup_hit(&self, id: &ContentId) -> Result<Option<StoredObject>, StoreError> {
        self.dedup_hit_checked(id, None)
    }

    /// [`dedup_hit`](Self::dedup_hit), each copy checked by comparing it
    /// with `content` (whose id is `id`) when that is at hand, not by
    /// hashing it again.
    pub(crate) fn dedup_hit_checked(
        &self,
        id: &ContentId,
        content: Option<&[u8]>,
    ) -> Result<Option<StoredObject>, StoreError> {
        for encoding in Encoding::ALL {
            let path = self.object_path(id, encoding);
            let file = match open_regular(self.root(), &path) {
                Ok(f) => f,
                Err(StoreError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                    continue
                }
                // A link or a non-file where an object belongs: not a hit,
                // and moved aside so that the id resolves to one good object.
                // Only the object's own name is moved, never a directory
                // above it (moving through a linked directory would reach
                // outside the store).
                Err(
                    StoreError::Symlink { path: bad } | StoreError::WrongKind { path: bad, .. },
                ) if bad == path && self.quarantine(&path).is_ok() => continue,
                Err(e) => return Err(e),
            };
            let scanned = self.check_file(
                file.try_clone().map_err(StoreError::io("open", &path))?,
                id,
                &path,
                encoding,
                content,
                &mut |_| {},
            );
            let info = match scanned {
                Ok(info) => info,
                Err(StoreError::Corrupt { .. }) => {
                    // A corrupt copy is never reused; moving it aside lets
                    // reads find the good copy of another encoding.
                    if same_file(&file, &path) {
                        let _ = self.quarantine(&path);
                    }
                    continue;
                }
                Err(e) => return Err(e),
            };
            let _ = file.set_modified(std::time::SystemTime::now());
            if !same_file(&file, &path) {
                continue;
            }
            return Ok(Some(StoredObject {
                dedup: true,
                modified: None,
                ..info
            }));
        }
        Ok(None)
    }
}

impl Backend for Local {
    fn location(&self) -> &Location {
        &self.0.location
    }

    fn object_location(&self, id: &ContentId, encoding: Encoding) -> PathBuf {
        self.object_path(id, encoding)
    }

    fn verified_hit(
        &self,
        id: &ContentId,
        _bytes: u64,
    ) -> Result<Option<StoredObject>, StoreError> {
        // Every copy is hashed again; the id holds the length.
        Local::dedup_hit(self, id)
    }

    fn dedup_hit_content(
        &self,
        id: &ContentId,
        content: &[u8],
    ) -> Result<Option<StoredObject>, StoreError> {
        self.dedup_hit_checked(id, Some(content))
    }

    fn writer(&self, opts: WriteOptions) -> Result<ObjectWriter, StoreError> {
        publish::LocalOut::writer(self.clone(), opts)
    }

    #[cfg(feature = "test-seams")]
    fn with_fs(&self, wrap: &dyn Fn(Arc<dyn Fs>) -> Arc<dyn Fs>) -> Option<Arc<dyn Backend>> {
        let fs = wrap(self.0.fs.clone());
        Some(Arc::new(Local::at(self.root().to_path_buf(), fs)))
    }

    #[cfg(feature = "test-seams")]
    fn damage(&self, _: &ContentId, _: Encoding, _: &[u8]) -> bool {
        // A file is damaged by writing it: the tests do that themselves.
        false
    }

    fn reads(&self) -> Result<&dyn Reads, StoreError> {
        Ok(self)
    }

    fn maintenance(&self) -> Result<&dyn Maintain, StoreError> {
        Ok(self)
    }
}

impl Reads for Local {
    fn locate(&self, id: &ContentId) -> Result<(PathBuf, Encoding), StoreError> {
        Local::locate(self, id)
    }

    fn resolve_prefix(&self, prefix: &IdPrefix) -> Result<ContentId, StoreError> {
        Local::resolve_prefix(self, prefix)
    }

    fn scan_good(
        &self,
        id: &ContentId,
        f: &mut dyn FnMut(Option<&[u8]>),
    ) -> Result<StoredObject, StoreError> {
        Local::scan_good(self, id, f)
    }

    fn rescan(
        &self,
        id: &ContentId,
        found: &StoredObject,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<StoredObject, StoreError> {
        self.scan(id, &found.path, found.encoding, f)
    }

    fn list(&self) -> Result<Vec<StoredObject>, StoreError> {
        Local::list(self)
    }
}

impl Maintain for Local {
    fn clean_temp(&self, grace: std::time::Duration) -> Result<usize, StoreError> {
        Local::clean_temp(self, grace)
    }

    fn verify_all(
        &self,
        temp_grace: std::time::Duration,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<VerifyReport, StoreError> {
        Local::verify_all(self, temp_grace, progress)
    }

    fn gc(
        &self,
        opts: &GcOptions,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<GcReport, StoreError> {
        Local::gc(self, opts, progress)
    }

    fn stats(&self) -> Result<Stats, StoreError> {
        Local::stats(self)
    }
}

/// Whether `path` still names the open `file`.
pub(crate) fn same_file(file: &std::fs::File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Opens a file inside the store for reading and checks that it is a
/// regular file. No symbolic link is followed anywhere on the way: below
/// `root`, every directory is opened relative to the last one with
/// `O_NOFOLLOW | O_DIRECTORY`, so a shard or `v1/objects` replaced by a link
/// is refused, not read through.
pub(crate) fn open_regular(root: &Path, path: &Path) -> Result<std::fs::File, StoreError> {
    use rustix::fs::{openat, Mode, OFlags, CWD};
    let refuse = |e: rustix::io::Errno, at: &Path| match e {
        rustix::io::Errno::LOOP => StoreError::Symlink {
            path: at.to_path_buf(),
        },
        // O_NOFOLLOW | O_DIRECTORY on a link says ENOTDIR.
        rustix::io::Errno::NOTDIR
            if std::fs::symlink_metadata(at).is_ok_and(|m| m.is_symlink()) =>
        {
            StoreError::Symlink {
                path: at.to_path_buf(),
            }
        }
        rustix::io::Errno::NOTDIR => StoreError::WrongKind {
            path: at.to_path_buf(),
            expected: "directory",
        },
        e => StoreError::io("open", at)(e.into()),
    };
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let file_flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = match path.strip_prefix(root) {
        Ok(rel) => {
            let mut dir =
                openat(CWD, root, dir_flags, Mode::empty()).map_err(|e| refuse(e, root))?;
            let mut at = root.to_path_buf();
            let mut parts = rel.components().peekable();
            let mut last = None;
            while let Some(part) = parts.next() {
                at.push(part);
                if parts.peek().is_none() {
                    last = Some(openat(&dir, part.as_os_str(), file_flags, Mode::empty()));
                    break;
                }
                dir = openat(&dir, part.as_os_str(), dir_flags, Mode::empty())
                    .map_err(|e| refuse(e, &at))?;
            }
            match last {
                Some(fd) => fd.map_err(|e| refuse(e, path))?,
                None => {
                    return Err(StoreError::WrongKind {
                        path: path.to_path_buf(),
                        expected: "regular file",
                    })
                }
            }
        }
        Err(_) => openat(CWD, path, file_flags, Mode::empty()).map_err(|e| refuse(e, path))?,
    };
    let file = std::fs::File::from(fd);
    let meta = file.metadata().map_err(StoreError::io("inspect", path))?;
    if !meta.is_file() {
        return Err(StoreError::WrongKind {
            path: path.to_path_buf(),
            expected: "regular file",
        });
    }
    Ok(file)
}
