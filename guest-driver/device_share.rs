// SPDX-License-Identifier: GPL-2.0
//! Shared regions: page-locked user memory the device reads and writes in place for as long as
//! the program keeps it (`VCUDA_IOC_SHARE`, `VCUDA_IOC_UNSHARE`; `cudaHostAlloc` and
//! `cudaHostRegister` memory), like virtio-gpu's `RESOURCE_ATTACH_BACKING`.
//!
//! `VCUDA_IOC_SHARE` pins the pages (long-term, writable; charged to `RLIMIT_MEMLOCK`) into a
//! [`Kept`], and sends a `SharePages` chain that carries only the pages' guest-physical
//! extents; the device maps them and answers with the region's handle. No user page is in any
//! chain: the pinned pages belong to the session's [`Regions`], never to a [`Request`], whose
//! memory goes when the device returns the chain.
//!
//! The pages stay pinned until the device has answered the region's `UnsharePages`, or has
//! returned the session's `CloseSession` (the session hands its regions to that chain,
//! `device_session.rs`). A region whose fate the device did not tell (the waiter was killed,
//! the device went away, or its answer made no sense) is *orphaned*: only the close releases
//! it. If the close itself cannot be sent, its pages stay pinned for good, as a detached
//! chain's memory does (`finish` in `device_completion.rs`).

use core::ptr;

use kernel::{
    bindings,
    ffi::{c_int, c_uint, c_ulong, c_void},
    page::PAGE_SIZE,
    prelude::*,
    sync::Arc,
};

use super::{
    bounce::alloc_chunks, bufs::Bufs, request::chain_header, sg::SgBuilder, Request, Session,
    PENDING,
};
use crate::{
    abi::{
        ChainHeader, PageExtent, SharePagesReq, CHAIN_OP_SHARE_PAGES, CHAIN_OP_UNSHARE_PAGES,
        MAX_SHARE_EXTENTS, MAX_SHARE_LEN, MIN_REPLY_CAPACITY, RECORD_HEADER_LEN,
        REPLY_HEADER_LEN, STATUS_MEMORY_ALLOCATION,
    },
    sys::{self, Chunk, PinCharge},
};

/// Most pages one `pin_user_pages_fast` call pins.
const PIN_BATCH: usize = 1 << 16;

/// `EPROTO` (not among `kernel::error::code`).
fn eproto() -> Error {
    Error::from_errno(-(bindings::EPROTO as i32))
}

/// `EOPNOTSUPP` (not among `kernel::error::code`).
pub(crate) fn eopnotsupp() -> Error {
    Error::from_errno(-(bindings::EOPNOTSUPP as i32))
}

/// The pinned pages of one region and their charge to the locked-memory limit. Dropping it
/// unpins them (marked dirty: the device may have written them), so it is dropped only once
/// the device no longer uses them, in process context.
struct Kept {
    /// The pages, in the region's order; the first `pinned` are pinned.
    pages: KVVec<*mut c_void>,
    pinned: usize,
    /// Given back after the unpinning (fields drop after `Drop::drop`).
    _charge: PinCharge,
}

// SAFETY: The pages are pinned for this value alone; they may be unpinned from any thread
// (in process context, see the module docs).
unsafe impl Send for Kept {}
// SAFETY: `&Kept` only reads the page pointers.
unsafe impl Sync for Kept {}

impl Kept {
    /// Pins `npages` pages from `addr` (page-aligned), long-term and writable.
    ///
    /// # Errors
    ///
    /// `ENOMEM`; what `pin_user_pages_fast` returns (`EFAULT` when it pins nothing).
    fn pin(addr: u64, npages: usize, charge: PinCharge) -> Result<Kept> {
        let mut k = Kept {
            pages: KVVec::from_elem(ptr::null_mut(), npages, GFP_KERNEL_ACCOUNT)?,
            pinned: 0,
            _charge: charge,
        };
        let flags = bindings::FOLL_WRITE | bindings::FOLL_LONGTERM;
        while k.pinned < npages {
            let chunk = (npages - k.pinned).min(PIN_BATCH);
            // SAFETY: `pages[pinned..]` has room for `chunk` pointers; pin_user_pages_fast
            // checks that the range is user memory.
            let r = unsafe {
                bindings::pin_user_pages_fast(
                    (addr + (k.pinned * PAGE_SIZE) as u64) as c_ulong,
                    chunk as c_int,
                    flags as c_uint,
                    k.pages[k.pinned..].as_mut_ptr().cast(),
                )
            };
            if r <= 0 {
                // Dropping `k` unpins what is pinned.
                return Err(if r < 0 { Error::from_errno(r) } else { EFAULT });
            }
            k.pinned += r as usize;
        }
        Ok(k)
    }

    /// The pages' guest-physical extents, contiguous neighbours merged.
    fn extents(&self) -> Extents<'_> {
        Extents {
            pages: &self.pages[..self.pinned],
        }
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        if self.pinned == 0 {
            return;
        }
        // SAFETY: The first `pinned` pages were pinned by `pin_user_pages_fast` (FOLL_PIN)
        // and are unpinned exactly once, here, when the device no longer uses them (or never
        // learnt of them). The device may have written them: they are marked dirty.
        unsafe {
            bindings::unpin_user_pages_dirty_lock(
                self.pages.as_mut_ptr().cast(),
                self.pinned as c_ulong,
                true,
            )
        };
    }
}

/// Iterator over the guest-physical extents of pinned pages.
struct Extents<'a> {
    pages: &'a [*mut c_void],
}

impl Iterator for Extents<'_> {
    type Item = PageExtent;

    fn next(&mut self) -> Option<PageExtent> {
        // SAFETY: The pages are pinned (`Kept::extents`), hence valid.
        let phys = |p: *mut c_void| unsafe { sys::page_to_phys(p) };
        let first = *self.pages.first()?;
        let addr = phys(first);
        let mut n = 1;
        while self
            .pages
            .get(n)
            .is_some_and(|&p| phys(p) == addr + (n * PAGE_SIZE) as u64)
        {
            n += 1;
        }
        self.pages = &self.pages[n..];
        Some(PageExtent {
            addr,
            len: (n * PAGE_SIZE) as u64,
        })
    }
}

/// Where a region stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// Its `SharePages` chain is with the device.
    Sharing,
    /// The device made it under this handle.
    Shared(u64),
    /// Its `UnsharePages` chain is with the device.
    Unsharing,
    /// The device may use it, but nobody can name it: released with the session.
    Orphaned,
}

/// One region of a session.
pub(super) struct Region {
    /// The session's own name for it (handles are the device's).
    key: u64,
    state: State,
    kept: Kept,
}

/// A session's regions (in its `Mutex`; never held while waiting for the device).
pub(super) struct Regions {
    list: KVec<Region>,
    next_key: u64,
}

impl Regions {
    pub(super) const fn new() -> Self {
        Self {
            list: KVec::new(),
            next_key: 0,
        }
    }

    /// Every region, for the session's `CloseSession` chain.
    pub(super) fn take(&mut self) -> KVec<Region> {
        core::mem::take(&mut self.list)
    }

    fn insert(&mut self, kept: Kept) -> Result<u64> {
        let key = self.next_key;
        self.next_key += 1;
        self.list.push(
            Region {
                key,
                state: State::Sharing,
                kept,
            },
            GFP_KERNEL_ACCOUNT,
        )?;
        Ok(key)
    }

    fn set(&mut self, key: u64, state: State) {
        if let Some(r) = self.list.iter_mut().find(|r| r.key == key) {
            r.state = state;
        }
    }

    /// Takes a region out; the caller drops it (unpins) after unlocking.
    fn remove(&mut self, key: u64) -> Option<Region> {
        let i = self.list.iter().position(|r| r.key == key)?;
        self.list.remove(i).ok()
    }

    /// Whether a region is shared under `handle`.
    fn has(&self, handle: u64) -> bool {
        self.list.iter().any(|r| r.state == State::Shared(handle))
    }
}

/// Pages pinned by `regions`.
pub(super) fn pinned_pages(regions: &[Region]) -> usize {
    regions.iter().map(|r| r.kept.pinned).sum()
}

/// Builds a `SharePages` chain: `[ChainHeader + SharePagesReq][extent table]` (the table in
/// physically contiguous chunks, so that even 2^20 extents take few descriptors) and a
/// zeroed reply area of `MIN_REPLY_CAPACITY` bytes.
fn share_request(session: &Arc<Session>, kept: &Kept) -> Result<Arc<Request>> {
    let n = kept.extents().count();
    if n > MAX_SHARE_EXTENTS as usize {
        return Err(E2BIG);
    }
    let len = (kept.pinned * PAGE_SIZE) as u64;
    let mut head = KVVec::with_capacity(
        size_of::<ChainHeader>() + size_of::<SharePagesReq>(),
        GFP_KERNEL_ACCOUNT,
    )?;
    head.extend_from_slice(
        &chain_header(session.id, CHAIN_OP_SHARE_PAGES, MIN_REPLY_CAPACITY),
        GFP_KERNEL_ACCOUNT,
    )?;
    let req = SharePagesReq {
        len,
        n_extents: n as u32,
        reserved: 0,
    };
    head.extend_from_slice(&req.len.to_le_bytes(), GFP_KERNEL_ACCOUNT)?;
    head.extend_from_slice(&req.n_extents.to_le_bytes(), GFP_KERNEL_ACCOUNT)?;
    head.extend_from_slice(&req.reserved.to_le_bytes(), GFP_KERNEL_ACCOUNT)?;
    let table_len = n * size_of::<PageExtent>();
    let table = alloc_chunks(table_len as u64)?;
    fill_table(&table, kept)?;
    let reply = KVVec::from_elem(0u8, MIN_REPLY_CAPACITY as usize, GFP_KERNEL_ACCOUNT)?;

    let mut sgb = SgBuilder::new(session.dev.limits.max_desc);
    sgb.add_kernel(0, &head)?;
    let mut left = table_len;
    for c in table.iter() {
        let n = c.len().min(left);
        sgb.add(1, c.page(), 0, n)?;
        left -= n;
    }
    sgb.add_kernel(2, &reply)?;
    let descs = sgb.total;
    let (sg, lists) = sgb.finish()?;
    let mut bufs = Bufs::new(head, reply);
    bufs.table = table;
    bufs.sg = core::cell::UnsafeCell::new(sg);
    bufs.lists = lists;
    Request::new(bufs, descs, Some(session.clone()), PENDING)
}

/// Writes `kept`'s extents into `table` (little-endian `PageExtent`s, back to back).
fn fill_table(table: &[Chunk], kept: &Kept) -> Result {
    let mut chunks = table.iter();
    let mut cur: &mut [u8] = &mut [];
    for e in kept.extents() {
        if cur.is_empty() {
            let c = chunks.next().ok_or(EINVAL)?;
            // SAFETY: The chunk is ours, `len()` bytes at `as_ptr()`, and not yet in a chain.
            cur = unsafe { core::slice::from_raw_parts_mut(c.as_ptr(), c.len()) };
        }
        // A chunk is whole pages, so an extent never straddles two.
        let (slot, rest) = cur
            .split_at_mut_checked(size_of::<PageExtent>())
            .ok_or(EINVAL)?;
        slot[..8].copy_from_slice(&e.addr.to_le_bytes());
        slot[8..].copy_from_slice(&e.len.to_le_bytes());
        cur = rest;
    }
    Ok(())
}

/// Builds an `UnsharePages` chain: `[ChainHeader + handle]` and a zeroed reply area of
/// `MIN_REPLY_CAPACITY` bytes.
fn unshare_request(session: &Arc<Session>, handle: u64) -> Result<Arc<Request>> {
    let mut head = KVVec::with_capacity(size_of::<ChainHeader>() + 8, GFP_KERNEL_ACCOUNT)?;
    head.extend_from_slice(
        &chain_header(session.id, CHAIN_OP_UNSHARE_PAGES, MIN_REPLY_CAPACITY),
        GFP_KERNEL_ACCOUNT,
    )?;
    head.extend_from_slice(&handle.to_le_bytes(), GFP_KERNEL_ACCOUNT)?;
    let reply = KVVec::from_elem(0u8, MIN_REPLY_CAPACITY as usize, GFP_KERNEL_ACCOUNT)?;
    let mut sgb = SgBuilder::new(session.dev.limits.max_desc);
    sgb.add_kernel(0, &head)?;
    sgb.add_kernel(2, &reply)?;
    let descs = sgb.total;
    let (sg, lists) = sgb.finish()?;
    let mut bufs = Bufs::new(head, reply);
    bufs.sg = core::cell::UnsafeCell::new(sg);
    bufs.lists = lists;
    Request::new(bufs, descs, Some(session.clone()), PENDING)
}

impl Session {
    /// `VCUDA_IOC_SHARE`: pins `len` bytes at `addr` and shares them with the device until
    /// [`Session::unshare`] or the session's close. Returns the region's handle.
    ///
    /// # Errors
    ///
    /// `EINVAL` (`addr` or `len` not page-aligned, `len` 0, `addr + len` overflows), `E2BIG`
    /// (`len` over `MAX_SHARE_LEN`; more than `MAX_SHARE_EXTENTS` extents, or more
    /// descriptors than the device takes), `ENOMEM` (over `RLIMIT_MEMLOCK`, out of memory, or
    /// the device's status `cudaErrorMemoryAllocation`), `EFAULT` or another errno of
    /// `pin_user_pages_fast` (pages that cannot be pinned long-term and writable),
    /// `EOPNOTSUPP` (the device refused: any other status, e.g. an older backend), those of
    /// [`Session::ready`], and, with the region kept until the session's close because the
    /// device may have made it: `EINTR` (fatal signal), `ENODEV` (device removed), `EPROTO`
    /// (a reply without a status, or without a handle, or a handle 0 or already in use).
    pub(crate) fn share(self: &Arc<Self>, addr: u64, len: u64) -> Result<u64> {
        let page = PAGE_SIZE as u64;
        if len == 0 || addr % page != 0 || len % page != 0 || addr.checked_add(len).is_none() {
            return Err(EINVAL);
        }
        if len > MAX_SHARE_LEN {
            return Err(E2BIG);
        }
        self.ready()?;
        // At most MAX_SHARE_LEN / 4096 = 2^28.
        let npages = (len / page) as usize;
        let charge = PinCharge::new(npages)?.ok_or(ENOMEM)?;
        let kept = Kept::pin(addr, npages, charge)?;
        let req = share_request(self, &kept)?;
        let q = self.queue()?;
        // From here on the region belongs to the list (dropping it unpins).
        let key = self.regions.lock().insert(kept)?;
        if let Err(e) = self.dev.submit(q, &req) {
            // Never on a ring: the device did not see it.
            let r = self.regions.lock().remove(key);
            drop(r); // Unpinned after unlocking.
            return Err(e);
        }
        if let Err(e) = self.dev.wait(q, &req) {
            self.regions.lock().set(key, State::Orphaned);
            return Err(e);
        }
        let at = REPLY_HEADER_LEN + RECORD_HEADER_LEN;
        match req.first_status() {
            Some(0) => {
                let handle = req
                    .reply()
                    .get(at..at + 8)
                    .and_then(|b| b.try_into().ok())
                    .map(u64::from_le_bytes);
                let mut regions = self.regions.lock();
                match handle {
                    Some(h) if h != 0 && !regions.has(h) => {
                        regions.set(key, State::Shared(h));
                        Ok(h)
                    }
                    _ => {
                        regions.set(key, State::Orphaned);
                        Err(eproto())
                    }
                }
            }
            Some(status) => {
                // The device refused: it maps nothing.
                let r = self.regions.lock().remove(key);
                drop(r); // Unpinned after unlocking.
                Err(if status == STATUS_MEMORY_ALLOCATION {
                    ENOMEM
                } else {
                    eopnotsupp()
                })
            }
            None => {
                self.regions.lock().set(key, State::Orphaned);
                Err(eproto())
            }
        }
    }

    /// `VCUDA_IOC_UNSHARE`: ends the region `handle` and unpins its pages once the device has
    /// answered.
    ///
    /// # Errors
    ///
    /// `EINVAL` (no region of that handle, or one being unshared; or the device answered with
    /// an error status: the region is gone all the same), `ENOMEM`, `E2BIG`, `EIO` (not sent:
    /// the region stays), and, with the region then kept until the session's close: `EINTR`
    /// (fatal signal), `ENODEV` (device removed), `EPROTO` (a reply without a status).
    pub(crate) fn unshare(self: &Arc<Self>, handle: u64) -> Result {
        if handle == 0 {
            return Err(EINVAL);
        }
        let key = {
            let mut regions = self.regions.lock();
            let r = regions
                .list
                .iter_mut()
                .find(|r| r.state == State::Shared(handle))
                .ok_or(EINVAL)?;
            r.state = State::Unsharing;
            r.key
        };
        let sent = unshare_request(self, handle).and_then(|req| {
            let q = self.queue()?;
            self.dev.submit(q, &req)?;
            Ok((q, req))
        });
        let (q, req) = match sent {
            Ok(s) => s,
            Err(e) => {
                // Never on a ring: the region stays shared.
                self.regions.lock().set(key, State::Shared(handle));
                return Err(e);
            }
        };
        let status = self
            .dev
            .wait(q, &req)
            .and_then(|()| req.first_status().ok_or_else(eproto));
        match status {
            Ok(status) => {
                // The device answered: it no longer uses the pages, whatever the status.
                let r = self.regions.lock().remove(key);
                drop(r); // Unpinned after unlocking.
                if status == 0 {
                    Ok(())
                } else {
                    Err(EINVAL)
                }
            }
            Err(e) => {
                self.regions.lock().set(key, State::Orphaned);
                Err(e)
            }
        }
    }
}
