// SPDX-License-Identifier: GPL-2.0
//! The request virtqueues, and who touches which part of them.
//!
//! Each [`Queue`] is one virtqueue behind an IRQ-safe spinlock (`Ring`). The driver side
//! ([`VDev::submit`], process context) adds a request's chain to the available ring and kicks
//! the device; the ring then owns one reference of the request (the chain's token). The
//! device side ([`VDev::complete`], the virtqueue callback in hard interrupt context) takes
//! used chains back and passes each token to `finish` (`device_completion.rs`). Nothing else
//! touches a virtqueue, except the removal (`device_probe.rs`), which closes the rings and
//! drains them after the reset.

use kernel::{
    bindings,
    ffi::c_uint,
    prelude::*,
    sync::{
        atomic::{Acquire, Atomic, Full},
        Arc,
    },
};

use super::{Request, VDev, DONE};
use crate::sys::{IrqSpinLock, WaitQueue};

/// One request virtqueue.
#[pin_data]
pub(crate) struct Queue {
    #[pin]
    pub(super) ring: IrqSpinLock<Ring>,
    /// Threads waiting for a completion or for ring space.
    #[pin]
    pub(super) wait: WaitQueue,
    /// Chains completed so far (lets a thread waiting for ring space see progress).
    pub(super) completions: Atomic<u64>,
}

/// The virtqueue; only touched under the queue lock.
pub(super) struct Ring {
    /// Null once the device is removed (after the reset and the detach).
    pub(super) vq: *mut bindings::virtqueue,
    /// Set by `remove` before the reset: no chain is added any more (every chain on the ring
    /// was made available before the reset, so the device may have taken it).
    pub(super) closed: bool,
    /// Chains on the ring.
    pub(super) in_flight: usize,
}

// SAFETY: The virtqueue may be used from any CPU; the lock serialises every use.
unsafe impl Send for Ring {}

impl Queue {
    pub(super) fn new(vq: *mut bindings::virtqueue) -> impl PinInit<Self> {
        pin_init!(Self {
            ring <- IrqSpinLock::new(
                Ring { vq, closed: false, in_flight: 0 },
                c"vcuda_ring",
                kernel::static_lock_class!(),
            ),
            wait <- WaitQueue::new(c"vcuda_wait", kernel::static_lock_class!()),
            completions: Atomic::new(0),
        })
    }

    pub(super) fn in_flight(&self) -> usize {
        self.ring.lock().in_flight
    }
}

impl VDev {
    /// Handles a virtqueue interrupt: completes every chain the device has returned.
    pub(crate) fn complete(&self, index: u32) {
        let Some(q) = self.queues.get(index as usize) else {
            return;
        };
        let mut n = 0u64;
        {
            let mut ring = q.ring.lock();
            let vq = ring.vq;
            if vq.is_null() {
                return;
            }
            loop {
                // SAFETY: `vq` is live while the lock is held and `vq` is non-null.
                unsafe { bindings::virtqueue_disable_cb(vq) };
                loop {
                    let mut len: c_uint = 0;
                    // SAFETY: `vq` is live while the lock is held and `vq` is non-null.
                    let token = unsafe { bindings::virtqueue_get_buf(vq, &mut len) };
                    if token.is_null() {
                        break;
                    }
                    ring.in_flight = ring.in_flight.saturating_sub(1);
                    // SAFETY: Every token on our rings is a request reference (`submit`).
                    unsafe { self.finish(token, len, DONE) };
                    n += 1;
                }
                // SAFETY: `vq` is live while the lock is held and `vq` is non-null.
                if unsafe { bindings::virtqueue_is_broken(vq) } {
                    break;
                }
                // SAFETY: `vq` is live while the lock is held and `vq` is non-null. `false`
                // means more chains came back meanwhile.
                if unsafe { bindings::virtqueue_enable_cb(vq) } {
                    break;
                }
            }
        }
        if n > 0 {
            q.completions.fetch_add(n, Full);
            q.wait.wake_all();
        }
    }

    /// Queue 0: `OpenSession` and `CloseSession` (the device handles a queue in order).
    pub(super) fn control_queue(&self) -> Result<&Queue> {
        self.queues.first().map(|q| &**q).ok_or(ENODEV)
    }

    /// The index of the current CPU's queue.
    pub(super) fn cpu_queue_index(&self) -> usize {
        // SAFETY: No preconditions.
        let cpu = unsafe { bindings::raw_smp_processor_id() } as usize;
        cpu.checked_rem(self.queues.len()).unwrap_or(0)
    }

    /// Queue `i`.
    pub(super) fn queue_at(&self, i: usize) -> Result<&Queue> {
        self.queues.get(i).map(|q| &**q).ok_or(ENODEV)
    }

    /// Puts a request's chain on a ring and kicks the device. The ring takes a reference.
    pub(crate) fn submit(&self, q: &Queue, req: &Arc<Request>) -> Result {
        let (mut sgs, n_out, n_in) = req.sg_lists();
        let descs = req.descs;
        let token = Arc::into_raw(req.clone());
        // SAFETY: `token` came from `Arc::into_raw` just above; used on the error paths only.
        let reclaim = || drop(unsafe { Arc::from_raw(token) });
        loop {
            let seen = q.completions.load(Acquire);
            let mut ring = q.ring.lock();
            let vq = ring.vq;
            if vq.is_null() || ring.closed {
                drop(ring);
                reclaim();
                return Err(ENODEV);
            }
            // SAFETY: `vq` is live (non-null under the lock). The scatterlists describe
            // memory the request owns (kernel buffers, pinned pages) and stay valid while the
            // ring holds its reference; `token` is that reference.
            let err = unsafe {
                bindings::virtqueue_add_sgs(
                    vq,
                    sgs.as_mut_ptr(),
                    n_out,
                    n_in,
                    token.cast_mut().cast(),
                    bindings::GFP_ATOMIC,
                )
            };
            if err == 0 {
                ring.in_flight += 1;
                // SAFETY: `vq` is live (non-null under the lock, which is still held).
                unsafe { bindings::virtqueue_kick(vq) };
                return Ok(());
            }
            // SAFETY: `vq` is live (non-null under the lock, which is still held).
            let size = unsafe { bindings::virtqueue_get_vring_size(vq) };
            drop(ring);
            if err != -(bindings::ENOSPC as i32) || (!self.indirect && descs > size as usize) {
                reclaim();
                return Err(if err == -(bindings::ENOSPC as i32) {
                    E2BIG
                } else {
                    Error::from_errno(err)
                });
            }
            // The ring is full: wait for a completion.
            if !q.wait.wait_killable(|| q.completions.load(Acquire) != seen) {
                reclaim();
                return Err(EINTR);
            }
        }
    }
}
