//! `NativeSpiller` and `NativeStage`: the policy applied to whole outputs
//! and to streams, every step that touches the disk on the thread pool.

use std::sync::{Arc, Mutex, MutexGuard};

use napi::bindgen_prelude::{AsyncTask, Buffer};
use napi::{Env, Task};
use napi_derive::napi;

use crate::errors;
use crate::outcome::StageResult;
use crate::store::NativeStore;

/// A validated policy over an open store.
#[napi]
pub struct NativeSpiller {
    inner: spillway::Spiller,
}

#[napi]
impl NativeSpiller {
    /// `config` is the policy as JSON with the config file's keys;
    /// `name_store` puts the store in the read hint, as the CLI does for a
    /// store that is not the default one.
    #[napi(constructor)]
    pub fn new(store: String, config: String, name_store: bool) -> napi::Result<Self> {
        let config: spillway::PolicyConfig =
            serde_json::from_str(&config).map_err(|e| errors::coded("ERR_SPILLWAY_POLICY", e))?;
        // A budget too small is only known with the store (its name and
        // paths are in the notice); every other bad value is known now.
        if let Err(e) = config.build() {
            if !e.is_budget_too_small() {
                return Err(errors::policy(e));
            }
        }
        let store = spillway::Store::open_url(&store).map_err(errors::store)?;
        // The command line's read hint, as the CLI gives it.
        let location = name_store.then(|| store.location().to_string());
        let hint = spillway_process::cli_read_hint(location.as_deref());
        let policy = config
            .build_for_store(&store, &hint)
            .map_err(errors::policy)?;
        let inner = spillway::Spiller::new(policy, store).map_err(errors::policy)?;
        Ok(NativeSpiller { inner })
    }

    /// The policy in force, as JSON with the config file's keys.
    #[napi]
    pub fn policy(&self) -> napi::Result<String> {
        serde_json::to_string(&self.inner.policy().to_config())
            .map_err(|e| napi::Error::from_reason(e.to_string()))
    }

    /// The store this spiller writes to.
    #[napi]
    pub fn store(&self) -> NativeStore {
        NativeStore::from_inner(self.inner.store().clone())
    }

    /// Applies the policy to a whole output, on the thread pool.
    #[napi(ts_return_type = "Promise<StageResult>")]
    pub fn apply(&self, input: Buffer) -> AsyncTask<ApplyTask> {
        AsyncTask::new(ApplyTask {
            spiller: self.inner.clone(),
            input,
        })
    }

    /// A stage that takes the output in chunks.
    #[napi]
    pub fn stage(&self) -> NativeStage {
        NativeStage {
            inner: Arc::new(Mutex::new(Some(self.inner.stage()))),
        }
    }
}

/// `apply` on the thread pool. The buffer is held, not copied.
pub struct ApplyTask {
    spiller: spillway::Spiller,
    input: Buffer,
}

impl Task for ApplyTask {
    type Output = Result<spillway::Outcome, spillway::FinishError>;
    type JsValue = StageResult;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(self.spiller.apply(&self.input))
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<StageResult> {
        Ok(output.into())
    }
}

type Shared = Arc<Mutex<Option<spillway::Stage>>>;

fn lock(s: &Shared) -> MutexGuard<'_, Option<spillway::Stage>> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}

fn finished() -> napi::Error {
    errors::coded(
        "ERR_SPILLWAY_STAGE_FINISHED",
        "the stage is finished: no more writes",
    )
}

/// A stream being measured, previewed and stored.
#[napi]
pub struct NativeStage {
    inner: Shared,
}

#[napi]
impl NativeStage {
    /// Feeds a chunk on the thread pool. Writes must be awaited in order
    /// (the `Writable` adapter does).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn write(&self, chunk: Buffer) -> AsyncTask<WriteTask> {
        AsyncTask::new(WriteTask {
            stage: self.inner.clone(),
            chunk,
        })
    }

    /// Ends the input and returns the outcome, on the thread pool.
    #[napi(ts_return_type = "Promise<StageResult>")]
    pub fn finish(&self) -> AsyncTask<FinishTask> {
        AsyncTask::new(FinishTask {
            stage: self.inner.clone(),
        })
    }

    /// Drops the stage without storing anything.
    #[napi]
    pub fn abort(&self) {
        drop(lock(&self.inner).take());
    }

    /// Bytes fed so far.
    #[napi(getter)]
    pub fn bytes_written(&self) -> f64 {
        lock(&self.inner)
            .as_ref()
            .map_or(0.0, |s| s.bytes_written() as f64)
    }

    /// Whether `finish` or `abort` was called.
    #[napi(getter)]
    pub fn finished(&self) -> bool {
        lock(&self.inner).is_none()
    }
}

/// One chunk fed on the thread pool.
pub struct WriteTask {
    stage: Shared,
    chunk: Buffer,
}

impl Task for WriteTask {
    type Output = ();
    type JsValue = ();

    fn compute(&mut self) -> napi::Result<()> {
        match lock(&self.stage).as_mut() {
            Some(stage) => {
                stage.feed(&self.chunk);
                Ok(())
            }
            None => Err(finished()),
        }
    }

    fn resolve(&mut self, _env: Env, _output: ()) -> napi::Result<()> {
        Ok(())
    }
}

/// `finish` on the thread pool.
pub struct FinishTask {
    stage: Shared,
}

impl Task for FinishTask {
    type Output = Result<spillway::Outcome, spillway::FinishError>;
    type JsValue = StageResult;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let stage = lock(&self.stage).take().ok_or_else(finished)?;
        Ok(stage.finish())
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<StageResult> {
        Ok(output.into())
    }
}
