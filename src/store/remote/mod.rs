//! The store's second backend: S3-compatible object storage through the
//! `object_store` crate (the `s3` cargo feature).
//!
//! # Layout
//!
//! Keys mirror the local tree below the URL's prefix, and object bytes are
//! the local files' bytes, so a store copied between backends with ordinary
//! tools still verifies:
//!
//! ```text
//! PREFIX/v1/objects/<h0h1>/<h2…h63>[.zst]   an object, as on disk
//! PREFIX/v1/used/<h0h1>/<h2…h63>            empty; rewritten on a dedup hit (what gc reads)
//! PREFIX/v1/tmp/<nanos>-<pid>-<n>.tmp        a large object being uploaded (multipart)
//! PREFIX/v1/tmp/gc-<nanos>-<id>[.zst]        an object gc has set aside
//! PREFIX/v1/quarantine/<h0h1…h63>[.zst].<nanos>  a corrupt object moved aside by verify
//! ```
//!
//! # Writing
//!
//! An object of up to [`upload::PART`] stored bytes, or one whose whole
//! content the caller holds (`Store::put`, `Spiller::apply`: its id is
//! known before it is sent), goes straight to its object key after a
//! `HEAD` that finds an existing copy without sending anything: in one
//! `PUT` with `If-None-Match: *`, or, past [`direct::PARTS_FROM`], as a multipart upload at
//! the key whose completion carries `If-None-Match: *` (parts in parallel,
//! [`direct`]). A larger streamed one streams to a
//! temporary key as a multipart upload (parts of [`upload::PART`], a few in
//! flight), which is completed and then copied to its object key by a
//! conditional multipart copy (`If-None-Match: *` on completion), so an
//! object's key only ever holds a whole object and an existing object is
//! never overwritten: "already exists" is a dedup hit. A failed or dropped
//! upload is aborted.
//!
//! # Reading
//!
//! A read downloads the whole object once into a local cache (a private
//! local store), verifying its hash on the way; reads, ranges, grep and
//! pointer lookups are then served from the verified copy, which every read
//! hashes again as a local read does. The cache is bounded: least recently
//! used objects leave it first.

mod direct;
mod location;
mod maintain;
mod options;
mod upload;
mod uploads;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use object_store::aws::{AmazonS3Builder, S3CopyIfNotExists};
use object_store::path::Path as Key;
use object_store::{
    ClientOptions, CopyMode, CopyOptions, ObjectMeta, ObjectStore, ObjectStoreExt, PutMode,
    PutOptions, PutPayload, RetryConfig,
};

pub(crate) use location::{Connection, Credentials, S3Url};
pub use options::S3Options;
pub(crate) use upload::Upload;

use super::{
    Backend, ContentId, Encoding, GcOptions, GcReport, IdPrefix, Local, Location, Maintain,
    ObjectWriter, Reads, Stats, Store, StoreError, StoreErrorKind, StoredObject, VerifyReport,
    WriteOptions,
};

/// The default bound on the local cache of verified objects: 1 GiB.
pub const DEFAULT_CACHE_BYTES: u64 = 1 << 30;

/// A bucket and prefix, the client that reaches them, and the local cache.
pub(crate) struct Remote {
    url: S3Url,
    location: Location,
    client: Arc<dyn ObjectStore>,
    /// What listing multipart uploads needs, which only S3 has (`None`
    /// over a client given for tests).
    listing: Option<Listing>,
    /// The process's runtime ([`runtime`]), shared by every S3 store.
    rt: &'static tokio::runtime::Runtime,
    /// A private local store of verified copies.
    cache: Local,
    cache_bytes: u64,
    counter: AtomicU64,
}

/// The one runtime of the process's S3 stores, started with the first of
/// them: two worker threads, however many stores are open. It lives as
/// long as the process, so no store's drop waits for it (which a thread
/// inside another runtime may not do).
fn runtime() -> Result<&'static tokio::runtime::Runtime, StoreError> {
    static RUNTIME: std::sync::OnceLock<Result<tokio::runtime::Runtime, String>> =
        std::sync::OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("spillway-s3")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| config(format!("start the S3 client's runtime: {e}")))
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("url", &self.url.display())
            .field("cache", &self.cache.root())
            .field("cache_bytes", &self.cache_bytes)
            .finish_non_exhaustive()
    }
}

/// Whether an object of `size` stored bytes in `encoding` can be content of
/// `bytes` bytes (when known): a raw object is exactly that long, a zstd
/// one at least holds its trailer.
fn could_hold(encoding: Encoding, size: u64, bytes: Option<u64>) -> bool {
    match encoding {
        Encoding::Raw => bytes.is_none_or(|b| b == size),
        Encoding::Zstd => size >= super::format::TRAILER_LEN as u64,
    }
}

/// The time (nanoseconds) a temporary key's name starts with, after the
/// `gc-` or `clock-` of gc's own keys: `tmp/<nanos>-<pid>-<n>.<ending>`.
fn temp_stamp(name: &str) -> Option<u128> {
    name.trim_start_matches("gc-")
        .trim_start_matches("clock-")
        .split('-')
        .next()
        .and_then(|n| n.parse().ok())
}

/// The S3 client, for what only S3 has (multipart listings), and how to
/// sign a request of its own.
pub(crate) struct Listing {
    s3: Arc<object_store::aws::AmazonS3>,
    endpoint: Option<String>,
    region: String,
    client_options: ClientOptions,
}

impl Listing {
    /// The bucket's URL: path-style below the endpoint, or the bucket's
    /// AWS host.
    fn base(&self, bucket: &str) -> String {
        match &self.endpoint {
            Some(e) => format!("{}/{bucket}", e.trim_end_matches('/')),
            None => format!("https://{bucket}.s3.{}.amazonaws.com", self.region),
        }
    }
}

/// The S3 client for `url` over `conn`.
fn s3_client(
    url: &S3Url,
    conn: &Connection,
) -> Result<(Arc<object_store::aws::AmazonS3>, Listing), StoreError> {
    let client_options = ClientOptions::new()
        .with_allow_http(conn.allow_http)
        .with_connect_timeout(Duration::from_secs(5))
        .with_timeout(Duration::from_secs(120));
    let mut b = match &conn.credentials {
        // The client's own chain: web identity, container endpoint.
        Credentials::Ambient | Credentials::TokenOnly(_) => AmazonS3Builder::from_env(),
        Credentials::Keys { id, secret, token } => {
            let b = AmazonS3Builder::new()
                .with_access_key_id(id)
                .with_secret_access_key(secret);
            match token {
                Some(t) => b.with_token(t),
                None => b,
            }
        }
    };
    b = b
        .with_bucket_name(&url.bucket)
        .with_region(&conn.region)
        .with_allow_http(conn.allow_http)
        .with_copy_if_not_exists(S3CopyIfNotExists::Multipart)
        .with_client_options(client_options.clone())
        .with_retry(RetryConfig {
            max_retries: 3,
            retry_timeout: Duration::from_secs(20),
            ..RetryConfig::default()
        });
    if let Some(e) = &conn.endpoint {
        b = b.with_endpoint(e);
    }
    let s3 = Arc::new(
        b.build()
            .map_err(|e| config(format!("S3 client for {}: {e}", url.display())))?,
    );
    let listing = Listing {
        s3: s3.clone(),
        endpoint: conn.endpoint.clone(),
        region: conn.region.clone(),
        client_options,
    };
    Ok((s3, listing))
}

fn config(reason: impl Into<String>) -> StoreError {
    StoreError::Config {
        reason: reason.into(),
    }
}

impl Remote {
    /// Opens the store `opts` describe. Nothing is sent yet.
    pub(crate) fn open(opts: &S3Options) -> Result<Remote, StoreError> {
        let url = opts.url.clone();
        let cache_dir = opts.cache_path()?;
        let rt = runtime()?;
        #[cfg(feature = "test-seams")]
        let given = opts.client.clone();
        #[cfg(not(feature = "test-seams"))]
        let given: Option<Arc<dyn ObjectStore>> = None;
        let (client, listing) = match given {
            Some(client) => (client, None),
            None => {
                let (s3, listing) = s3_client(&url, &opts.connection().map_err(config)?)?;
                (s3 as Arc<dyn ObjectStore>, Some(listing))
            }
        };
        Ok(Remote {
            location: Location::S3 {
                bucket: url.bucket.clone(),
                prefix: url.prefix.clone(),
            },
            url,
            client,
            listing,
            rt,
            cache: Local::open(&cache_dir)?,
            cache_bytes: opts.cache_bytes,
            counter: AtomicU64::new(0),
        })
    }

    /// `s3://BUCKET[/PREFIX]`.
    pub(crate) fn display(&self) -> String {
        self.url.display()
    }

    /// The key of `rel` below `PREFIX/v1/`.
    fn key(&self, rel: &str) -> Key {
        if self.url.prefix.is_empty() {
            Key::from(format!("{}/{rel}", super::LAYOUT_VERSION))
        } else {
            Key::from(format!(
                "{}/{}/{rel}",
                self.url.prefix,
                super::LAYOUT_VERSION
            ))
        }
    }

    /// `objects/<h0h1>/<rest>[.zst]`.
    fn object_rel(id: &ContentId, encoding: Encoding) -> String {
        let hex = id.to_hex();
        format!("objects/{}/{}{}", &hex[..2], &hex[2..], encoding.suffix())
    }

    pub(crate) fn object_key(&self, id: &ContentId, encoding: Encoding) -> Key {
        self.key(&Self::object_rel(id, encoding))
    }

    fn used_key(&self, id: &ContentId) -> Key {
        let hex = id.to_hex();
        self.key(&format!("used/{}/{}", &hex[..2], &hex[2..]))
    }

    /// A key as a path, as notices and listings print it: `s3://BUCKET/KEY`.
    pub(crate) fn url_of(&self, key: &Key) -> PathBuf {
        PathBuf::from(format!("s3://{}/{key}", self.url.bucket))
    }

    /// A fresh temporary key for an upload.
    fn temp_key(&self) -> Key {
        self.temp_key_ending("tmp")
    }

    /// A fresh temporary key, `tmp/<time>-<pid>-<n>.<ending>`: cleanup
    /// reads its age from the name.
    fn temp_key_ending(&self, ending: &str) -> Key {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        self.key(&format!(
            "tmp/{}-{}-{n}.{ending}",
            super::now_nanos(),
            std::process::id()
        ))
    }

    /// The process's S3 runtime.
    fn rt(&self) -> &'static tokio::runtime::Runtime {
        self.rt
    }

    /// Runs `f` to completion on the process's S3 runtime. A runtime
    /// cannot be entered from a thread that is already in one (an async
    /// harness calling from a task), so there `f` runs on a thread of its
    /// own while this one waits.
    fn block_on<F>(&self, f: F) -> F::Output
    where
        F: std::future::Future + Send,
        F::Output: Send,
    {
        let rt = self.rt();
        if tokio::runtime::Handle::try_current().is_err() {
            return rt.block_on(f);
        }
        crate::threads::wait_elsewhere("spillway-s3-wait", || rt.block_on(f))
    }

    fn err(&self, op: &'static str, key: &Key, e: object_store::Error) -> StoreError {
        if matches!(e, object_store::Error::NotFound { .. }) {
            if let Some(missing) = self.missing_bucket(op) {
                return missing;
            }
        }
        remote_error(op, self.url_of(key).display().to_string(), e)
    }

    /// The error to give when the bucket itself does not exist (S3 answers
    /// a HEAD of a key in a missing bucket with a bare 404, which would
    /// read as a missing object): one listing tells them apart.
    pub(crate) fn missing_bucket(&self, op: &'static str) -> Option<StoreError> {
        let prefix = self.key("");
        let e = self
            .block_on(self.client.list_with_delimiter(Some(&prefix)))
            .err()?;
        // The code is in the response body, deep in the error's chain.
        let mut said = String::new();
        let mut cause: Option<&dyn std::error::Error> = Some(&e);
        while let Some(c) = cause {
            said.push_str(&c.to_string());
            cause = c.source();
        }
        (matches!(e, object_store::Error::NotFound { .. }) || said.contains("NoSuchBucket")).then(
            || StoreError::Remote {
                op,
                target: format!("s3://{}", self.url.bucket),
                kind: StoreErrorKind::NotFound,
                source: format!(
                    "the bucket {} does not exist (NoSuchBucket): create it, or name another in the store URL",
                    self.url.bucket
                )
                .into(),
            },
        )
    }

    /// The object's metadata, or `None` when there is none.
    pub(crate) fn head(&self, key: &Key) -> Result<Option<ObjectMeta>, StoreError> {
        match self.block_on(self.client.head(key)) {
            Ok(m) => Ok(Some(m)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.err("inspect", key, e)),
        }
    }

    /// Creates `key` with `bytes` unless it exists: `Ok(false)` when it did.
    fn put_create(&self, key: &Key, bytes: bytes::Bytes) -> Result<bool, StoreError> {
        let opts = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        match self.block_on(self.client.put_opts(key, PutPayload::from(bytes), opts)) {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. }) => Ok(false),
            Err(e) => Err(self.err("publish", key, e)),
        }
    }

    /// Copies `from` to `to` unless `to` exists: `Ok(false)` when it did.
    ///
    /// The create-only copy is a multipart upload at `to` itself, whose key
    /// carries no time; a writer that dies during it leaves the upload
    /// there. So a marker (`tmp/<time>-<pid>-<n>.copying`, holding `to`)
    /// says that a live writer is copying to `to`, from before the upload
    /// starts until after it ends; cleanup aborts an upload at an object's
    /// key only when no marker younger than the grace names it.
    fn copy_create(&self, from: &Key, to: &Key) -> Result<bool, StoreError> {
        self.with_upload_marker(to, || {
            let opts = CopyOptions::default().with_mode(CopyMode::Create);
            match self.block_on(self.client.copy_opts(from, to, opts)) {
                Ok(()) => Ok(true),
                Err(object_store::Error::AlreadyExists { .. }) => Ok(false),
                Err(e) => Err(self.err("publish", to, e)),
            }
        })
    }

    /// Runs `upload`, a multipart upload at the object key `to`, between
    /// putting and removing the marker that names `to` for cleanup.
    fn with_upload_marker<T>(
        &self,
        to: &Key,
        upload: impl FnOnce() -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let marker = self.temp_key_ending("copying");
        let body = PutPayload::from(to.as_ref().as_bytes().to_vec());
        self.block_on(self.client.put(&marker, body))
            .map_err(|e| self.err("publish", &marker, e))?;
        let out = upload();
        // Left behind, it ages out like any temporary key.
        let _ = self.delete(&marker);
        out
    }

    /// Removes `key`; one that is already gone is not an error.
    fn delete(&self, key: &Key) -> Result<(), StoreError> {
        match self.block_on(self.client.delete(key)) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.err("remove", key, e)),
        }
    }

    /// Every key below `rel`.
    fn list(&self, rel: &str) -> Result<Vec<ObjectMeta>, StoreError> {
        let prefix = self.key(rel);
        self.block_on(async {
            let mut stream = self.client.list(Some(&prefix));
            let mut out = Vec::new();
            while let Some(m) = stream.next().await {
                out.push(m.map_err(|e| self.err("list", &prefix, e))?);
            }
            Ok(out)
        })
    }

    /// Marks an object used now, for gc (see [`maintain`]).
    fn touch(&self, id: &ContentId) -> Result<(), StoreError> {
        let key = self.used_key(id);
        self.block_on(self.client.put(&key, PutPayload::new()))
            .map(|_| ())
            .map_err(|e| self.err("mark used", &key, e))
    }

    /// An existing object of this id, marked used. Its bytes are not
    /// downloaded: its size is checked against its encoding (a raw object
    /// holds `bytes` bytes when the caller knows them), and reads verify
    /// the whole object. The mark is written before the object is looked
    /// at again, so a gc running meanwhile either sees the mark and puts
    /// the object back or has removed it before the look (no hit then).
    pub(crate) fn dedup_hit(
        &self,
        id: &ContentId,
        bytes: Option<u64>,
    ) -> Result<Option<StoredObject>, StoreError> {
        let mut touched = false;
        for encoding in Encoding::ALL {
            let key = self.object_key(id, encoding);
            let Some(mut meta) = self.head(&key)? else {
                continue;
            };
            if !could_hold(encoding, meta.size, bytes) {
                continue;
            }
            if !touched {
                self.touch(id)?;
                touched = true;
                match self.head(&key)? {
                    Some(m) => meta = m,
                    None => continue,
                }
            }
            let total = match (encoding, bytes) {
                (Encoding::Raw, _) => meta.size,
                (_, Some(b)) => b,
                (_, None) => self.trailer(&key, meta.size)?.unwrap_or(0),
            };
            return Ok(Some(StoredObject {
                id: *id,
                path: self.url_of(&key),
                bytes: total,
                stored_bytes: meta.size,
                encoding,
                truncated: false,
                dedup: true,
                modified: None,
            }));
        }
        Ok(None)
    }

    /// The decompressed size a zstd object's trailer records.
    fn trailer(&self, key: &Key, size: u64) -> Result<Option<u64>, StoreError> {
        let len = super::format::TRAILER_LEN as u64;
        if size < len {
            return Ok(None);
        }
        let bytes = self
            .block_on(self.client.get_range(key, size - len..size))
            .map_err(|e| self.err("read", key, e))?;
        Ok(super::format::parse_trailer(&bytes))
    }

    /// Where an object of this id is: its URL and encoding.
    pub(crate) fn locate(&self, id: &ContentId) -> Result<(PathBuf, Encoding), StoreError> {
        for encoding in Encoding::ALL {
            let key = self.object_key(id, encoding);
            if self.head(&key)?.is_some() {
                return Ok((self.url_of(&key), encoding));
            }
        }
        Err(self
            .missing_bucket("read")
            .unwrap_or_else(|| StoreError::NotFound { id: id.to_string() }))
    }
}

/// A client error as a store error, with the kind a harness branches on.
pub(crate) fn remote_error(op: &'static str, target: String, e: object_store::Error) -> StoreError {
    let kind = match &e {
        object_store::Error::NotFound { .. } => StoreErrorKind::NotFound,
        object_store::Error::PermissionDenied { .. }
        | object_store::Error::Unauthenticated { .. } => StoreErrorKind::PermissionDenied,
        _ => StoreErrorKind::OtherIo,
    };
    StoreError::Remote {
        op,
        target,
        kind,
        source: Box::new(e),
    }
}

/// Opens the store a location names: `s3://BUCKET/PREFIX`, or a directory.
pub(crate) fn open_location(location: &str) -> Result<Store, StoreError> {
    open(&S3Options::from_env(location)?)
}

/// Opens the store `opts` describe.
pub(crate) fn open(opts: &S3Options) -> Result<Store, StoreError> {
    Ok(Store::over(Arc::new(S3Backend(Arc::new(Remote::open(
        opts,
    )?)))))
}

/// The S3 backend of a [`Store`]: the remote, shared with the uploads in
/// flight.
#[derive(Debug)]
pub(crate) struct S3Backend(Arc<Remote>);

impl Backend for S3Backend {
    fn location(&self) -> &Location {
        &self.0.location
    }

    fn object_location(&self, id: &ContentId, encoding: Encoding) -> PathBuf {
        self.0.url_of(&self.0.object_key(id, encoding))
    }

    fn verified_hit(&self, id: &ContentId, bytes: u64) -> Result<Option<StoredObject>, StoreError> {
        self.0.verified_whole_hit(id, bytes)
    }

    fn dedup_hit_content(
        &self,
        id: &ContentId,
        content: &[u8],
    ) -> Result<Option<StoredObject>, StoreError> {
        // Downloaded and checked against its id, as a streamed write's
        // hit is: a damaged object is set aside, and the content written.
        self.0.verified_whole_hit(id, content.len() as u64)
    }

    fn writer(&self, opts: WriteOptions) -> Result<ObjectWriter, StoreError> {
        Ok(ObjectWriter::new(
            Box::new(Upload::new(Arc::clone(&self.0))),
            opts,
        ))
    }

    fn whole_writer(&self, opts: WriteOptions) -> Result<ObjectWriter, StoreError> {
        Ok(ObjectWriter::new(
            Box::new(Upload::whole(Arc::clone(&self.0))),
            opts,
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
        Ok(self)
    }

    fn maintenance(&self) -> Result<&dyn Maintain, StoreError> {
        Ok(self)
    }
}

impl Reads for S3Backend {
    fn locate(&self, id: &ContentId) -> Result<(PathBuf, Encoding), StoreError> {
        self.0.locate(id)
    }

    fn resolve_prefix(&self, prefix: &IdPrefix) -> Result<ContentId, StoreError> {
        self.0.resolve(prefix)
    }

    fn scan_good(
        &self,
        id: &ContentId,
        f: &mut dyn FnMut(Option<&[u8]>),
    ) -> Result<StoredObject, StoreError> {
        self.0.scan_good(id, f)
    }

    fn rescan(
        &self,
        id: &ContentId,
        _found: &StoredObject,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<StoredObject, StoreError> {
        // The cached copy, which `scan_good` verified; checked again.
        let mut info = self.0.with_cache(id, &mut |cache| {
            let (path, encoding) = cache.locate(id)?;
            cache.scan(id, &path, encoding, f)
        })?;
        info.path = self.object_location(id, info.encoding);
        Ok(info)
    }

    fn list(&self) -> Result<Vec<StoredObject>, StoreError> {
        Ok(self.0.list_objects()?.into_iter().map(|(o, _)| o).collect())
    }
}

impl Maintain for S3Backend {
    fn clean_temp(&self, grace: Duration) -> Result<usize, StoreError> {
        self.0.clean_temp(grace)
    }

    fn verify_all(
        &self,
        temp_grace: Duration,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<VerifyReport, StoreError> {
        self.0.verify_all(temp_grace, progress)
    }

    fn gc(
        &self,
        opts: &GcOptions,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<GcReport, StoreError> {
        self.0.gc(opts, progress)
    }

    fn stats(&self) -> Result<Stats, StoreError> {
        self.0.stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporary_names_give_their_time() {
        assert_eq!(temp_stamp("1700-42-0.tmp"), Some(1700));
        assert_eq!(temp_stamp("1700-42-3.copying"), Some(1700));
        assert_eq!(temp_stamp("gc-1800-42"), Some(1800));
        assert_eq!(temp_stamp("clock-1900-42"), Some(1900));
        assert_eq!(temp_stamp("notes.txt"), None);
    }

    #[test]
    fn an_object_could_hold_content_by_its_size() {
        let trailer = super::super::format::TRAILER_LEN as u64;
        assert!(could_hold(Encoding::Raw, 10, Some(10)));
        assert!(could_hold(Encoding::Raw, 10, None));
        assert!(!could_hold(Encoding::Raw, 9, Some(10)));
        assert!(could_hold(Encoding::Zstd, trailer, Some(1 << 20)));
        assert!(!could_hold(Encoding::Zstd, trailer - 1, Some(1)));
    }
}
