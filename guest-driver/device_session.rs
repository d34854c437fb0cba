// SPDX-License-Identifier: GPL-2.0
//! Device sessions: one per open `/dev/vcuda`.
//!
//! A [`Session`] owns its `OpenSession` chain once the device has returned it (like a waiting
//! thread owns its request), and is itself owned by its file and by each of its requests; the
//! last owner to go posts `CloseSession`. Both control chains go to queue 0.

use kernel::{
    prelude::*,
    sync::{
        atomic::{Acquire, Atomic, Full, Relaxed, Release},
        Arc,
    },
};

use super::{Request, VDev, ABANDONED, DONE, PENDING};
use crate::abi::{CHAIN_OP_CLOSE_SESSION, CHAIN_OP_OPEN_SESSION, STATUS_MEMORY_ALLOCATION};

/// `Session::opened`: `OpenSession` could not be queued (nothing to close).
const OPEN_UNSENT: i32 = 2;
/// `Session::opened`: the outcome of `OpenSession` is not claimed yet.
const OPEN_PENDING: i32 = 1;

/// An open `/dev/vcuda`: one device session.
///
/// `OpenSession` is queued when the file is opened but not waited for there (`open` runs under
/// the misc devices' global mutex): the first call waits for it instead ([`Session::ready`]).
/// `OpenSession` and `CloseSession` always go to queue 0, which the device handles in order,
/// and calls only start once the open is done, so the device sees open, calls, close in that
/// order.
pub(crate) struct Session {
    pub(crate) id: u64,
    pub(crate) dev: Arc<VDev>,
    /// The `OpenSession` chain. Like a waiting thread, the session owes the ring's reference
    /// back once the chain leaves `PENDING`; whoever moves `opened` off `OPEN_PENDING` takes it.
    open_req: Arc<Request>,
    /// `OPEN_UNSENT`, `OPEN_PENDING`, then 0 (open) or a negative errno.
    opened: Atomic<i32>,
}

impl Session {
    /// Creates a session on `dev` and queues its `OpenSession` (without waiting).
    ///
    /// # Errors
    ///
    /// `ENOMEM`; `ENODEV` (device gone); `EINTR` (fatal signal while queue 0 was full).
    pub(crate) fn open(dev: Arc<VDev>) -> Result<Arc<Session>> {
        let id = dev.next_session.fetch_add(1, Relaxed);
        let open_req = Request::control(&dev, id, CHAIN_OP_OPEN_SESSION, PENDING)?;
        let s = Arc::new(
            Session {
                id,
                dev,
                open_req,
                opened: Atomic::new(OPEN_UNSENT),
            },
            GFP_KERNEL,
        )?;
        s.dev.submit(s.dev.control_queue()?, &s.open_req)?;
        s.opened.store(OPEN_PENDING, Release);
        Ok(s)
    }

    /// Waits until the device has opened the session.
    ///
    /// # Errors
    ///
    /// `EMFILE` (the device's session limit was reached), `EIO` (the device refused the
    /// session otherwise), `ENODEV` (device gone), `EINTR` (fatal signal while waiting).
    pub(crate) fn ready(&self) -> Result {
        loop {
            match self.opened.load(Acquire) {
                0 => return Ok(()),
                OPEN_PENDING => {}
                OPEN_UNSENT => return Err(ENODEV),
                e => return Err(Error::from_errno(e)),
            }
            let q = self.dev.control_queue()?;
            if !q
                .wait
                .wait_killable(|| self.open_req.state.load(Acquire) != PENDING)
            {
                return Err(EINTR);
            }
            let done = self.open_req.state.load(Acquire) == DONE;
            let res = match (done, self.open_req.first_status()) {
                (false, _) => ENODEV.to_errno(),
                (true, None | Some(0)) => 0,
                (true, Some(STATUS_MEMORY_ALLOCATION)) => EMFILE.to_errno(),
                (true, Some(_)) => EIO.to_errno(),
            };
            if self.opened.cmpxchg(OPEN_PENDING, res, Full).is_ok() && done {
                // SAFETY: The chain moved to DONE, so the completion path passed the ring's
                // reference (`Arc::into_raw` in `submit`) to the session; the compare-exchange
                // above lets exactly one thread take it. (DETACHED: removal keeps it.)
                drop(unsafe { Arc::from_raw(Arc::as_ptr(&self.open_req)) });
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        match self.opened.load(Acquire) {
            OPEN_UNSENT => return,
            OPEN_PENDING => {
                // Unclaimed: abandon the chain to the completion path, or, if it is back
                // already, take the ring's reference here (`&mut self`: no `ready` runs).
                if let Err(DONE) = self.open_req.state.cmpxchg(PENDING, ABANDONED, Full) {
                    // SAFETY: The chain moved to DONE (not by us), so its ring reference is
                    // the session's, and nobody claimed it. (DETACHED: removal keeps it.)
                    drop(unsafe { Arc::from_raw(Arc::as_ptr(&self.open_req)) });
                }
            }
            _ => {}
        }
        self.dev.close_session(self.id);
    }
}

impl VDev {
    /// Posts `CloseSession` for `id` on queue 0 (created `ABANDONED`: nobody waits).
    fn close_session(&self, id: u64) {
        let r = Request::control(self, id, CHAIN_OP_CLOSE_SESSION, ABANDONED)
            .and_then(|req| self.submit(self.control_queue()?, &req));
        if let Err(e) = r {
            pr_debug!("session {}: close not sent ({:?})\n", id, e);
        }
    }
}
