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
//! The flusher sleeps on a timer (a `timerfd`). The first call of a batch arms it for
//! `delay` unless it is armed already; it is never pushed back (on a virtual machine each
//! `timerfd_settime` that moves the earliest timer reprograms the host timer, measured at
//! ~10 µs for a 100 µs timer on a 2-vCPU KVM guest). When it fires, the flusher sends the
//! batch waiting then if it is `delay` old, else arms the timer for that batch's deadline.
//! So a posted call waits at most about `delay` for company, and a program that keeps
//! making calls costs the flusher one wake-up per `delay`, never one per call.
//!
//! A program that posts and then works on the host for a while (a launch, host work, a
//! synchronize) would lose up to `delay` of overlap per launch. So holding adapts: once the
//! flusher had to send a batch (nobody called within `delay`) and the program has stopped
//! posting too (its last posted call is a quarter of `delay` old), posted calls go out at
//! once, until a call follows one of them within `delay` again, or eight of them come in a
//! row (each within `delay` of the one before). Such a program pays the
//! delay once per change of pattern, not per launch. A program that keeps posting without
//! calls (launches back to back, slower than a full batch per `delay`) keeps its batches.
//!
//! Order: requests enter the batch and leave it in the order they were posted, and a
//! message that carries the batch is sent under the *order lock*, taken before the batch is
//! and held until the transport is done with the message. A call that finds the batch empty
//! first waits until no batch is being sent ([`Batch::barrier`]). So the backend sees every
//! request after those posted before it, by any thread (a launch handed to another thread
//! through host memory included). Posting itself only takes the batch's own lock, briefly:
//! it never waits for another thread's call. Lock order: the order lock, then the batch's.
//!
//! Transports that complete a posted message only once the host has run it (virtio with a
//! module or device older than detached submits: one ioctl per message, returning when the
//! device answered) send the batch as a message of its own, never in front of a call that
//! waits (see `Transport::batch_rides_with_calls`): the order lock is then held while the
//! host runs posted calls only, not while it runs a synchronize. A stream of launches and a
//! synchronize is two ioctls there instead of one per call.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use vcuda_protocol::MessageBuilder;

/// Default of `VCUDA_BATCH_US`.
pub const DEFAULT_BATCH_US: u64 = 500;
/// The flusher takes a program for quiet when its last posted call is at least a
/// `delay / QUIET_AFTER_DIV` old.
const QUIET_AFTER_DIV: u32 = 4;
/// Posted calls sent at once back to back (each within `delay` of the one before) that end
/// a quiet spell.
const QUIET_BURST: u32 = 8;
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
    /// The flusher's timer is armed (it is not armed again before it fires).
    armed: bool,
    /// The flusher thread was started, or tried.
    started: bool,
    /// The flusher thread could not be started: posted calls are sent at once.
    no_flusher: bool,
    /// The program went quiet after its last batch (the flusher had to send it): posted
    /// calls go out at once until one is followed by a call within the delay again.
    quiet: bool,
    /// When the last posted call was sent at once because of `quiet`.
    sent_alone: Option<Instant>,
    /// When the last posted call was held.
    last_held: Option<Instant>,
    /// Posted calls sent at once because of `quiet` in a row, each within `delay` of the one
    /// before.
    alone_run: u32,
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
    /// message sent next cannot overtake requests posted before it (by any thread). Also
    /// notes that a call came: one that follows a posted call sent at once within the delay
    /// ends a quiet spell (posted calls are held again).
    pub fn barrier(&self) {
        drop(self.order.lock().unwrap_or_else(|e| e.into_inner()));
        let mut p = self.lock();
        if p.sent_alone
            .take()
            .is_some_and(|t| t.elapsed() < self.delay)
        {
            p.quiet = false;
        }
    }

    /// [`Batch::take`], waiting at most `wait` for the order lock (at exit, another thread
    /// may be in a call that never returns).
    pub fn try_take(&self, wait: Duration) -> Option<Taken<'_>> {
        let start = Instant::now();
        let order = loop {
            match self.order.try_lock() {
                Ok(g) => break g,
                Err(std::sync::TryLockError::Poisoned(e)) => break e.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) if start.elapsed() < wait => {
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(std::sync::TryLockError::WouldBlock) => return None,
            }
        };
        let mut p = self.lock();
        if p.is_empty() {
            return None;
        }
        Some(p.take(order))
    }

    /// After `fork`, in the child: the batch holds the parent's requests, on the parent's
    /// connection, and no flusher runs here. Forget them and hold nothing (without taking a
    /// lock another thread of the parent may have held at the fork).
    pub fn forget_after_fork(&self) {
        FORKED.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether this is a child forked after the batch was in use.
    pub fn forked(&self) -> bool {
        FORKED.load(std::sync::atomic::Ordering::Relaxed)
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
        let now = Instant::now();
        if p.quiet {
            let burst = p
                .sent_alone
                .is_some_and(|t| now.duration_since(t) < self.delay);
            p.alone_run = if burst { p.alone_run + 1 } else { 1 };
            p.sent_alone = Some(now);
            if p.alone_run < QUIET_BURST {
                return false;
            }
            // Posted calls back to back: the program is posting a stream again.
            p.quiet = false;
            p.alone_run = 0;
        }
        if p.deadline.is_none() {
            if !p.armed {
                let Some(t) = self.timer.get() else {
                    return false;
                };
                if t.arm(self.delay).is_err() {
                    return false;
                }
                p.armed = true;
            }
            p.deadline = Some(now + self.delay);
        }
        p.last_held = Some(now);
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
            let due = {
                let mut p = self.lock();
                p.armed = false;
                match p.deadline {
                    _ if p.is_empty() => continue,
                    // A younger batch than the one the timer was armed for: wait for its
                    // own deadline (or, if the timer fails, send it now).
                    Some(d) if d > Instant::now() => {
                        if t.arm(d - Instant::now()).is_ok() {
                            p.armed = true;
                            continue;
                        }
                        false
                    }
                    _ => true,
                }
            };
            if let Some(taken) = self.take(due) {
                // The program made no call for a whole delay after posting, and has stopped
                // posting too: send its posted calls at once until it makes calls right
                // behind them again. One still posting (a stream of launches slower than a
                // batch per delay) keeps its batches.
                let mut p = self.lock();
                let posting = p
                    .last_held
                    .is_some_and(|t| t.elapsed() < self.delay / QUIET_AFTER_DIV);
                p.quiet |= !posting;
                drop(p);
                let sent = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| send(taken)));
                if sent.is_err() {
                    // Never expected; without a flusher, posted calls must go out at once.
                    self.lock().no_flusher = true;
                    return;
                }
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

/// Set in a child process after `fork` (see [`Batch::forget_after_fork`]).
static FORKED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

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
    }

    #[test]
    fn a_quiet_program_gets_its_posted_calls_sent_at_once() {
        let b = Arc::new(Batch::new(Duration::from_millis(20)));
        let b2 = b.clone();
        let spawn = move || {
            std::thread::spawn(move || b2.run_flusher(|t| drop(t)));
            true
        };
        {
            let mut p = b.lock();
            push(&mut p, 1);
            assert!(b.hold(&mut p, spawn), "held at first");
        }
        // Nobody calls: the flusher sends it, and the next posted call is not held.
        let start = Instant::now();
        while !b.lock().is_empty() {
            assert!(start.elapsed() < Duration::from_secs(5));
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(5));
        {
            let mut p = b.lock();
            push(&mut p, 2);
            assert!(
                !b.hold(&mut p, || unreachable!()),
                "sent at once when quiet"
            );
            p.clear();
        }
        // A call right behind it: posted calls are held again.
        b.barrier();
        let mut p = b.lock();
        push(&mut p, 3);
        assert!(b.hold(&mut p, || unreachable!()), "held again");
        drop(p);
        // Quiet again; then posted calls back to back end it after QUIET_BURST of them.
        let start = Instant::now();
        while !b.lock().is_empty() {
            assert!(start.elapsed() < Duration::from_secs(5));
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(10));
        let mut p = b.lock();
        for seq in 0..u64::from(QUIET_BURST) - 1 {
            push(&mut p, 10 + seq);
            assert!(!b.hold(&mut p, || unreachable!()), "post {seq} sent alone");
            p.clear();
        }
        push(&mut p, 20);
        assert!(b.hold(&mut p, || unreachable!()), "a burst is held again");
    }

    #[test]
    fn a_program_still_posting_keeps_its_batches() {
        let b = Arc::new(Batch::new(Duration::from_millis(40)));
        let sent = Arc::new(AtomicUsize::new(0));
        let (b2, s2) = (b.clone(), sent.clone());
        let spawn = move || {
            std::thread::spawn(move || {
                b2.run_flusher(|t| {
                    s2.fetch_add(1, Ordering::SeqCst);
                    drop(t)
                })
            });
            true
        };
        // Posts every 2 ms, never a call: the flusher sends batches by their age, and the
        // poster is never taken for quiet.
        let start = Instant::now();
        let mut seq = 0;
        let mut first = Some(spawn);
        while sent.load(Ordering::SeqCst) < 2 {
            assert!(start.elapsed() < Duration::from_secs(10), "never flushed");
            seq += 1;
            let mut p = b.lock();
            push(&mut p, seq);
            let held = match first.take() {
                Some(s) => b.hold(&mut p, s),
                None => b.hold(&mut p, || unreachable!()),
            };
            assert!(held, "call {seq} sent alone");
            drop(p);
            std::thread::sleep(Duration::from_millis(2));
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
