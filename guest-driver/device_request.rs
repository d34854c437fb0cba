// SPDX-License-Identifier: GPL-2.0
//! One call's request: building its descriptor chain, and reading its reply.
//!
//! A [`Request`] is shared (`Arc`) by the submitting thread and, while its chain is on a ring,
//! the ring (see the ownership rules in `device.rs`). After construction only its state and
//! used length change (`device_completion.rs`); the reply area and in data are read only once
//! the request is `DONE`.

use core::{
    cell::UnsafeCell,
    mem::size_of,
    ptr,
    sync::atomic::{AtomicBool, Ordering},
};

use kernel::{
    bindings,
    ffi::c_uint,
    page::PAGE_SIZE,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc, UniqueArc,
    },
    uaccess::{UserPtr, UserSlice},
    workqueue::{impl_has_work, new_work, Work},
};

use super::{
    bounce::ChunkCursor, bufs::Bufs, session::DetachedSlot, sg::SgBuilder, share::Region,
    Session, VDev, ABANDONED, PENDING,
};
use crate::abi::{
    ChainHeader, VcudaSeg, VcudaSubmit, CHAIN_OP_CLOSE_SESSION, CHAIN_OP_SUBMIT,
    CHAIN_OP_SUBMIT_DETACHED, MIN_REPLY_CAPACITY, RECORD_HEADER_LEN, VCUDA_SUBMIT_DETACHED,
    RECORD_STATUS_OFFSET, REPLY_HEADER_CTRL_LEN_OFFSET, REPLY_HEADER_LEN,
    REPLY_HEADER_MAGIC_OFFSET, REPLY_HEADER_N_RECORDS_OFFSET, REPLY_MAGIC, SEG_IN, SEG_OUT,
    VCUDA_MAX_SEGS,
};

/// Largest reply area the module allocates.
const MAX_REPLY_AREA: usize = 4 << 20;
/// Most out data a detached chain carries (copied into kernel memory); a larger detached
/// submit waits like any other.
const MAX_DETACHED_DATA: u64 = 1 << 20;

/// One call: a descriptor chain and its completion.
#[pin_data]
pub(crate) struct Request {
    #[pin]
    work: Work<Request>,
    pub(super) state: Atomic<u32>,
    pub(super) used_len: Atomic<u32>,
    bufs: Bufs,
    /// Descriptors the chain uses (without indirect tables).
    pub(super) descs: usize,
    /// Keeps the session open until the device has returned this chain.
    _session: Option<Arc<Session>>,
    /// A detached chain's place among its session's (nobody waits for it).
    detached: Option<DetachedSlot>,
}

// SAFETY: The raw pointers are to pinned pages and kernel buffers the request owns; they may be
// used and released from any thread (release happens in process context only, see the
// module docs).
unsafe impl Send for Request {}
// SAFETY: After construction only atomics are mutated, and `sg` is read by one
// `virtqueue_add_sgs` call under the queue lock; the reply area is read after completion.
unsafe impl Sync for Request {}

impl_has_work! {
    impl HasWork<Self> for Request { self.work }
}

/// The bytes of a [`ChainHeader`].
pub(super) fn chain_header(
    session: u64,
    op: u32,
    reply_capacity: u32,
) -> [u8; size_of::<ChainHeader>()] {
    let mut h = [0u8; size_of::<ChainHeader>()];
    h[0..8].copy_from_slice(&session.to_le_bytes());
    h[8..12].copy_from_slice(&op.to_le_bytes());
    h[12..16].copy_from_slice(&reply_capacity.to_le_bytes());
    h
}

impl Request {
    /// A request of `bufs` (whose scatterlists are built) in state `state`.
    pub(super) fn new(
        bufs: Bufs,
        descs: usize,
        session: Option<Arc<Session>>,
        state: u32,
    ) -> Result<Arc<Request>> {
        Self::new_unique(bufs, descs, session, state).map(Into::into)
    }

    /// [`Request::new`], still unshared (so still changeable).
    fn new_unique(
        bufs: Bufs,
        descs: usize,
        session: Option<Arc<Session>>,
        state: u32,
    ) -> Result<Pin<UniqueArc<Request>>> {
        UniqueArc::pin_init(
            pin_init!(Request {
                work <- new_work!("vcuda_reap"),
                state: Atomic::new(state),
                used_len: Atomic::new(0),
                bufs,
                descs,
                _session: session,
                detached: None,
            }),
            GFP_KERNEL,
        )
    }

    /// A chain without message or data: `OpenSession`/`CloseSession`.
    pub(super) fn control(dev: &VDev, id: u64, op: u32, state: u32) -> Result<Arc<Request>> {
        Self::control_unique(dev, id, op, state).map(Into::into)
    }

    /// The `CloseSession` chain of session `id` (created `ABANDONED`: nobody waits). It takes
    /// the session's shared regions out of `regions`, only once nothing can fail any more,
    /// and keeps their pages pinned until the device has returned it.
    pub(super) fn close(dev: &VDev, id: u64, regions: &mut KVec<Region>) -> Result<Arc<Request>> {
        let mut req = Self::control_unique(dev, id, CHAIN_OP_CLOSE_SESSION, ABANDONED)?;
        req.as_mut().project().bufs.regions = core::mem::take(regions);
        Ok(req.into())
    }

    fn control_unique(
        dev: &VDev,
        id: u64,
        op: u32,
        state: u32,
    ) -> Result<Pin<UniqueArc<Request>>> {
        let mut head = KVVec::new();
        head.extend_from_slice(&chain_header(id, op, MIN_REPLY_CAPACITY), GFP_KERNEL)?;
        let reply = KVVec::from_elem(0u8, MIN_REPLY_CAPACITY as usize, GFP_KERNEL)?;
        let mut sgb = SgBuilder::new(dev.limits.max_desc);
        sgb.add_kernel(0, &head)?;
        sgb.add_kernel(2, &reply)?;
        let descs = sgb.total;
        let (sg, lists) = sgb.finish()?;
        let mut bufs = Bufs::new(head, reply);
        bufs.sg = UnsafeCell::new(sg);
        bufs.lists = lists;
        Self::new_unique(bufs, descs, None, state)
    }

    /// Whether this is a `CloseSession` chain holding shared regions.
    pub(super) fn holds_regions(&self) -> bool {
        !self.bufs.regions.is_empty()
    }

    /// Builds the chain of a `VCUDA_IOC_SUBMIT`: copies the message in, pins the segments.
    /// With `slot` (the submit asked for `VCUDA_SUBMIT_DETACHED` and the session has room),
    /// a detached chain whose out data is copied (the caller may reuse its buffers once the
    /// ioctl returns) if it carries at most `MAX_DETACHED_DATA`; else a chain to wait for.
    ///
    /// # Errors
    ///
    /// `EINVAL` (unknown flags, empty message, reply buffer under 4096 bytes, bad segment
    /// direction or flags, address overflow, in segments in a detached submit), `E2BIG` (message over `max_ctrl_len`, more than
    /// `VCUDA_MAX_SEGS` segments, out or in data over `max_data_len`, more descriptors than
    /// `max_chain_descriptors`), `EFAULT` (unreadable message or segment table, pages that
    /// cannot be pinned), `ENOMEM`.
    pub(crate) fn for_submit(
        session: &Arc<Session>,
        sub: &VcudaSubmit,
        mut slot: Option<DetachedSlot>,
    ) -> Result<Arc<Request>> {
        let dev = &*session.dev;
        let lim = dev.limits;
        if sub.flags & !VCUDA_SUBMIT_DETACHED != 0
            || sub.ctrl_len == 0
            || sub.reply_cap < MIN_REPLY_CAPACITY
        {
            return Err(EINVAL);
        }
        if sub.ctrl_len > lim.max_ctrl || sub.n_segs > VCUDA_MAX_SEGS {
            return Err(E2BIG);
        }

        // The segment table.
        let n = sub.n_segs as usize;
        let mut segs = KVec::with_capacity(n, GFP_KERNEL_ACCOUNT)?;
        let mut rd = UserSlice::new(
            UserPtr::from_addr(sub.segs_addr as usize),
            n * size_of::<VcudaSeg>(),
        )
        .reader();
        let (mut out_total, mut in_total, mut pages_total) = (0u64, 0u64, 0usize);
        for _ in 0..n {
            let s: VcudaSeg = rd.read()?;
            if s.flags != 0 || (s.dir != SEG_OUT && s.dir != SEG_IN) {
                return Err(EINVAL);
            }
            let end = s.addr.checked_add(s.len).ok_or(EINVAL)?;
            let total = if s.dir == SEG_OUT {
                &mut out_total
            } else {
                &mut in_total
            };
            *total = total.saturating_add(s.len);
            if *total > lim.max_data {
                return Err(E2BIG);
            }
            if s.len > 0 {
                pages_total +=
                    (end.div_ceil(PAGE_SIZE as u64) - s.addr / PAGE_SIZE as u64) as usize;
            }
            segs.push(s, GFP_KERNEL_ACCOUNT)?;
        }
        if sub.flags & VCUDA_SUBMIT_DETACHED != 0 && in_total > 0 {
            return Err(EINVAL);
        }
        if out_total > MAX_DETACHED_DATA {
            slot = None;
        }
        let (op, reply_area) = match slot {
            Some(_) => (CHAIN_OP_SUBMIT_DETACHED, MIN_REPLY_CAPACITY as usize),
            None => (
                CHAIN_OP_SUBMIT,
                (sub.reply_cap as usize).min(MAX_REPLY_AREA.max(lim.max_ctrl as usize)),
            ),
        };

        // The head: ChainHeader + message.
        let mut head =
            KVVec::with_capacity(size_of::<ChainHeader>() + sub.ctrl_len as usize, GFP_KERNEL_ACCOUNT)?;
        head.extend_from_slice(
            &chain_header(session.id, op, reply_area as u32),
            GFP_KERNEL,
        )?;
        UserSlice::new(
            UserPtr::from_addr(sub.ctrl_addr as usize),
            sub.ctrl_len as usize,
        )
        .read_all(&mut head, GFP_KERNEL_ACCOUNT)?;
        let reply = session.reply_area(reply_area)?;

        let mut bufs = Bufs::new(head, reply);
        bufs.reply_home = Some(session.clone());
        // Scatter-gather lists: [head][out data][reply][in data].
        let mut sgb = SgBuilder::new(lim.max_desc);
        sgb.add_kernel(0, &bufs.head)?;
        sgb.add_kernel(2, &bufs.reply)?;
        if slot.is_some() {
            // Nobody waits: the caller's buffers are free once the ioctl returns.
            bufs.bounce(&segs, [out_total, 0], &mut sgb)?;
        } else if !bufs.charge_pins(pages_total)? {
            // Pinning would pass the caller's RLIMIT_MEMLOCK: copy instead.
            note_memlock_fallback();
            bufs.bounce(&segs, [out_total, in_total], &mut sgb)?;
        } else {
            bufs.pin(&segs, pages_total)?;
            match bufs.map_pinned(&segs, &mut sgb) {
                Ok(()) => {}
                Err(e) if e == E2BIG => {
                    // Too scattered for the device's descriptor limit: copy instead.
                    sgb.clear_data();
                    bufs.unpin();
                    bufs.bounce(&segs, [out_total, in_total], &mut sgb)?;
                }
                Err(e) => return Err(e),
            }
        }
        let descs = sgb.total;
        let (sg, lists) = sgb.finish()?;
        bufs.sg = UnsafeCell::new(sg);
        bufs.lists = lists;
        let state = if slot.is_some() { ABANDONED } else { PENDING };
        let mut req = Self::new_unique(bufs, descs, Some(session.clone()), state)?;
        *req.as_mut().project().detached = slot;
        Ok(req.into())
    }

    /// Whether nobody waits for this request (a detached chain).
    pub(crate) fn is_detached(&self) -> bool {
        self.detached.is_some()
    }

    /// The non-empty sublists for `virtqueue_add_sgs`: (pointers, out count, in count).
    pub(super) fn sg_lists(&self) -> ([*mut bindings::scatterlist; 4], c_uint, c_uint) {
        // SAFETY: `sg` is not resized after construction; only its entries are viewed as
        // `*mut` for the duration of one `virtqueue_add_sgs`.
        let base = unsafe { (*self.bufs.sg.get()).as_mut_ptr() };
        let mut out = [ptr::null_mut(); 4];
        let (mut n, mut n_out) = (0, 0);
        for (i, &(start, count)) in self.bufs.lists.iter().enumerate() {
            if count == 0 {
                continue;
            }
            // SAFETY: `start` is in bounds of the `sg` allocation.
            out[n] = unsafe { base.add(start) };
            n += 1;
            if i < 2 {
                n_out += 1;
            }
        }
        (out, n_out, (n - n_out as usize) as c_uint)
    }

    /// After a `DONE` call whose data went through bounce chunks: copies the in data to the
    /// caller's in segments (in order, as the device would have written them).
    ///
    /// # Errors
    ///
    /// `EFAULT` if an in segment is not writable.
    pub(crate) fn copy_back(&self) -> Result {
        let Some(b) = &self.bufs.bounce else {
            return Ok(());
        };
        let mut cur = ChunkCursor::new(&b.inp);
        for &(addr, len) in b.in_segs.iter() {
            cur.copy_to_user(addr, len)?;
        }
        Ok(())
    }

    /// The status of the reply's first record, if the reply has one.
    pub(super) fn first_status(&self) -> Option<u32> {
        let r = self.reply();
        let word = |o: usize| Some(u32::from_le_bytes(r.get(o..o + 4)?.try_into().ok()?));
        if r.len() < REPLY_HEADER_LEN + RECORD_HEADER_LEN
            || word(REPLY_HEADER_MAGIC_OFFSET)? != REPLY_MAGIC
            || word(REPLY_HEADER_N_RECORDS_OFFSET)? == 0
        {
            return None;
        }
        word(REPLY_HEADER_LEN + RECORD_STATUS_OFFSET)
    }

    /// The reply bytes the device wrote, once the request is `DONE`: the written part of the
    /// reply area, cut to the length its `ReplyHeader` states when it has one.
    pub(crate) fn reply(&self) -> &[u8] {
        let area = self.bufs.reply.as_slice();
        let used = (self.used_len.load(Relaxed) as usize).min(area.len());
        let mut n = used;
        if used >= REPLY_HEADER_LEN {
            let word =
                |o: usize| u32::from_le_bytes([area[o], area[o + 1], area[o + 2], area[o + 3]]);
            if word(REPLY_HEADER_MAGIC_OFFSET) == REPLY_MAGIC {
                let stated = REPLY_HEADER_LEN + word(REPLY_HEADER_CTRL_LEN_OFFSET) as usize;
                n = n.min(stated);
            }
        }
        &area[..n]
    }
}

/// Says once per boot that a call's pages were copied rather than pinned because the caller's
/// locked-memory limit was reached.
fn note_memlock_fallback() {
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        pr_info!("vcuda: a call would pass its process's RLIMIT_MEMLOCK; copying its data through kernel buffers instead of pinning\n");
    }
}
