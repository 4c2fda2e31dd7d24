//! Running the core without the GIL, answering Ctrl-C.
//!
//! Only the main thread runs Python's signal handlers, and only with the GIL, so a long call on
//! the main thread polls: work it does itself polls a [`Cancel`] whose check a ticker asks for
//! every few milliseconds (the check takes the GIL and runs the handlers); parallel work runs on
//! rayon's pool while this thread waits, checking the handlers between waits, and cancels the
//! work when one raises. The exception the handler raised (`KeyboardInterrupt` for Ctrl-C) is the
//! call's. A call on another thread cannot be interrupted by a signal and polls nothing.
//!
//! Small work (below [`DETACH_MIN_WORK`] elements) keeps the GIL: releasing it would cost more
//! than the work, which ends within microseconds.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use pyo3::prelude::*;

use super::error::to_pyerr;
use super::ffi;
use crate::cancel::Cancel;
use crate::error::{Error, Result};

/// Below this many elements in a call, holding the GIL is cheaper than releasing it.
pub const DETACH_MIN_WORK: usize = 4096;

/// How often a working or waiting main thread checks Python's signal handlers.
const SIGNAL_POLL: Duration = Duration::from_millis(4);

/// `threading.main_thread().ident`, read when the module is imported.
static MAIN_THREAD: OnceLock<u64> = OnceLock::new();

/// Remember which thread is Python's main thread (at module import).
pub fn init(py: Python<'_>) -> PyResult<()> {
    let main = py
        .import("threading")?
        .call_method0("main_thread")?
        .getattr("ident")?
        .extract::<u64>()?;
    let _ = MAIN_THREAD.set(main);
    Ok(())
}

fn on_main_thread() -> bool {
    MAIN_THREAD.get() == Some(&ffi::thread_ident())
}

/// The error of a call that ended with `err`: for an interruption, what the signal handler
/// raised.
fn convert(py: Python<'_>, err: Error, raised: Option<PyErr>) -> PyErr {
    match (err, raised) {
        (Error::Interrupted, Some(raised)) => raised,
        (err, _) => to_pyerr(py, err),
    }
}

/// A [`Cancel`] for work this thread does itself: on the main thread, a ticker asks its polls to
/// run Python's signal handlers every few milliseconds (taking the GIL for it), and the exception
/// a handler raises cancels the work and is kept to be raised; elsewhere it is never cancelled.
/// Other threads may poll it too (they see it cancelled, and never run the handlers).
pub struct Signals {
    pub cancel: Cancel,
    _ticks: Option<crate::cancel::Ticks>,
    raised: Arc<Mutex<Option<PyErr>>>,
}

impl Signals {
    pub fn new() -> Self {
        let raised: Arc<Mutex<Option<PyErr>>> = Arc::default();
        if !on_main_thread() {
            return Signals {
                cancel: Cancel::never(),
                _ticks: None,
                raised,
            };
        }
        let keep = raised.clone();
        let (cancel, ticks) = Cancel::checked_every(SIGNAL_POLL, move || {
            Python::attach(|py| match py.check_signals() {
                Ok(()) => false,
                Err(err) => {
                    if let Ok(mut slot) = keep.lock() {
                        *slot = Some(err);
                    }
                    true
                }
            })
        });
        Signals {
            cancel,
            _ticks: Some(ticks),
            raised,
        }
    }

    /// The Python exception for `err`: for an interruption, what the signal handler raised.
    pub fn error(&self, py: Python<'_>, err: Error) -> PyErr {
        let raised = self.raised.lock().ok().and_then(|mut slot| slot.take());
        convert(py, err, raised)
    }
}

/// Run `work` on this thread: with the GIL when it is smaller than [`DETACH_MIN_WORK`], else
/// without it, interruptible from the main thread.
pub fn run_here<T: Send>(
    py: Python<'_>,
    work_size: usize,
    work: impl FnOnce(&Cancel) -> Result<T> + Send,
) -> PyResult<T> {
    if work_size < DETACH_MIN_WORK {
        return work(&Cancel::never()).map_err(|e| to_pyerr(py, e));
    }
    let signals = Signals::new();
    py.detach(|| work(&signals.cancel))
        .map_err(|e| signals.error(py, e))
}

/// Run `work` on this thread without the GIL, whatever its size (for work that takes a lock: a
/// thread waiting for a lock must not hold the GIL), interruptible from the main thread.
pub fn run_detached<T: Send>(
    py: Python<'_>,
    work: impl FnOnce(&Cancel) -> Result<T> + Send,
) -> PyResult<T> {
    let signals = Signals::new();
    py.detach(|| work(&signals.cancel))
        .map_err(|e| signals.error(py, e))
}

/// Run `work` (which may use rayon's pool) without the GIL; on the main thread it runs as a task
/// of the pool while this thread waits, checking Python's signal handlers, and is cancelled when
/// one raises.
pub fn run_pool<T: Send>(
    py: Python<'_>,
    work: impl FnOnce(&Cancel) -> Result<T> + Send,
) -> PyResult<T> {
    run_pool_in(py, None, work)
}

/// rayon's `in_place_scope` on `pool`, or on the global pool.
fn in_place_scope<'scope, R>(
    pool: Option<&rayon::ThreadPool>,
    op: impl FnOnce(&rayon::Scope<'scope>) -> R,
) -> R {
    match pool {
        Some(pool) => pool.in_place_scope(op),
        None => rayon::in_place_scope(op),
    }
}

/// [`run_pool`] on `pool` (a pool built for the call) instead of rayon's global pool: the work's
/// parallel iterators run on the pool they are called from.
pub fn run_pool_in<T: Send>(
    py: Python<'_>,
    pool: Option<&rayon::ThreadPool>,
    work: impl FnOnce(&Cancel) -> Result<T> + Send,
) -> PyResult<T> {
    if !on_main_thread() {
        let work = || work(&Cancel::never());
        return py
            .detach(|| match pool {
                Some(pool) => pool.install(work),
                None => work(),
            })
            .map_err(|e| to_pyerr(py, e));
    }
    let cancel = Cancel::new();
    let done = AtomicBool::new(false);
    let waiter = std::thread::current();
    let mut result = None;
    let mut raised = None;
    in_place_scope(pool, |scope| {
        scope.spawn(|_| {
            result = Some(work(&cancel));
            done.store(true, Ordering::Release);
            waiter.unpark();
        });
        let wait = || {
            py.detach(|| {
                while !done.load(Ordering::Acquire) {
                    std::thread::park_timeout(SIGNAL_POLL);
                    if !done.load(Ordering::Acquire) {
                        return false;
                    }
                }
                true
            })
        };
        while !wait() {
            if let Err(err) = py.check_signals() {
                raised = Some(err);
                cancel.cancel();
                // The work stops at its next poll; the scope waits for it without the GIL.
                py.detach(|| {
                    while !done.load(Ordering::Acquire) {
                        std::thread::park_timeout(SIGNAL_POLL);
                    }
                });
                break;
            }
        }
    });
    match result {
        Some(Ok(value)) if raised.is_none() => Ok(value),
        Some(Err(err)) => Err(convert(py, err, raised)),
        _ => Err(raised.unwrap_or_else(|| to_pyerr(py, Error::Interrupted))),
    }
}
