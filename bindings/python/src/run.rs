//! `run`: a command's merged stdout and stderr streamed through a stage, as
//! `spillway run` does, with the GIL released while it runs.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use pyo3::exceptions::{PyKeyboardInterrupt, PyOSError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::spiller::{finished, Spiller};
use crate::store::seconds;
use spillway_process::stop::{SIGINT, SIGTERM};
use spillway_process::{run_merged, Cancel, Finished, RunError, RunOptions};

/// Runs `args` to the end of its output. Returns a dict: the outcome's
/// fields plus `returncode` (negative for a signal, as `subprocess` says),
/// `timed_out` and `output_cut`. A Python signal (Ctrl-C) that arrives
/// meanwhile is passed on to the command; once it has ended and its output
/// is stored, the exception is raised.
#[pyfunction]
#[pyo3(signature = (args, spiller, timeout=None, drain=1.0, cwd=None, env=None, stdin_null=true, token=None))]
#[allow(clippy::too_many_arguments)]
pub fn run<'py>(
    py: Python<'py>,
    args: Vec<OsString>,
    spiller: &Spiller,
    timeout: Option<f64>,
    drain: f64,
    cwd: Option<PathBuf>,
    env: Option<Vec<(OsString, OsString)>>,
    stdin_null: bool,
    token: Option<&RunToken>,
) -> PyResult<Bound<'py, PyAny>> {
    let Some((program, rest)) = args.split_first() else {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "args is empty: give the program to run",
        ));
    };
    let mut cmd = Command::new(program);
    cmd.args(rest);
    if stdin_null {
        cmd.stdin(Stdio::null());
    }
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    if let Some(vars) = env {
        cmd.env_clear().envs(vars);
    }
    let mut opts = RunOptions::default();
    opts.drain = seconds("drain", drain)?;
    opts.timeout = timeout.map(|t| seconds("timeout", t)).transpose()?;
    let forward = token.map_or_else(Cancel::new, |t| t.forward.clone());
    opts.forward = Some(forward.clone());
    // The command runs on its own thread so that this one can wake up to
    // let Python's signal handlers run.
    let stage = spiller.inner().stage();
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("spillway-run".into())
        .spawn(move || {
            let mut stage = stage;
            let ran = run_merged(&mut cmd, &opts, &mut stage, &mut |_| {});
            let _ = tx.send((ran, stage));
        })
        .map_err(|e| {
            PyOSError::new_err(format!("cannot start a thread to run the command: {e}"))
        })?;
    let mut pending: Option<PyErr> = None;
    let mut rx = rx;
    let (ran, stage) = loop {
        let (got, back) = py.detach(move || (rx.recv_timeout(Duration::from_millis(50)), rx));
        rx = back;
        match got {
            Ok(done) => break done,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Err(e) = py.check_signals() {
                    let sig = if e.is_instance_of::<PyKeyboardInterrupt>(py) {
                        SIGINT
                    } else {
                        SIGTERM
                    };
                    forward.raise(sig);
                    pending.get_or_insert(e);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(PyOSError::new_err(
                    "internal: the run thread ended without a result",
                ));
            }
        }
    };
    let ran: Finished = match ran {
        Ok(f) => f,
        // Not found, not executable: the OSError subclass subprocess raises.
        Err(RunError::Spawn(e)) => return Err(e.into()),
        Err(RunError::Io(e)) => return Err(e.into()),
        Err(e) => return Err(PyOSError::new_err(e.to_string())),
    };
    let result = py.detach(move || stage.finish());
    if let Some(e) = pending {
        return Err(e);
    }
    let outcome = finished(py, result)?;
    let dict = outcome.cast_into::<PyDict>()?;
    let status = ran.status;
    let code = match (status.code(), status.signal()) {
        (Some(c), _) => c,
        (None, Some(s)) => -s,
        (None, None) => -1,
    };
    dict.set_item("returncode", code)?;
    dict.set_item("timed_out", ran.timed_out)?;
    dict.set_item("output_cut", ran.output_cut)?;
    Ok(dict.into_any())
}

/// A handle that passes a signal to a running command: how `run_async`
/// stops the command when its task is cancelled.
#[pyclass(module = "spillway._spillway", frozen)]
pub struct RunToken {
    forward: Cancel,
}

#[pymethods]
impl RunToken {
    #[new]
    fn new() -> Self {
        RunToken {
            forward: Cancel::new(),
        }
    }

    /// Passes signal `signum` to the command (its process group).
    fn signal(&self, signum: i32) {
        self.forward.raise(signum);
    }
}
