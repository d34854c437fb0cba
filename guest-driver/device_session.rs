// SPDX-License-Identifier: GPL-2.0
//! Device sessions: one per open `/dev/vcuda`.
//!
//! A [`Session`] owns its `OpenSession` chain once the device has returned it (like a waiting
//! thread owns its request), and is itself owned by its file and by each of its requests; the
//! last owner to go posts `CloseSession`. Both control chains go to queue 0.

use kernel::{
    new_mutex,
    prelude::*,
    sync::{
        atomic::{Acquire, Atomic, Full, Relaxed, Release},
        Arc, Mutex,
    },
};

use super::{
    queue::Queue,
    share::{pinned_pages, Region, Regions},
    Request, VDev, ABANDONED, DONE, PENDING,
};
use crate::abi::{
    CHAIN_OP_OPEN_SESSION, MIN_REPLY_CAPACITY, STATUS_MEMORY_ALLOCATION, VCUDA_MAX_DETACHED,
};

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
///
/// The session also holds the pages it shares with the device (`VCUDA_IOC_SHARE`); when it
/// goes, its `CloseSession` chain takes them over (see `device_share.rs`).
#[pin_data(PinnedDrop)]
pub(crate) struct Session {
    pub(crate) id: u64,
    pub(crate) dev: Arc<VDev>,
    /// The `OpenSession` chain. Like a waiting thread, the session owes the ring's reference
    /// back once the chain leaves `PENDING`; whoever moves `opened` off `OPEN_PENDING` takes it.
    open_req: Arc<Request>,
    /// `OPEN_UNSENT`, `OPEN_PENDING`, then 0 (open) or a negative errno.
    opened: Atomic<i32>,
    /// The session's detached chains not yet dropped (each holds a [`DetachedSlot`]), in the
    /// low 32 bits, and the queue they went to, in the high 32 (see [`Session::queue`]).
    detached: Atomic<u64>,
    /// The regions shared with the device, and their pinned pages (process context only).
    #[pin]
    pub(super) regions: Mutex<Regions>,
    /// Reply areas of the session's finished chains, for its next ones (see
    /// [`Session::reply_area`]); at most `KEPT_REPLY_AREAS` large and
    /// `KEPT_SMALL_REPLY_AREAS` small ones.
    #[pin]
    replies: Mutex<KVec<KVVec<u8>>>,
}

/// Most reply areas a session keeps for reuse: larger ones (up to the device's largest
/// control area each), and detached chains' 4 KiB ones (a stream of posted calls keeps a
/// few of them in flight).
const KEPT_REPLY_AREAS: usize = 2;
const KEPT_SMALL_REPLY_AREAS: usize = 8;

impl Session {
    /// Creates a session on `dev` and queues its `OpenSession` (without waiting).
    ///
    /// # Errors
    ///
    /// `ENOMEM`; `ENODEV` (device gone); `EINTR` (fatal signal while queue 0 was full).
    pub(crate) fn open(dev: Arc<VDev>) -> Result<Arc<Session>> {
        let id = dev.next_session.fetch_add(1, Relaxed);
        let open_req = Request::control(&dev, id, CHAIN_OP_OPEN_SESSION, PENDING)?;
        let s = Arc::pin_init(
            pin_init!(Session {
                id,
                dev,
                open_req,
                opened: Atomic::new(OPEN_UNSENT),
                detached: Atomic::new(0),
                regions <- new_mutex!(Regions::new()),
                replies <- new_mutex!(KVec::new()),
            }),
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

/// One of a session's [`VCUDA_MAX_DETACHED`] places for a detached chain; a request holds it
/// until it is dropped (after the device returned its chain).
pub(crate) struct DetachedSlot(Arc<Session>);

impl Drop for DetachedSlot {
    fn drop(&mut self) {
        // The count is at least one (this slot's), so the queue bits stay.
        self.0.detached.fetch_sub(1, Full);
    }
}

impl Session {
    /// A place for one more detached chain, unless `VCUDA_MAX_DETACHED` of the session's are
    /// with the device (the caller then waits for its chain instead). The first of a run of
    /// them picks the queue the rest of the run, and every chain of the session meanwhile,
    /// goes to.
    pub(crate) fn detached_slot(self: &Arc<Self>) -> Option<DetachedSlot> {
        let mut cur = self.detached.load(Acquire);
        loop {
            let count = cur & COUNT_MASK;
            if count >= u64::from(VCUDA_MAX_DETACHED) {
                return None;
            }
            let new = if count == 0 {
                ((self.dev.cpu_queue_index() as u64) << 32) | 1
            } else {
                cur + 1
            };
            match self.detached.cmpxchg(cur, new, Full) {
                Ok(_) => return Some(DetachedSlot(self.clone())),
                Err(now) => cur = now,
            }
        }
    }

    /// The queue for the session's next chain. While detached chains of the session are with
    /// the device, theirs: the device takes a queue in order, so the chain runs after them.
    /// Otherwise the current CPU's (whose interrupt is usually that CPU's too); every earlier
    /// chain of the session has been answered then, or is another thread's, running
    /// alongside.
    pub(crate) fn queue(&self) -> Result<&Queue> {
        let cur = self.detached.load(Acquire);
        let i = if cur & COUNT_MASK != 0 {
            (cur >> 32) as usize
        } else {
            self.dev.cpu_queue_index()
        };
        self.dev.queue_at(i)
    }
}

impl Session {
    /// A reply area of `len` bytes for one of the session's chains: one its earlier chains
    /// used, if one of that size is kept (it holds nothing but the session's own earlier
    /// replies, which its file has read already), else a new one, zeroed (so no other
    /// kernel memory can reach the caller through a reply the device did not fill).
    /// Zeroing 64 KiB per call cost as much as a small call itself in a TCG guest.
    pub(crate) fn reply_area(&self, len: usize) -> Result<KVVec<u8>> {
        {
            let mut kept = self.replies.lock();
            if let Some(i) = kept.iter().position(|r| r.len() == len) {
                if let Ok(r) = kept.remove(i) {
                    return Ok(r);
                }
            }
        }
        Ok(KVVec::from_elem(0u8, len, GFP_KERNEL_ACCOUNT)?)
    }

    /// Keeps a finished chain's reply area for [`Session::reply_area`] (process context):
    /// up to `KEPT_SMALL_REPLY_AREAS` of the smallest size (a detached chain's; a stream of
    /// posted calls takes one each) and `KEPT_REPLY_AREAS` larger ones, so that neither
    /// kind pushes the other out. A reused area is not zeroed again: only what the device
    /// writes of it is ever read (`Request::reply`), and a detached chain's is never read.
    pub(crate) fn keep_reply_area(&self, area: KVVec<u8>) {
        let small = area.len() <= MIN_REPLY_CAPACITY as usize;
        let mut kept = self.replies.lock();
        let same = kept
            .iter()
            .filter(|r| (r.len() <= MIN_REPLY_CAPACITY as usize) == small)
            .count();
        let most = if small {
            KEPT_SMALL_REPLY_AREAS
        } else {
            KEPT_REPLY_AREAS
        };
        if same < most {
            let _ = kept.push(area, GFP_KERNEL);
        }
    }
}

/// `Session::detached`: the count of detached chains.
const COUNT_MASK: u64 = 0xffff_ffff;

#[pinned_drop]
impl PinnedDrop for Session {
    fn drop(self: Pin<&mut Self>) {
        match self.opened.load(Acquire) {
            // Never opened, so nothing was shared either.
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
        let regions = self.regions.lock().take();
        self.dev.close_session(self.id, regions);
    }
}

impl VDev {
    /// Posts `CloseSession` for `id` on queue 0 (created `ABANDONED`: nobody waits), handing
    /// it the session's shared regions, which stay pinned until the device has returned it.
    ///
    /// If the close cannot be sent (device gone, out of memory, killed while queue 0 was
    /// full), the device may still use the regions, as it may a detached chain's buffers
    /// (`finish`): their pages stay pinned for good.
    fn close_session(&self, id: u64, mut regions: KVec<Region>) {
        let pages = pinned_pages(&regions);
        let r = Request::close(self, id, &mut regions).and_then(|req| {
            self.control_queue()
                .and_then(|q| self.submit(q, &req))
                .inspect_err(|_| {
                    if req.holds_regions() {
                        // Not sent, and only ours: keep it, and the regions in it.
                        core::mem::forget(req.clone());
                    }
                })
        });
        if let Err(e) = r {
            // Not moved into a chain, or in one kept above.
            core::mem::forget(regions);
            if pages > 0 {
                pr_warn!(
                    "session {}: close not sent ({:?}); its {} shared pages stay pinned\n",
                    id,
                    e,
                    pages
                );
            } else {
                pr_debug!("session {}: close not sent ({:?})\n", id, e);
            }
        }
    }
}
