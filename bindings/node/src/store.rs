//! `NativeStore`: reading, resolving, verifying and collecting, on the
//! thread pool. Reports come back as JSON text (small), outcomes as objects.

use std::time::Duration;

use napi::bindgen_prelude::{AsyncTask, Buffer};
use napi::{Env, Task};
use napi_derive::napi;
use serde::Deserialize;

use crate::errors;
use spillway::References;
use spillway::{ContentId, GcOptions, IdPrefix, Selection};

/// An open spill store.
#[napi]
pub struct NativeStore {
    inner: spillway::Store,
}

impl NativeStore {
    /// The binding of an open store.
    pub fn from_inner(inner: spillway::Store) -> Self {
        NativeStore { inner }
    }
}

fn to_json(v: &impl serde::Serialize) -> napi::Result<String> {
    serde_json::to_string(v).map_err(|e| napi::Error::from_reason(e.to_string()))
}

fn id(store: &spillway::Store, text: &str) -> napi::Result<ContentId> {
    if let Ok(id) = text.parse::<ContentId>() {
        return Ok(id);
    }
    let prefix: IdPrefix = text
        .parse()
        .map_err(|e| errors::coded("ERR_SPILLWAY_ID", e))?;
    store.resolve(&prefix).map_err(errors::store)
}

fn seconds(what: &str, s: f64) -> napi::Result<Duration> {
    Duration::try_from_secs_f64(s).map_err(|_| {
        errors::coded(
            "ERR_SPILLWAY_INVALID_ARG",
            format!("{what} must be a finite number of seconds, 0 or more; got {s}"),
        )
    })
}

/// What a store call does, run on the thread pool.
pub enum Op {
    /// An object's bytes.
    Read(String, Selection),
    /// A prefix's full id.
    Resolve(String),
    /// Every object, as JSON.
    List,
    /// Verify everything, as JSON.
    Verify(Duration),
    /// Collect, as JSON.
    Gc(GcOptions),
    /// Totals, as JSON.
    Stats,
    /// Store bytes whole, as JSON.
    Put(Buffer, spillway::WriteOptions),
}

/// A store call's result.
pub enum Done {
    /// Bytes.
    Bytes(Vec<u8>),
    /// Text (an id or JSON).
    Text(String),
}

/// A store call on the thread pool.
pub struct StoreTask {
    store: spillway::Store,
    op: Option<Op>,
}

impl Task for StoreTask {
    type Output = Done;
    type JsValue = napi::Either<Buffer, String>;

    fn compute(&mut self) -> napi::Result<Done> {
        let s = &self.store;
        let op = self
            .op
            .take()
            .ok_or_else(|| napi::Error::from_reason("internal: a store task ran twice"))?;
        Ok(match op {
            Op::Read(text, sel) => {
                let id = id(s, &text)?;
                Done::Bytes(s.read(&id, &sel).map_err(errors::store)?)
            }
            Op::Resolve(text) => Done::Text(id(s, &text)?.to_string()),
            Op::List => Done::Text(to_json(&s.list().map_err(errors::store)?)?),
            Op::Verify(grace) => Done::Text(to_json(
                &s.verify_all(grace, &mut |_, _| {}).map_err(errors::store)?,
            )?),
            Op::Gc(opts) => Done::Text(to_json(
                &s.gc(&opts, &mut |_, _| {}).map_err(errors::store)?,
            )?),
            Op::Put(data, opts) => {
                Done::Text(to_json(&s.put(&data, opts).map_err(errors::store)?)?)
            }
            Op::Stats => {
                let stats = s.stats().map_err(errors::store)?;
                let mut v = serde_json::to_value(&stats)
                    .map_err(|e| napi::Error::from_reason(e.to_string()))?;
                v["ratio"] = serde_json::json!(stats.ratio());
                Done::Text(v.to_string())
            }
        })
    }

    fn resolve(&mut self, _env: Env, done: Done) -> napi::Result<Self::JsValue> {
        Ok(match done {
            Done::Bytes(b) => napi::Either::A(b.into()),
            Done::Text(t) => napi::Either::B(t),
        })
    }
}

/// gc's options as the JavaScript layer passes them.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GcArgs {
    max_bytes: Option<u64>,
    max_age_seconds: Option<f64>,
    #[serde(default)]
    keep_texts: Vec<String>,
    #[serde(default)]
    dry_run: bool,
    grace_seconds: f64,
}

#[napi]
impl NativeStore {
    /// Opens (creating it lazily, private) the store at `path`.
    #[napi(constructor)]
    pub fn new(path: String) -> napi::Result<Self> {
        Ok(NativeStore {
            inner: spillway::Store::open_url(&path).map_err(errors::store)?,
        })
    }

    /// The store's directory.
    #[napi(getter)]
    pub fn root(&self) -> String {
        self.inner.location().to_string()
    }

    fn task(&self, op: Op) -> AsyncTask<StoreTask> {
        AsyncTask::new(StoreTask {
            store: self.inner.clone(),
            op: Some(op),
        })
    }

    /// An object's bytes (all, `lines` "A:B" or `bytes` "A:B"), verified.
    #[napi(ts_return_type = "Promise<Buffer>")]
    pub fn read(
        &self,
        id: String,
        lines: Option<String>,
        bytes: Option<String>,
    ) -> napi::Result<AsyncTask<StoreTask>> {
        let range = |e: spillway::RangeError| errors::coded("ERR_SPILLWAY_RANGE", e);
        let sel = match (lines, bytes) {
            (Some(_), Some(_)) => {
                return Err(errors::coded(
                    "ERR_SPILLWAY_RANGE",
                    "give lines or bytes, not both",
                ))
            }
            (Some(l), None) => Selection::Lines(l.parse().map_err(range)?),
            (None, Some(b)) => Selection::Bytes(b.parse().map_err(range)?),
            (None, None) => Selection::All,
        };
        Ok(self.task(Op::Read(id, sel)))
    }

    /// The full id of the one object whose id starts with `prefix`.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn resolve(&self, prefix: String) -> AsyncTask<StoreTask> {
        self.task(Op::Resolve(prefix))
    }

    /// Every object, as JSON.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn list(&self) -> AsyncTask<StoreTask> {
        self.task(Op::List)
    }

    /// Re-hashes every object (corrupt ones are quarantined); JSON report.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn verify(&self, grace_seconds: f64) -> napi::Result<AsyncTask<StoreTask>> {
        Ok(self.task(Op::Verify(seconds("grace", grace_seconds)?)))
    }

    /// Removes objects by quota and age; `args` is JSON; JSON report.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn gc(&self, args: String) -> napi::Result<AsyncTask<StoreTask>> {
        let a: GcArgs = serde_json::from_str(&args)
            .map_err(|e| errors::coded("ERR_SPILLWAY_INVALID_ARG", e))?;
        let mut opts = GcOptions::default();
        opts.max_bytes = a.max_bytes;
        opts.max_age = a
            .max_age_seconds
            .map(|s| seconds("maxAge", s))
            .transpose()?;
        let mut keep = References::default();
        for t in &a.keep_texts {
            keep.add_text(t);
        }
        opts.keep = keep;
        opts.dry_run = a.dry_run;
        opts.temp_grace = seconds("grace", a.grace_seconds)?;
        Ok(self.task(Op::Gc(opts)))
    }

    /// Stores `data` whole (once: the same bytes are a dedup hit) and
    /// returns the stored object as JSON.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn put(
        &self,
        data: Buffer,
        compression: String,
        level: Option<i32>,
        durable: bool,
    ) -> napi::Result<AsyncTask<StoreTask>> {
        let opts = match compression.as_str() {
            "none" => spillway::WriteOptions::raw(),
            "zstd" => spillway::Compression::Zstd {
                level: level.unwrap_or(spillway::DEFAULT_ZSTD_LEVEL),
            }
            .write_options(spillway::Durability::Durable),
            other => {
                return Err(errors::coded(
                    "ERR_SPILLWAY_INVALID_ARG",
                    format!("compression must be none or zstd, got {other:?}"),
                ))
            }
        };
        let durability = if durable {
            spillway::Durability::Durable
        } else {
            spillway::Durability::Relaxed
        };
        Ok(self.task(Op::Put(data, opts.durability(durability))))
    }

    /// Totals over the store, as JSON.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn stats(&self) -> AsyncTask<StoreTask> {
        self.task(Op::Stats)
    }
}

/// A size as the CLI takes it (`65536`, `64KiB`), in bytes.
#[napi]
pub fn parse_size(text: String) -> napi::Result<f64> {
    text.parse::<spillway::ByteSize>()
        .map(|s| s.get() as f64)
        .map_err(|e| errors::coded("ERR_SPILLWAY_INVALID_ARG", e))
}

/// The store to use when none is named (see `spillway_process::default_store`).
#[napi(object)]
pub struct JsDefaultStore {
    /// A directory, or an `s3://` URL from `SPILLWAY_STORE`.
    pub location: String,
    /// Whether the user chose it (`SPILLWAY_STORE`): notices then name it.
    pub chosen: bool,
}

/// The store to use when none is named: the rule every front end shares;
/// `null` when no variable says where.
#[napi]
pub fn default_store() -> Option<JsDefaultStore> {
    spillway_process::default_store().map(|d| JsDefaultStore {
        location: d.location,
        chosen: d.chosen,
    })
}

/// A duration as the CLI takes it (`90s`, `7d`), in seconds.
#[napi]
pub fn parse_duration(text: String) -> napi::Result<f64> {
    text.parse::<spillway::HumanDuration>()
        .map(|d| d.get().as_secs_f64())
        .map_err(|e| errors::coded("ERR_SPILLWAY_INVALID_ARG", e))
}
