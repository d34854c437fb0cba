// SPDX-License-Identifier: GPL-2.0
//! The vcuda virtio device: its request queues, the requests in flight on them, and the
//! sessions (one per open file) that requests belong to.
//!
//! # Who owns what, and when
//!
//! - A [`Request`] is reference counted. While its descriptor chain is on a virtqueue, the
//!   *ring* owns one reference: the chain's token is `Arc::into_raw` of it.
//! - The submitting thread owns another and sleeps (killable only) until the request leaves
//!   the `PENDING` state. The interrupt handler moves it to `DONE` with one compare-exchange;
//!   the thread then takes the ring's reference back and drops both in process context.
//! - A thread that is killed while waiting moves the request from `PENDING` to `ABANDONED`
//!   instead, and leaves. The interrupt handler sees `ABANDONED` when the device finally
//!   returns the chain and hands the ring's reference to this device's workqueue, which drops
//!   it in process context. Exactly one of the two compare-exchanges wins, so each reference
//!   is released exactly once; the pinned pages stay pinned, and every kernel buffer of the
//!   chain stays allocated, until the device has returned it.
//! - A detached request (`VCUDA_SUBMIT_DETACHED`) is created `ABANDONED`: nobody waits, the
//!   submitting thread drops its reference once the chain is on the ring, and the chain is
//!   reaped like a killed waiter's. It holds a copy of the caller's data (no user pages) and
//!   one of its session's `VCUDA_MAX_DETACHED` places until it is dropped.
//! - Dropping a request unpins its user pages (marking the device-written ones dirty) and frees
//!   its kernel buffers. That never happens in interrupt context.
//! - A [`Session`] is owned by its open file and by each request of it; when the last of them
//!   goes, a `CloseSession` chain is posted, so the device sees the close after every chain of
//!   the session, whichever queues they used. Its `OpenSession` chain is owned like a request
//!   whose waiter is the session (see [`Session`]).
//! - Pages shared with the device (`VCUDA_IOC_SHARE`) belong to the session's region list,
//!   never to a request: a `SharePages` chain carries only their guest-physical extents, and
//!   the device uses the pages until it answers the region's `UnsharePages`, or returns the
//!   session's `CloseSession`, which takes the session's regions over and unpins them when it
//!   is dropped. A region whose `SharePages`/`UnsharePages` got no answer (killed waiter,
//!   removal) stays until that close; if the close cannot be sent, its pages stay pinned for
//!   good, like a detached chain's.
//! - [`VDev::remove`] lets chains drain (briefly), closes the rings to new chains, resets the
//!   device (after which no callback runs and no chain is taken), completes what the device
//!   returned, detaches the rest (their waiters get `ENODEV`), and destroys the workqueue,
//!   dropping every abandoned request. A detached chain is never freed: a call still running
//!   on the host at the reset goes on, and writes its in segments (DEVICE.md, "Reset"), and
//!   a device might write its reply area too when it returns (vcuda's backend no longer
//!   does); the driver cannot tell which chains the device took, so every buffer of a
//!   detached chain stays allocated and its pages stay pinned (a counted leak). Freeing them
//!   let a late reply land in whatever the kernel put there next.
//!
//! # Which file owns what
//!
//! - This file: the [`VDev`] a probe creates, its [`Limits`], and the request states the
//!   submitting thread, the interrupt handler and the removal hand a chain over with.
//! - `device_probe.rs`: binding the device (configuration, virtqueues, workqueue) and
//!   removing it (drain, close the rings, reset, complete or detach what is left).
//! - `device_queue.rs`: the request virtqueues. The submitting side adds chains and kicks the
//!   device (process context); the interrupt side takes used chains back (hard IRQ); both only
//!   under the queue's IRQ-safe lock.
//! - `device_completion.rs`: a chain coming back. The waiter's and the completion's
//!   compare-exchanges decide who gets the ring's reference; abandoned requests are reaped on
//!   the workqueue.
//! - `device_session.rs`: the sessions and their `OpenSession`/`CloseSession` chains.
//! - `device_request.rs`: building a request's chain from a `VCUDA_IOC_SUBMIT`, and reading
//!   its reply.
//! - `device_bufs.rs`: the memory of one chain, and pinning the caller's pages.
//! - `device_bounce.rs`: bounce chunks, for calls whose pages are too scattered.
//! - `device_sg.rs`: the scatter-gather lists handed to `virtqueue_add_sgs`.
//! - `device_share.rs`: shared regions (`VCUDA_IOC_SHARE`/`VCUDA_IOC_UNSHARE`): pinning
//!   them, their `SharePages`/`UnsharePages` chains, and the session's list of them.

use kernel::{bindings, prelude::*, sync::atomic::Atomic};

use crate::abi::VirtioCudaConfig;

#[path = "device_bounce.rs"]
mod bounce;
#[path = "device_bufs.rs"]
mod bufs;
#[path = "device_completion.rs"]
mod completion;
#[path = "device_probe.rs"]
mod probe;
#[path = "device_queue.rs"]
mod queue;
#[path = "device_request.rs"]
mod request;
#[path = "device_session.rs"]
mod session;
#[path = "device_sg.rs"]
mod sg;
#[path = "device_share.rs"]
mod share;

use queue::Queue;
pub(crate) use request::Request;
pub(crate) use session::Session;
pub(crate) use share::eopnotsupp;

/// The chain is on the ring and a thread waits for it.
const PENDING: u32 = 0;
/// The device returned the chain.
const DONE: u32 = 1;
/// The device was removed before it returned the chain; the ring's reference stays with the
/// removal path (`finish`), which keeps it forever, not the waiter.
const DETACHED: u32 = 2;
/// Nobody waits: the ring's reference is dropped by the workqueue once the device returns it.
const ABANDONED: u32 = 3;

/// The limits in force for a device: its configuration, capped by the module's own bounds.
#[derive(Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) queues: u32,
    pub(crate) max_desc: u32,
    pub(crate) max_ctrl: u32,
    pub(crate) max_data: u64,
}

/// A bound vcuda device.
pub(crate) struct VDev {
    vdev: *mut bindings::virtio_device,
    /// The configuration read at probe time.
    pub(crate) config: VirtioCudaConfig,
    pub(crate) limits: Limits,
    indirect: bool,
    queues: KVec<Pin<KBox<Queue>>>,
    next_session: Atomic<u64>,
    /// Reaps abandoned requests; null after removal.
    wq: Atomic<*mut bindings::workqueue_struct>,
    /// Chains kept forever at removal (detached: see `finish`).
    kept: Atomic<u64>,
}

// SAFETY: `vdev` is only dereferenced in probe/remove (serialised by the driver core); the
// queues synchronise themselves; the rest is immutable or atomic.
unsafe impl Send for VDev {}
// SAFETY: `vdev` is only dereferenced in probe/remove (serialised by the driver core); the
// queues synchronise themselves; the rest is immutable or atomic.
unsafe impl Sync for VDev {}
