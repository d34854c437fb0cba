// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Rate-limited warnings: what a guest can trigger at will (malformed frames, refused
//! connections) is logged a burst at a time, with a count of what was dropped, so a flood
//! of bad input cannot flood the log.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Lets at most `burst` log lines through per `window`; counts the rest and reports how
/// many were dropped with the next line let through.
#[derive(Debug)]
pub struct LogLimiter {
    target: &'static str,
    burst: u64,
    window: Duration,
    start: Instant,
    /// Index of the current window and lines let through in it.
    slot: Mutex<(u64, u64)>,
    suppressed: AtomicU64,
}

impl LogLimiter {
    /// `burst` lines per `window`, logged under `target` (the module path, for `RUST_LOG`).
    pub fn new(target: &'static str, burst: u64, window: Duration) -> Self {
        Self {
            target,
            burst,
            window,
            start: Instant::now(),
            slot: Mutex::new((0, 0)),
            suppressed: AtomicU64::new(0),
        }
    }

    /// Whether a line may be logged now; `Some(n)`: yes, and `n` lines were dropped since
    /// the last one let through.
    pub fn allow(&self) -> Option<u64> {
        let w = (self.start.elapsed().as_nanos() / self.window.as_nanos().max(1)) as u64;
        let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        if slot.0 != w {
            *slot = (w, 0);
        }
        if slot.1 >= self.burst {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        slot.1 += 1;
        Some(self.suppressed.swap(0, Ordering::Relaxed))
    }

    /// Logs `msg` as a warning if [`LogLimiter::allow`] lets it through.
    pub fn warn(&self, msg: std::fmt::Arguments<'_>) {
        match self.allow() {
            Some(0) => log::warn!(target: self.target, "{msg}"),
            Some(n) => {
                log::warn!(target: self.target, "{msg} ({n} similar lines suppressed)")
            }
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limiter_lets_a_burst_through() {
        let l = LogLimiter::new("t", 2, Duration::from_secs(3600));
        assert_eq!(l.allow(), Some(0));
        assert_eq!(l.allow(), Some(0));
        assert_eq!(l.allow(), None);
        assert_eq!(l.allow(), None);
        let l = LogLimiter::new("t", 1, Duration::from_millis(1));
        assert_eq!(l.allow(), Some(0));
        assert_eq!(l.allow(), None);
        std::thread::sleep(Duration::from_millis(3));
        assert_eq!(l.allow(), Some(1));
    }
}
