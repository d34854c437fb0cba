// SPDX-License-Identifier: GPL-2.0
//! The memory of one chain ([`Bufs`]), and pinning the caller's pages into it.
//!
//! A request owns its `Bufs`: the header and message, the reply area, the pinned user pages
//! (or bounce chunks, `device_bounce.rs`), a `SharePages` chain's extent table, a closing
//! session's shared regions (`device_share.rs`) and the scatterlists. The device reads and
//! writes them while the chain is on a ring; they are released (pages unpinned, in pages
//! marked dirty) only when the request is dropped, in process context.

use core::{cell::UnsafeCell, ptr};

use kernel::{
    bindings,
    ffi::{c_int, c_uint, c_ulong, c_void},
    page::PAGE_SIZE,
    prelude::*,
    sync::Arc,
};

use super::{
    bounce::Bounce,
    sg::{SgBuilder, SgLists},
    share::Region,
    Session,
};
use crate::{
    abi::{VcudaSeg, SEG_IN, SEG_OUT},
    sys::{Chunk, PinCharge},
};

/// A range of `Bufs::pages` pinned by one `pin_user_pages_fast` sequence.
pub(super) struct PinRange {
    start: usize,
    count: usize,
    write: bool,
}

/// The memory of one chain.
pub(super) struct Bufs {
    /// `ChainHeader` + message (device-readable).
    pub(super) head: KVVec<u8>,
    /// Reply area (device-writable; read only after the device returned the chain).
    pub(super) reply: KVVec<u8>,
    /// Pinned user pages.
    pub(super) pages: KVVec<*mut c_void>,
    pub(super) pins: KVec<PinRange>,
    /// The pinned pages' charge to the caller's locked-memory limit.
    pub(super) charge: Option<PinCharge>,
    /// Data copied through kernel memory instead (see [`Bounce`]).
    pub(super) bounce: Option<Bounce>,
    /// Physically contiguous kernel chunks the device reads after `head`: a `SharePages`
    /// chain's extent table.
    pub(super) table: KVec<Chunk>,
    /// A closing session's shared regions (`CloseSession`): their pages stay pinned until the
    /// device has returned this chain (`device_share.rs`).
    pub(super) regions: KVec<Region>,
    /// The scatterlists: `[head][out data][reply][in data]`, each sublist end-marked. Only
    /// `virtqueue_add_sgs` uses them (reads; the `UnsafeCell` allows its `*mut` view).
    pub(super) sg: UnsafeCell<KVVec<bindings::scatterlist>>,
    /// (start, count) of the four sublists in `sg`.
    pub(super) lists: SgLists,
    /// The session the reply area goes back to when the chain is done (see
    /// `Session::reply_area`).
    pub(super) reply_home: Option<Arc<Session>>,
}

impl Bufs {
    /// The memory of a chain of `head` and `reply` alone; the caller adds the rest, and the
    /// scatterlists once built.
    pub(super) fn new(head: KVVec<u8>, reply: KVVec<u8>) -> Self {
        Self {
            head,
            reply,
            pages: KVVec::new(),
            pins: KVec::new(),
            charge: None,
            bounce: None,
            table: KVec::new(),
            regions: KVec::new(),
            sg: UnsafeCell::new(KVVec::new()),
            lists: [(0, 0); 4],
            reply_home: None,
        }
    }

    /// Unpins every pinned page (device-writable ones marked dirty).
    pub(super) fn unpin(&mut self) {
        for p in &self.pins {
            let pages = self.pages[p.start..p.start + p.count].as_mut_ptr().cast();
            // SAFETY: These pages were pinned by `pin_user_pages_fast` (FOLL_PIN) and are
            // unpinned exactly once, here, after the device returned the chain (or never got
            // it). Device-writable pages are marked dirty.
            unsafe {
                if p.write {
                    bindings::unpin_user_pages_dirty_lock(pages, p.count as c_ulong, true);
                } else {
                    bindings::unpin_user_pages(pages, p.count as c_ulong);
                }
            }
        }
        self.pins.clear();
        self.pages.clear();
        self.charge = None;
    }

    /// Charges `pages_total` pages to the caller's locked-memory limit (`RLIMIT_MEMLOCK`)
    /// for [`Bufs::pin`]. `false`: over the limit; the call's data must go through bounce
    /// chunks instead (charged to the caller's memory cgroup), as with a program whose
    /// limit is small.
    pub(super) fn charge_pins(&mut self, pages_total: usize) -> Result<bool> {
        self.charge = PinCharge::new(pages_total)?;
        Ok(self.charge.is_some())
    }

    /// Pins the segments' pages: out segments first, then in segments, each in the caller's
    /// order. On failure `pins` describes what is pinned (and `unpin`/drop releases it).
    pub(super) fn pin(&mut self, segs: &[VcudaSeg], pages_total: usize) -> Result {
        self.pages = KVVec::from_elem(ptr::null_mut(), pages_total, GFP_KERNEL_ACCOUNT)?;
        let mut next = 0;
        for dir in [SEG_OUT, SEG_IN] {
            for s in segs.iter().filter(|s| s.dir == dir && s.len > 0) {
                let first = (s.addr / PAGE_SIZE as u64) as usize;
                let count = ((s.addr + s.len).div_ceil(PAGE_SIZE as u64) as usize) - first;
                self.pins.push(
                    PinRange {
                        start: next,
                        count: 0,
                        write: dir == SEG_IN,
                    },
                    GFP_KERNEL,
                )?;
                let flags = if dir == SEG_IN {
                    bindings::FOLL_WRITE
                } else {
                    0
                };
                let mut got = 0;
                while got < count {
                    let chunk = (count - got).min(1 << 16);
                    // SAFETY: `pages[next + got..]` has room for `chunk` pointers;
                    // pin_user_pages_fast checks that the range is user memory.
                    let r = unsafe {
                        bindings::pin_user_pages_fast(
                            ((first + got) * PAGE_SIZE) as c_ulong,
                            chunk as c_int,
                            flags as c_uint,
                            self.pages[next + got..].as_mut_ptr().cast(),
                        )
                    };
                    if r <= 0 {
                        return Err(if r < 0 { Error::from_errno(r) } else { EFAULT });
                    }
                    got += r as usize;
                    if let Some(p) = self.pins.last_mut() {
                        p.count = got;
                    }
                }
                next += count;
            }
        }
        Ok(())
    }

    /// Adds the pinned pages to the out (1) and in (3) lists.
    pub(super) fn map_pinned(&self, segs: &[VcudaSeg], sgb: &mut SgBuilder) -> Result {
        let mut pi = 0;
        for (dir, list) in [(SEG_OUT, 1), (SEG_IN, 3)] {
            for s in segs.iter().filter(|s| s.dir == dir && s.len > 0) {
                let mut addr = s.addr as usize;
                let end = (s.addr + s.len) as usize;
                while addr < end {
                    let off = addr % PAGE_SIZE;
                    let len = (PAGE_SIZE - off).min(end - addr);
                    sgb.add(list, self.pages[pi], off, len)?;
                    pi += 1;
                    addr += len;
                }
            }
        }
        Ok(())
    }
}

impl Drop for Bufs {
    fn drop(&mut self) {
        self.unpin();
        if let Some(home) = self.reply_home.take() {
            home.keep_reply_area(core::mem::take(&mut self.reply));
        }
    }
}
