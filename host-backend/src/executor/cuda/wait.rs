// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Waiting for the GPU without ever blocking in the driver, so a session that ends can stop
//! waiting.
//!
//! `cuStreamSynchronize` and `cuEventSynchronize` cannot be interrupted: a session whose
//! program died while its kernel loops forever would keep its thread, and everything that
//! thread holds, until the kernel ends, which on a GPU without a watchdog is never. So the
//! executor waits by polling `cuStreamQuery`/`cuEventQuery` instead, and checks the
//! session's cancellation token between polls. When it is cancelled, the wait returns
//! [`Waited::Cancelled`] and the executor destroys the session's context before anything
//! the GPU might still write to is released (`CudaExecutor::settle`). With a time limit
//! (`--kernel-timeout`), a wait that lasts longer ends with [`Waited::TimedOut`], and the
//! executor destroys the context the same way.
//!
//! # Cost
//!
//! Polls start back to back (a query is a few hundred nanoseconds of driver time), yield
//! the CPU after [`SPIN`], and sleep after [`YIELD`], each sleep a twentieth of the time
//! waited so far, between [`MIN_SLEEP`] and [`MAX_SLEEP`]. A wait therefore ends at most
//! 5% (or 1 ms) after the work it waits for, and a long wait costs at most about a
//! thousand wake-ups per second. The driver's own default (`CU_CTX_SCHED_AUTO`) also spins,
//! then yields.

use std::cell::Cell;
use std::time::{Duration, Instant};

use cudarc::driver::sys::CUresult;

use vcuda_protocol::status;

use super::driver::DrvResult;
use super::error::to_status;
use crate::executor::{Cancel, Status};

/// Polls back to back for this long.
pub const SPIN: Duration = Duration::from_micros(20);
/// Then yields the CPU between polls until this much time has passed.
pub const YIELD: Duration = Duration::from_micros(200);
/// Shortest sleep between polls after that.
pub const MIN_SLEEP: Duration = Duration::from_micros(10);
/// Longest sleep between polls (also the most a cancellation waits to be seen).
pub const MAX_SLEEP: Duration = Duration::from_millis(1);

/// How a wait ended other than with the work done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// The driver reported an error (of the work waited for, or earlier asynchronous work).
    Failed(CUresult),
    /// The session was cancelled while the work was still running.
    Cancelled,
    /// The work outlasted the time limit.
    TimedOut,
}

impl From<CUresult> for Waited {
    fn from(e: CUresult) -> Self {
        Waited::Failed(e)
    }
}

impl From<Waited> for Status {
    /// A cancelled wait reports `cudaErrorLaunchFailure`, as a cancelled launch does on
    /// the CPU executor (nobody reads it: the session is ending).
    fn from(w: Waited) -> Self {
        match w {
            Waited::Failed(e) => to_status(e),
            Waited::Cancelled => Status(status::LAUNCH_FAILURE),
            Waited::TimedOut => Status(status::LAUNCH_TIMEOUT),
        }
    }
}

/// A session's way of waiting: polls, checking its cancellation token and time limit.
#[derive(Debug, Clone, Default)]
pub struct Wait {
    cancel: Option<Cancel>,
    limit: Option<Duration>,
    /// A wait timed out since [`Wait::take_timed_out`] last looked.
    timed_out: Cell<bool>,
}

impl Wait {
    /// Waits that fail after `limit`, if given.
    pub fn new(limit: Option<Duration>) -> Self {
        Self {
            limit,
            ..Self::default()
        }
    }

    /// Whether a wait timed out since the last call (and forgets it).
    pub fn take_timed_out(&self) -> bool {
        self.timed_out.replace(false)
    }

    /// Waits checking `cancel`.
    pub fn set_cancel(&mut self, cancel: Cancel) {
        self.cancel = Some(cancel);
    }

    /// Whether the session was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(Cancel::is_cancelled)
    }

    /// Polls `query` until it answers anything but `CUDA_ERROR_NOT_READY`, or the session
    /// is cancelled.
    pub fn until(&self, mut query: impl FnMut() -> DrvResult<()>) -> Result<(), Waited> {
        let start = Instant::now();
        loop {
            match query() {
                Ok(()) => return Ok(()),
                Err(CUresult::CUDA_ERROR_NOT_READY) => {}
                Err(e) => return Err(Waited::Failed(e)),
            }
            if self.is_cancelled() {
                return Err(Waited::Cancelled);
            }
            let waited = start.elapsed();
            if self.limit.is_some_and(|l| waited > l) {
                self.timed_out.set(true);
                return Err(Waited::TimedOut);
            }
            if waited < SPIN {
                std::hint::spin_loop();
            } else if waited < YIELD {
                std::thread::yield_now();
            } else {
                std::thread::sleep((waited / 20).clamp(MIN_SLEEP, MAX_SLEEP));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    #[test]
    fn ends_when_the_work_is_done_or_fails() {
        let w = Wait::default();
        let polls = Cell::new(0);
        let r = w.until(|| {
            polls.set(polls.get() + 1);
            if polls.get() < 5 {
                Err(CUresult::CUDA_ERROR_NOT_READY)
            } else {
                Ok(())
            }
        });
        assert_eq!(r, Ok(()));
        assert_eq!(polls.get(), 5);
        let r = w.until(|| Err(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS));
        assert_eq!(r, Err(Waited::Failed(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS)));
    }

    #[test]
    fn a_wait_past_the_limit_times_out_once() {
        let w = Wait::new(Some(Duration::from_millis(20)));
        let start = Instant::now();
        let r = w.until(|| Err(CUresult::CUDA_ERROR_NOT_READY));
        assert_eq!(r, Err(Waited::TimedOut));
        assert!(start.elapsed() >= Duration::from_millis(20));
        assert!(w.take_timed_out());
        assert!(!w.take_timed_out());
        assert_eq!(
            Status::from(Waited::TimedOut),
            Status(status::LAUNCH_TIMEOUT)
        );
    }

    #[test]
    fn a_cancelled_session_stops_waiting_within_a_sleep() {
        let mut w = Wait::default();
        let cancel = Cancel::default();
        w.set_cancel(cancel.clone());
        let start = Instant::now();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            cancel.cancel();
        });
        let r = w.until(|| Err(CUresult::CUDA_ERROR_NOT_READY));
        let took = start.elapsed();
        t.join().unwrap();
        assert_eq!(r, Err(Waited::Cancelled));
        assert!(w.is_cancelled());
        // 50 ms until the cancel, then at most one sleep; generous for a loaded machine.
        assert!(took < Duration::from_secs(2), "took {took:?}");
    }
}
