// SPDX-License-Identifier: GPL-2.0
//! A chain coming back, and who then owns the ring's reference of its request.
//!
//! The submitting thread waits in [`VDev::call`] (or [`VDev::wait`]); the completion path
//! ([`VDev::complete`] in `device_queue.rs`, and the removal) calls `finish` for every chain it
//! takes off a ring. The request's state decides the owner: `PENDING` to `DONE` hands the
//! ring's reference to the waiter, `PENDING` to `ABANDONED` (a killed waiter) leaves it to the
//! completion path, which reaps it on the device's workqueue (never freeing or unpinning in
//! interrupt context), and `DETACHED` (removal) keeps it forever.

use kernel::{
    ffi::c_void,
    prelude::*,
    sync::{
        atomic::{Acquire, Full, Relaxed},
        Arc,
    },
    workqueue::{self, WorkItem},
};

use super::{queue::Queue, Request, Session, VDev, ABANDONED, DETACHED, DONE, PENDING};

impl WorkItem for Request {
    type Pointer = Arc<Request>;

    /// Drops an abandoned request (the ring's last reference) in process context.
    fn run(this: Arc<Request>) {
        drop(this);
    }
}

impl VDev {
    /// Completes one chain taken off a ring: `DONE` (the device returned it) or `DETACHED`
    /// (removal, after the reset: the device never returned it, and the request is kept).
    ///
    /// # Safety
    ///
    /// `token` must be a token this device put on a ring (`Arc::into_raw` of a [`Request`]),
    /// just taken off it; the ring's reference passes to this function.
    pub(super) unsafe fn finish(&self, token: *mut c_void, len: u32, how: u32) {
        let req = token.cast::<Request>().cast_const();
        // SAFETY: The ring's reference keeps the request alive until it is passed on below.
        let r = unsafe { &*req };
        r.used_len.store(len, Relaxed);
        if how == DETACHED {
            // The device never returned the chain. A waiter gets ENODEV and leaves the ring's
            // reference here (the state tells it so); so does an abandoned chain. The device
            // may have taken the chain before the reset, and a call still running then writes
            // its in segments (DEVICE.md, "Reset") and maybe its reply area when
            // it returns, any time later: keep the ring's reference, and with it every buffer
            // and pinned page of the request, forever. Nothing the device may write is freed.
            let _ = r.state.cmpxchg(PENDING, DETACHED, Full);
            self.kept.fetch_add(1, Relaxed);
            return;
        }
        if r.state.cmpxchg(PENDING, how, Full).is_ok() {
            // The waiter owns the ring's reference now and may free the request at once:
            // do not touch it again.
            return;
        }
        // Abandoned: drop the ring's reference in process context.
        // SAFETY: The ring's reference is ours (see above).
        self.reap(unsafe { Arc::from_raw(req) });
    }

    /// Drops a request reference in process context (on the workqueue), whatever the context
    /// of the caller.
    fn reap(&self, arc: Arc<Request>) {
        let wq = self.wq.load(Acquire);
        if wq.is_null() {
            // Unreachable: the workqueue outlives every ring. Leaking beats freeing (and
            // unpinning) in interrupt context.
            core::mem::forget(arc);
            return;
        }
        // SAFETY: `wq` is live until `remove` destroys it, after the last completion.
        let queue = unsafe { workqueue::Queue::from_raw(wq) };
        if let Err(arc) = queue.enqueue(arc) {
            // Unreachable: a request is queued at most once.
            core::mem::forget(arc);
        }
    }

    /// Submits a request of session `session` and waits for the device to return it.
    ///
    /// # Errors
    ///
    /// `ENODEV` (device gone), `EINTR` (fatal signal; the chain stays with the device and is
    /// cleaned up when it comes back), `E2BIG`, `ENOMEM`, `EIO` (broken virtqueue).
    pub(crate) fn call(&self, session: &Session, req: &Arc<Request>) -> Result {
        let q = session.queue()?;
        self.submit(q, req)?;
        self.wait(q, req)
    }

    /// Submits a detached request (created `ABANDONED`: nobody waits) behind `session`'s
    /// earlier chains, and returns. The ring's reference is dropped on the workqueue once the
    /// device returns the chain.
    ///
    /// # Errors
    ///
    /// `ENODEV` (device gone), `EINTR` (fatal signal while the ring was full), `EIO`
    /// (broken virtqueue): the chain was not queued.
    pub(crate) fn post(&self, session: &Session, req: &Arc<Request>) -> Result {
        self.submit(session.queue()?, req)
    }

    /// Waits for the device to return a request [`VDev::submit`] put on `q`, and takes the
    /// ring's reference back.
    ///
    /// # Errors
    ///
    /// `EINTR` (fatal signal; the chain stays with the device and is cleaned up when it comes
    /// back), `ENODEV` (the device was removed before it returned the chain). Either way the
    /// device may have run the chain.
    pub(super) fn wait(&self, q: &Queue, req: &Arc<Request>) -> Result {
        if !q.wait.wait_killable(|| req.state.load(Acquire) != PENDING)
            && req.state.cmpxchg(PENDING, ABANDONED, Full).is_ok()
        {
            // The ring's reference now belongs to the completion path.
            return Err(EINTR);
        }
        if req.state.load(Acquire) != DONE {
            // DETACHED: the device was removed; the removal keeps the ring's reference.
            return Err(ENODEV);
        }
        // SAFETY: The state moved to DONE, so the completion path passed the ring's reference
        // (`Arc::into_raw` in `submit`) to us.
        drop(unsafe { Arc::from_raw(Arc::as_ptr(req)) });
        Ok(())
    }
}
