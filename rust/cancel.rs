//! Cooperative cancellation of long core calls (Ctrl-C in the bindings).
//!
//! Every loop whose work grows with its input polls a [`Cancel`] at a bounded interval (a row of a
//! match search, a label, a cell, a block of pairs) and, once it is cancelled, stops and returns
//! [`Error::Interrupted`]; a computation stopped early only ever drops what it built. Polling a
//! [`Cancel::never`] handle costs one branch, so the short calls that take one keep their speed.
//!
//! Who cancels: a caller that waits (the bindings' thread watching Python's signals while the work
//! runs on rayon's pool) calls [`Cancel::cancel`]; a caller that does the work itself gives a
//! *check* ([`Cancel::checked_every`]) that a ticker thread asks it to run every few milliseconds,
//! at its next poll, on its own thread (the bindings: take the GIL and run Python's signal
//! handlers, which only the main thread may).

use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread::ThreadId;
use std::time::Duration;

use crate::error::{Error, Result};

const RUNNING: u8 = 0;
/// A tick asks the owner thread to run its check at its next poll.
const CHECK_DUE: u8 = 1;
const CANCELLED: u8 = 2;

/// A cancellation handle: cheap to clone (the clones share one state), polled by long loops.
#[derive(Clone, Default)]
pub struct Cancel(Option<Arc<Shared>>);

struct Shared {
    state: AtomicU8,
    check: Option<Check>,
}

/// A check the owner thread runs when a tick asks for it; true cancels.
struct Check {
    run: Box<dyn Fn() -> bool + Send + Sync>,
    owner: ThreadId,
}

impl Cancel {
    /// A handle that is never cancelled.
    pub const fn never() -> Cancel {
        Cancel(None)
    }

    /// A handle cancelled only by [`Cancel::cancel`].
    pub fn new() -> Cancel {
        Cancel(Some(Arc::new(Shared {
            state: AtomicU8::new(RUNNING),
            check: None,
        })))
    }

    /// A handle the calling thread polls while it works: about every `every`, its next poll runs
    /// `check` (on this thread), and cancels when that returns true. The ticks stop when the
    /// returned guard is dropped. Without a ticker (a thread could not be started) no tick comes,
    /// and the handle is cancelled only by [`Cancel::cancel`].
    pub fn checked_every(
        every: Duration,
        check: impl Fn() -> bool + Send + Sync + 'static,
    ) -> (Cancel, Ticks) {
        let shared = Arc::new(Shared {
            state: AtomicU8::new(RUNNING),
            check: Some(Check {
                run: Box::new(check),
                owner: std::thread::current().id(),
            }),
        });
        let ticks = Ticks::start(&shared, every);
        (Cancel(Some(shared)), ticks)
    }

    /// Cancel: every poll from now on says so.
    pub fn cancel(&self) {
        if let Some(shared) = &self.0 {
            shared.state.store(CANCELLED, Relaxed);
        }
    }

    /// Whether the work must stop. Runs the owner's check when a tick asked for it.
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        match &self.0 {
            None => false,
            Some(shared) => {
                let state = shared.state.load(Relaxed);
                state != RUNNING && shared.poll_slowly(state)
            }
        }
    }

    /// `Err(Interrupted)` once cancelled.
    #[inline]
    pub fn check(&self) -> Result<()> {
        if self.is_cancelled() {
            Err(Error::Interrupted)
        } else {
            Ok(())
        }
    }

    /// Whether this handle can never be cancelled.
    pub fn is_never(&self) -> bool {
        self.0.is_none()
    }
}

impl Shared {
    #[cold]
    #[inline(never)]
    fn poll_slowly(&self, state: u8) -> bool {
        if state == CANCELLED {
            return true;
        }
        let Some(check) = &self.check else {
            return false;
        };
        if std::thread::current().id() != check.owner {
            return false;
        }
        if self
            .state
            .compare_exchange(CHECK_DUE, RUNNING, Relaxed, Relaxed)
            .is_err()
        {
            return self.state.load(Relaxed) == CANCELLED;
        }
        if (check.run)() {
            self.state.store(CANCELLED, Relaxed);
            return true;
        }
        false
    }
}

/// The ticks of one [`Cancel::checked_every`] handle; dropping this stops them.
pub struct Ticks {
    watched: Option<(Arc<Ticker>, Weak<Shared>)>,
}

impl Drop for Ticks {
    fn drop(&mut self) {
        if let Some((ticker, shared)) = self.watched.take() {
            if let Ok(mut state) = ticker.state.lock() {
                state.watched.retain(|(w, _)| !Weak::ptr_eq(w, &shared));
            }
        }
    }
}

impl Ticks {
    fn start(shared: &Arc<Shared>, every: Duration) -> Ticks {
        let Some(ticker) = Ticker::get() else {
            return Ticks { watched: None };
        };
        let weak = Arc::downgrade(shared);
        match ticker.state.lock() {
            Ok(mut state) => {
                state.watched.push((weak.clone(), every));
                if state.idle {
                    ticker.wake.notify_one();
                }
            }
            Err(_) => return Ticks { watched: None },
        }
        Ticks {
            watched: Some((ticker, weak)),
        }
    }
}

/// One thread per process that ticks the handles being watched. With none, it goes on ticking
/// for [`TICKER_GRACE`] (so calls in a row register with a lock, not a wake-up), then sleeps on a
/// condition variable.
struct Ticker {
    state: Mutex<TickerState>,
    wake: Condvar,
}

struct TickerState {
    watched: Vec<(Weak<Shared>, Duration)>,
    /// Asleep on the condition variable: a new handle must wake it.
    idle: bool,
}

/// How long the ticker goes on after the last handle is dropped.
const TICKER_GRACE: Duration = Duration::from_millis(200);

/// The tick interval while the ticker runs with no handle.
const IDLE_TICK: Duration = Duration::from_millis(5);

/// The ticker and the process it was started in (a forked child starts its own).
static TICKER: Mutex<Option<(u32, Arc<Ticker>)>> = Mutex::new(None);

impl Ticker {
    fn get() -> Option<Arc<Ticker>> {
        let mut slot = TICKER.lock().ok()?;
        let pid = std::process::id();
        if let Some((started_in, ticker)) = slot.as_ref() {
            if *started_in == pid {
                return Some(ticker.clone());
            }
        }
        let ticker = Arc::new(Ticker {
            state: Mutex::new(TickerState {
                watched: Vec::new(),
                idle: false,
            }),
            wake: Condvar::new(),
        });
        let runs = ticker.clone();
        std::thread::Builder::new()
            .name("memdedup-ticker".into())
            .stack_size(64 * 1024)
            .spawn(move || runs.run())
            .ok()?;
        *slot = Some((pid, ticker.clone()));
        Some(ticker)
    }

    fn run(&self) {
        let mut busy = std::time::Instant::now();
        loop {
            let every = {
                let Ok(mut state) = self.state.lock() else {
                    return;
                };
                if state.watched.is_empty() && busy.elapsed() >= TICKER_GRACE {
                    state.idle = true;
                    while state.watched.is_empty() {
                        state = match self.wake.wait(state) {
                            Ok(state) => state,
                            Err(_) => return,
                        };
                    }
                    state.idle = false;
                }
                if !state.watched.is_empty() {
                    busy = std::time::Instant::now();
                }
                state.watched.iter().map(|&(_, every)| every).min()
            };
            std::thread::sleep(every.unwrap_or(IDLE_TICK));
            let Ok(state) = self.state.lock() else {
                return;
            };
            for (weak, _) in state.watched.iter() {
                if let Some(shared) = weak.upgrade() {
                    let _ = shared
                        .state
                        .compare_exchange(RUNNING, CHECK_DUE, Relaxed, Relaxed);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn never_and_cancel() {
        let never = Cancel::never();
        assert!(!never.is_cancelled() && never.is_never());
        never.cancel();
        assert!(!never.is_cancelled());
        let c = Cancel::new();
        let shared = c.clone();
        assert!(!c.is_cancelled());
        shared.cancel();
        assert!(c.is_cancelled());
        assert_eq!(c.check(), Err(Error::Interrupted));
    }

    #[test]
    fn the_owner_runs_its_check_when_ticked() {
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = calls.clone();
        let (c, ticks) = Cancel::checked_every(Duration::from_millis(1), move || {
            counted.fetch_add(1, Relaxed) >= 2
        });
        // Another thread polling never runs the owner's check.
        let other = c.clone();
        std::thread::spawn(move || {
            for _ in 0..50 {
                assert!(!other.is_cancelled());
                std::thread::sleep(Duration::from_millis(1));
            }
        })
        .join()
        .unwrap();
        let start = std::time::Instant::now();
        while !c.is_cancelled() {
            assert!(start.elapsed() < Duration::from_secs(20), "no tick came");
            std::hint::spin_loop();
        }
        assert_eq!(calls.load(Relaxed), 3);
        drop(ticks);
        assert!(c.is_cancelled());
    }
}
