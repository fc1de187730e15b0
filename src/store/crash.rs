//! A crash model for the store, in the manner of redb's crash tests: record
//! every change the store makes to its files, then rebuild what a power
//! loss after any prefix of them would leave on disk, keeping only what was
//! synced.
//!
//! The rules are those POSIX promises and no more:
//!
//! * a file's bytes survive as of its last `fsync`; later writes are lost;
//! * a directory entry (a created, linked, renamed or removed name, a new
//!   subdirectory) survives only once that directory is fsynced;
//! * anything below a directory whose own entry did not survive is gone.
//!
//! [`CrashKind::NamesWithoutData`] models the opposite reordering: every name
//! survives, file bytes only as synced (a zero-length or torn file under a
//! real name, as ext4's delayed allocation can leave).
//!
//! The model sees the changes through the filesystem every change to the
//! disk goes through ([`CrashModel::fs`] wraps it), so it sees them all.
//!
//! Available with the `test-seams` feature; not part of the stable API.

// The model rebuilds a disk with std::fs: it is the one writer of the
// crash images, outside any store (see clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::fs::Fs;
use super::op::Op;

/// What a simulated crash keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CrashKind {
    /// Only what was synced: file bytes as of their last fsync, directory
    /// entries as of their directory's last fsync.
    SyncedOnly,
    /// Every name, but file bytes only as of their last fsync.
    NamesWithoutData,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Node {
    Dir,
    File(usize),
}

#[derive(Clone, Debug, Default)]
struct Inode {
    data: Vec<u8>,
    synced: Vec<u8>,
}

#[derive(Clone, Debug)]
enum Owned {
    Mkdir(PathBuf),
    Create(PathBuf),
    Write(PathBuf, u64, Vec<u8>),
    Fsync(PathBuf),
    Link(PathBuf, PathBuf),
    Rename(PathBuf, PathBuf),
    Remove(PathBuf),
    FsyncDir(PathBuf),
}

#[derive(Debug)]
struct Trace {
    root: PathBuf,
    base: BTreeMap<PathBuf, Node>,
    base_inodes: Vec<Inode>,
    ops: Vec<Owned>,
}

/// Records a store's changes from the moment it is made (what is on disk
/// then counts as durable) and rebuilds the disk after a crash at any point.
///
/// Give it to a store with
/// [`Store::with_crash_model`](super::Store::with_crash_model).
#[derive(Clone, Debug)]
pub struct CrashModel(Arc<Mutex<Trace>>);

/// The model's state: every name, and what survives.
struct State {
    live: BTreeMap<PathBuf, Node>,
    durable: BTreeMap<PathBuf, Node>,
    inodes: Vec<Inode>,
}

impl CrashModel {
    /// Starts recording changes under `root`, taking what is there now as
    /// durable.
    ///
    /// # Errors
    ///
    /// Reading the existing tree failed.
    pub fn new(root: &Path) -> io::Result<Self> {
        let mut base = BTreeMap::new();
        let mut base_inodes = Vec::new();
        if root.exists() {
            snapshot(root, Path::new(""), &mut base, &mut base_inodes)?;
        }
        Ok(CrashModel(Arc::new(Mutex::new(Trace {
            root: root.to_path_buf(),
            base,
            base_inodes,
            ops: Vec::new(),
        }))))
    }

    fn trace(&self) -> std::sync::MutexGuard<'_, Trace> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many changes have been recorded: a crash point.
    pub fn len(&self) -> usize {
        self.trace().ops.len()
    }

    /// Whether nothing has been recorded yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `inner`, recording every change it makes under the model's root
    /// once the change succeeded: the store's filesystem, a session log's.
    pub fn fs(&self, inner: Arc<dyn Fs>) -> Arc<dyn Fs> {
        Arc::new(CrashFs {
            model: self.clone(),
            inner,
        })
    }

    fn record(&self, op: Op<'_>) {
        let mut t = self.trace();
        let Some(owned) = own(&t.root, op) else {
            return;
        };
        t.ops.push(owned);
    }

    /// Writes into `into` (an empty or missing directory standing for the
    /// store's root) what the disk would hold after a crash once `at`
    /// changes had been made.
    ///
    /// # Errors
    ///
    /// Writing the tree failed.
    pub fn materialize(&self, at: usize, kind: CrashKind, into: &Path) -> io::Result<()> {
        let t = self.trace();
        let mut s = State {
            live: t.base.clone(),
            durable: t.base.clone(),
            inodes: t.base_inodes.clone(),
        };
        for op in &t.ops[..at.min(t.ops.len())] {
            s.apply(op);
        }
        let names = match kind {
            CrashKind::SyncedOnly => &s.durable,
            CrashKind::NamesWithoutData => &s.live,
        };
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(into)?;
        for (path, node) in names {
            if !reachable(names, path) {
                continue;
            }
            let dest = into.join(path);
            match node {
                Node::Dir => fs::DirBuilder::new().mode(0o700).create(&dest)?,
                Node::File(ino) => fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(&dest)
                    .and_then(|mut f| io::Write::write_all(&mut f, &s.inodes[*ino].synced))?,
            }
        }
        Ok(())
    }
}

/// Whether every ancestor of `path` is a directory in `names`.
fn reachable(names: &BTreeMap<PathBuf, Node>, path: &Path) -> bool {
    path.ancestors()
        .skip(1)
        .filter(|a| !a.as_os_str().is_empty())
        .all(|a| names.get(a) == Some(&Node::Dir))
}

fn snapshot(
    root: &Path,
    rel: &Path,
    out: &mut BTreeMap<PathBuf, Node>,
    inodes: &mut Vec<Inode>,
) -> io::Result<()> {
    for entry in fs::read_dir(root.join(rel))? {
        let entry = entry?;
        let name = rel.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_dir() {
            out.insert(name.clone(), Node::Dir);
            snapshot(root, &name, out, inodes)?;
        } else if kind.is_file() {
            let data = fs::read(entry.path())?;
            inodes.push(Inode {
                synced: data.clone(),
                data,
            });
            out.insert(name, Node::File(inodes.len() - 1));
        }
    }
    Ok(())
}

/// The op with its paths relative to the root; `None` for paths outside it.
fn own(root: &Path, op: Op<'_>) -> Option<Owned> {
    let rel = |p: &Path| p.strip_prefix(root).ok().map(Path::to_path_buf);
    Some(match op {
        Op::Mkdir(p) => Owned::Mkdir(rel(p)?),
        Op::Create(p) => Owned::Create(rel(p)?),
        Op::Write(p, at, data) => Owned::Write(rel(p)?, at, data.to_vec()),
        Op::Fsync(p) => Owned::Fsync(rel(p)?),
        Op::Link(a, b) => Owned::Link(rel(a)?, rel(b)?),
        Op::Rename(a, b) => Owned::Rename(rel(a)?, rel(b)?),
        Op::Remove(p) => Owned::Remove(rel(p)?),
        Op::FsyncDir(p) => Owned::FsyncDir(rel(p)?),
    })
}

impl State {
    fn inode(&mut self, path: &Path) -> Option<&mut Inode> {
        match self.live.get(path) {
            Some(Node::File(i)) => self.inodes.get_mut(*i),
            _ => None,
        }
    }

    fn apply(&mut self, op: &Owned) {
        match op {
            Owned::Mkdir(p) => {
                self.live.insert(p.clone(), Node::Dir);
            }
            Owned::Create(p) => {
                self.inodes.push(Inode::default());
                self.live
                    .insert(p.clone(), Node::File(self.inodes.len() - 1));
            }
            Owned::Write(p, at, data) => {
                if let Some(ino) = self.inode(p) {
                    let at = *at as usize;
                    if ino.data.len() < at + data.len() {
                        ino.data.resize(at + data.len(), 0);
                    }
                    ino.data[at..at + data.len()].copy_from_slice(data);
                }
            }
            Owned::Fsync(p) => {
                if let Some(ino) = self.inode(p) {
                    ino.synced = ino.data.clone();
                }
            }
            Owned::Link(a, b) => {
                if let Some(n) = self.live.get(a).copied() {
                    self.live.insert(b.clone(), n);
                }
            }
            Owned::Rename(a, b) => {
                if let Some(n) = self.live.remove(a) {
                    self.live.insert(b.clone(), n);
                }
            }
            Owned::Remove(p) => {
                self.live.retain(|k, _| !k.starts_with(p));
            }
            Owned::FsyncDir(d) => {
                let child = |k: &Path| k.parent() == Some(d.as_path());
                self.durable.retain(|k, _| !child(k));
                for (k, n) in &self.live {
                    if child(k) {
                        self.durable.insert(k.clone(), *n);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model_with(ops: &[Op<'_>], root: &Path) -> CrashModel {
        let m = CrashModel::new(root).unwrap();
        for op in ops {
            m.record(*op);
        }
        m
    }

    fn tree(dir: &Path) -> Vec<(String, Option<Vec<u8>>)> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in fs::read_dir(&d).unwrap() {
                let e = e.unwrap();
                let rel = e.path().strip_prefix(dir).unwrap().display().to_string();
                if e.file_type().unwrap().is_dir() {
                    out.push((rel, None));
                    stack.push(e.path());
                } else {
                    out.push((rel, Some(fs::read(e.path()).unwrap())));
                }
            }
        }
        out.sort();
        out
    }

    #[test]
    fn unsynced_names_and_bytes_are_lost_and_synced_ones_survive() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("root");
        fs::create_dir(&root).unwrap();
        let (a, sub, b) = (root.join("a"), root.join("sub"), root.join("sub/b"));
        let m = model_with(
            &[
                Op::Create(&a),
                Op::Write(&a, 0, b"hello"),
                Op::Fsync(&a),
                Op::Write(&a, 5, b" world"),
                Op::FsyncDir(&root),
                Op::Mkdir(&sub),
                Op::Link(&a, &b),
                Op::FsyncDir(&sub),
            ],
            &root,
        );
        let out = |at, kind| {
            let o = d.path().join(format!("out-{at}-{kind:?}"));
            m.materialize(at, kind, &o).unwrap();
            tree(&o)
        };
        assert_eq!(out(0, CrashKind::SyncedOnly), vec![]);
        // Created and written, but its directory never synced: gone.
        assert_eq!(out(4, CrashKind::SyncedOnly), vec![]);
        // The name is durable; only the synced bytes are there.
        assert_eq!(
            out(5, CrashKind::SyncedOnly),
            vec![("a".into(), Some(b"hello".to_vec()))]
        );
        // sub/b was synced, but sub itself never was in root: unreachable.
        assert_eq!(
            out(8, CrashKind::SyncedOnly),
            vec![("a".into(), Some(b"hello".to_vec()))]
        );
        // Every name, synced bytes only.
        assert_eq!(
            out(2, CrashKind::NamesWithoutData),
            vec![("a".into(), Some(Vec::new()))]
        );
    }

    #[test]
    fn a_directory_fsync_also_makes_removals_durable() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("root");
        fs::create_dir(&root).unwrap();
        fs::write(root.join("old"), b"x").unwrap();
        let old = root.join("old");
        let m = model_with(&[Op::Remove(&old), Op::FsyncDir(&root)], &root);
        let o1 = d.path().join("o1");
        m.materialize(1, CrashKind::SyncedOnly, &o1).unwrap();
        assert_eq!(tree(&o1), vec![("old".into(), Some(b"x".to_vec()))]);
        let o2 = d.path().join("o2");
        m.materialize(2, CrashKind::SyncedOnly, &o2).unwrap();
        assert_eq!(tree(&o2), vec![]);
    }
}

/// A filesystem whose changes a [`CrashModel`] records.
#[derive(Debug)]
struct CrashFs {
    model: CrashModel,
    inner: Arc<dyn Fs>,
}

impl CrashFs {
    fn then<T>(&self, done: io::Result<T>, op: Op<'_>) -> io::Result<T> {
        if done.is_ok() {
            self.model.record(op);
        }
        done
    }
}

impl Fs for CrashFs {
    fn create_dir(&self, dir: &Path) -> io::Result<()> {
        self.then(self.inner.create_dir(dir), Op::Mkdir(dir))
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        // The parents of a store's root: outside what the model keeps.
        self.inner.create_dir_all(dir)
    }

    fn create_new(&self, path: &Path, append: bool) -> io::Result<fs::File> {
        self.then(self.inner.create_new(path, append), Op::Create(path))
    }

    fn write(&self, file: &mut fs::File, path: &Path, at: u64, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(file, path, at, buf)?;
        self.model.record(Op::Write(path, at, &buf[..n]));
        Ok(n)
    }

    fn sync(&self, file: &fs::File, path: &Path) -> io::Result<()> {
        self.then(self.inner.sync(file, path), Op::Fsync(path))
    }

    fn link(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.then(self.inner.link(from, to), Op::Link(from, to))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.then(self.inner.rename(from, to), Op::Rename(from, to))
    }

    fn rename_noreplace(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.then(self.inner.rename_noreplace(from, to), Op::Rename(from, to))
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.then(self.inner.remove_file(path), Op::Remove(path))
    }

    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        self.then(self.inner.remove_dir_all(path), Op::Remove(path))
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.then(self.inner.sync_dir(dir), Op::FsyncDir(dir))
    }
}
