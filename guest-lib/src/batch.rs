// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Posted calls travel together.
//!
//! A posted call (a launch, an asynchronous copy or memset, an event record: requests flagged
//! reply-on-error, whose caller does not wait) is not sent on its own. It waits in the
//! process's [`Batch`] and goes out at the front of the next message: the next call that
//! waits for a reply (so `cudaMemsetAsync` then `cudaStreamSynchronize` is one message and
//! one round trip), a posted call too large to hold, or a full batch. So that a posted call
//! never waits for long when the program makes no other call (a launch followed by host
//! work), a flusher thread sends a batch that is [`Batch::delay`] old (`VCUDA_BATCH_US`,
//! default [`DEFAULT_BATCH_US`] µs; `0` sends every posted call at once, as before).
//!
//! The flusher sleeps on a timer (a `timerfd`) that the first call of each batch arms for
//! `delay`; arming again pushes it back, so while the program keeps making calls the timer
//! never fires and the flusher never runs: a batch costs one `timerfd_settime`, never a
//! thread wake-up. It fires only when the program went quiet with calls still waiting.
//!
//! Order: requests enter the batch and leave it in the order they were posted, and a
//! message that carries the batch is sent under the *order lock*, taken before the batch is
//! and held until the transport is done with the message, so the backend sees every request
//! in the order the program made it. A call that finds the batch empty needs no order lock
//! (it does not depend on calls other threads are making), and a thread that posts while
//! another waits in a long call (a synchronize) adds to the batch without waiting, as it did
//! before batching on the virtio transport, which runs calls of many threads at once. Lock
//! order: the order lock, then the batch's.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use vcuda_protocol::MessageBuilder;

/// Default of `VCUDA_BATCH_US`.
pub const DEFAULT_BATCH_US: u64 = 100;
/// Most requests a batch holds before it is sent.
pub const MAX_REQUESTS: u32 = 256;
/// Most bytes (control area and out data) a batch holds before it is sent.
pub const MAX_BYTES: usize = 64 << 10;
/// Largest out data a posted call may have and still wait in the batch; a larger one is
/// sent at once, behind the batch.
pub const MAX_HELD_DATA: usize = 16 << 10;

/// The posted requests not yet sent, with their out data.
#[derive(Debug, Default)]
pub struct Pending {
    /// The requests, as the front of the next message.
    pub msg: MessageBuilder,
    /// Their out data, in request order.
    pub data: Vec<u8>,
    /// When the flusher must send them (set by the first request of a batch).
    deadline: Option<Instant>,
    /// The flusher thread was started, or tried.
    started: bool,
    /// The flusher thread could not be started: posted calls are sent at once.
    no_flusher: bool,
}

impl Pending {
    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.msg.is_empty()
    }

    /// Whether the batch is full and must be sent.
    pub fn is_full(&self) -> bool {
        self.msg.len() >= MAX_REQUESTS || self.msg.ctrl_bytes() + self.data.len() >= MAX_BYTES
    }

    fn take<'a>(&mut self, order: MutexGuard<'a, ()>) -> Taken<'a> {
        self.deadline = None;
        Taken {
            _order: order,
            msg: std::mem::take(&mut self.msg),
            data: std::mem::take(&mut self.data),
        }
    }

    /// Forgets the requests (after they were sent, or lost with the connection).
    pub fn clear(&mut self) {
        self.msg.clear();
        self.data.clear();
        self.deadline = None;
    }
}

/// The process's batch of posted calls.
#[derive(Debug)]
pub struct Batch {
    /// Held while a message carrying batched requests is with the transport.
    order: Mutex<()>,
    pending: Mutex<Pending>,
    /// The flusher's timer, made when the flusher starts.
    timer: OnceLock<Timer>,
    delay: Duration,
}

impl Batch {
    /// A batch that holds posted calls for up to `delay` (zero: never holds them).
    pub fn new(delay: Duration) -> Self {
        Self {
            order: Mutex::new(()),
            pending: Mutex::default(),
            timer: OnceLock::new(),
            delay,
        }
    }

    /// A batch with the delay `VCUDA_BATCH_US` asks for ([`DEFAULT_BATCH_US`] µs when unset;
    /// at most one second).
    pub fn from_env() -> Self {
        let us = std::env::var("VCUDA_BATCH_US")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(DEFAULT_BATCH_US);
        Self::new(Duration::from_micros(us.min(1_000_000)))
    }

    /// Whether posted calls wait in the batch at all.
    pub fn enabled(&self) -> bool {
        !self.delay.is_zero()
    }

    /// How long a posted call may wait.
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// Locks the batch (briefly: never while waiting for the transport).
    pub fn lock(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the batch's requests, unless there are none, with the order lock held: the
    /// caller sends them (first, in its message) and drops the [`Taken`] once the transport
    /// is done with that message. `due`: only a batch whose deadline has passed.
    pub fn take(&self, due: bool) -> Option<Taken<'_>> {
        let ready = |p: &Pending| {
            !p.is_empty() && (!due || p.deadline.is_some_and(|d| d <= Instant::now()))
        };
        if !ready(&self.lock()) {
            return None;
        }
        let order = self.order.lock().unwrap_or_else(|e| e.into_inner());
        let mut p = self.lock();
        // Another thread may have sent it meanwhile.
        if !ready(&p) {
            return None;
        }
        Some(p.take(order))
    }

    /// Waits until no message carrying batched requests is with the transport, so that a
    /// message sent next cannot overtake requests posted before it (by any thread).
    pub fn barrier(&self) {
        drop(self.order.lock().unwrap_or_else(|e| e.into_inner()));
    }

    /// [`Batch::take`] unless another thread holds the order lock (at exit: that thread is
    /// sending).
    pub fn try_take(&self) -> Option<Taken<'_>> {
        let order = match self.order.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        let mut p = self.lock();
        if p.is_empty() {
            return None;
        }
        Some(p.take(order))
    }

    /// Notes that a request was added to `p`: the first one of a batch arms the flusher's
    /// timer (`spawn` starts the flusher thread, running [`Batch::run_flusher`], the first
    /// time). Returns `false` if no flusher runs or the timer cannot be armed: the caller
    /// must then send the batch at once.
    pub fn hold(&self, p: &mut Pending, spawn: impl FnOnce() -> bool) -> bool {
        if !p.started {
            p.started = true;
            p.no_flusher = match Timer::new() {
                Ok(t) => self.timer.set(t).is_err() || !spawn(),
                Err(e) => {
                    log::warn!("cannot make the batch timer ({e}); posted calls are sent at once");
                    true
                }
            };
        }
        if p.no_flusher {
            return false;
        }
        if p.deadline.is_none() {
            let Some(t) = self.timer.get() else {
                return false;
            };
            if t.arm(self.delay).is_err() {
                return false;
            }
            p.deadline = Some(Instant::now() + self.delay);
        }
        true
    }

    /// The flusher's loop: sends each batch once it is `delay` old through `send` (the batch
    /// taken with [`Batch::take`]). Returns only if there is no timer.
    pub fn run_flusher(&self, mut send: impl FnMut(Taken<'_>)) {
        let Some(t) = self.timer.get() else {
            return;
        };
        loop {
            t.wait();
            if let Some(taken) = self.take(true) {
                send(taken);
                continue;
            }
            // Nothing due. Either nothing waits (a call took the batch the timer was armed
            // for), or the batch waiting now is younger: its first request armed the timer
            // again, but arm it for its deadline in case that expiry was already counted.
            let p = self.lock();
            if let Some(d) = p.deadline
                && !p.is_empty()
            {
                let _ = t.arm(d.saturating_duration_since(Instant::now()));
            }
        }
    }
}

/// Requests taken from the batch, with the order lock held until this is dropped.
#[derive(Debug)]
pub struct Taken<'a> {
    _order: MutexGuard<'a, ()>,
    /// The requests, as the front of a message.
    pub msg: MessageBuilder,
    /// Their out data.
    pub data: Vec<u8>,
}

/// A one-shot monotonic timer (`timerfd`).
#[derive(Debug)]
struct Timer(OwnedFd);

impl Timer {
    fn new() -> io::Result<Self> {
        // SAFETY: timerfd_create takes no pointers; a non-negative result is a new
        // descriptor that we own.
        let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nobody else.
        Ok(Self(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Fires once, `after` from now (replacing an earlier setting).
    fn arm(&self, after: Duration) -> io::Result<()> {
        let after = after.max(Duration::from_nanos(1));
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: after.as_secs() as libc::time_t,
                tv_nsec: after.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: `spec` is a valid itimerspec; the old value is not asked for.
        let r =
            unsafe { libc::timerfd_settime(self.0.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Waits until the timer fires.
    fn wait(&self) {
        let mut n = 0u64;
        loop {
            // SAFETY: reads 8 bytes (the expiration count) into `n`.
            let r = unsafe { libc::read(self.0.as_raw_fd(), (&raw mut n).cast(), 8) };
            if r == 8 {
                return;
            }
            if r < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            // Not expected from a timerfd; do not spin.
            std::thread::sleep(Duration::from_millis(1));
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use vcuda_protocol::{Opcode, SegmentDesc};

    use super::*;

    fn push(p: &mut Pending, seq: u64) {
        p.msg
            .push(Opcode::Nop, 1, seq, &[] as &[SegmentDesc], &0u64, &[]);
    }

    #[test]
    fn a_held_batch_goes_out_after_the_delay() {
        let b = Arc::new(Batch::new(Duration::from_millis(50)));
        let sent = Arc::new(AtomicUsize::new(0));
        let (b2, s2) = (b.clone(), sent.clone());
        let spawn = move || {
            std::thread::spawn(move || {
                b2.run_flusher(|t| {
                    s2.fetch_add(t.msg.len() as usize, Ordering::SeqCst);
                })
            });
            true
        };
        assert!(b.lock().is_empty());
        {
            let mut p = b.lock();
            push(&mut p, 1);
            assert!(b.hold(&mut p, spawn));
            push(&mut p, 2);
            assert!(b.hold(&mut p, || unreachable!("started once")));
        }
        // Not before the delay.
        assert_eq!(sent.load(Ordering::SeqCst), 0);
        let start = Instant::now();
        while sent.load(Ordering::SeqCst) < 2 {
            assert!(start.elapsed() < Duration::from_secs(5), "never flushed");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(b.lock().is_empty());
        // A later batch arms the timer again.
        std::thread::sleep(Duration::from_millis(60));
        {
            let mut p = b.lock();
            push(&mut p, 3);
            assert!(b.hold(&mut p, || unreachable!()));
        }
        let start = Instant::now();
        while sent.load(Ordering::SeqCst) < 3 {
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "the second batch was never sent"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_batch_knows_when_it_is_full() {
        let mut p = Pending::default();
        assert!(p.is_empty() && !p.is_full());
        for s in 0..u64::from(MAX_REQUESTS) {
            assert!(!p.is_full());
            push(&mut p, s);
        }
        assert!(p.is_full());
        p.clear();
        assert!(p.is_empty() && !p.is_full());
        p.data.resize(MAX_BYTES, 0);
        assert!(p.is_full());
    }
}
