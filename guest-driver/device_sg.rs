// SPDX-License-Identifier: GPL-2.0
//! The scatter-gather lists of a chain: `[head][out data][reply][in data]`, built page by
//! page with physically contiguous neighbours merged.
//!
//! [`SgBuilder`] collects the entries while a request is built; `finish` writes the
//! scatterlists, which the request then owns (in its `Bufs`) and which only
//! `virtqueue_add_sgs` reads.

use kernel::{
    bindings,
    ffi::{c_uint, c_void},
    page::PAGE_SIZE,
    prelude::*,
};

use crate::sys;

/// Longest scatter-gather entry (merged contiguous pages).
const MAX_SG_ENTRY: u64 = 1 << 30;

/// One scatter-gather entry: physically contiguous bytes.
#[derive(Clone, Copy)]
struct Entry {
    page: *mut c_void,
    offset: u32,
    len: u32,
    phys: u64,
}

/// (start, count) of the four scatterlist sublists `[head][out data][reply][in data]`.
pub(super) type SgLists = [(usize, usize); 4];

/// Builds the scatter-gather entries of a chain, merging physically contiguous pages.
pub(super) struct SgBuilder {
    lists: [KVVec<Entry>; 4],
    pub(super) total: usize,
    max: usize,
}

impl SgBuilder {
    pub(super) fn new(max: u32) -> Self {
        Self {
            lists: [KVVec::new(), KVVec::new(), KVVec::new(), KVVec::new()],
            total: 0,
            max: max as usize,
        }
    }

    /// Appends `len` bytes at `offset` in `page` to list `list`.
    pub(super) fn add(
        &mut self,
        list: usize,
        page: *mut c_void,
        offset: usize,
        len: usize,
    ) -> Result {
        // SAFETY: `page` is a valid page (pinned, or backing a live kernel buffer).
        let phys = unsafe { sys::page_to_phys(page) } + offset as u64;
        if let Some(last) = self.lists[list].last_mut() {
            if last.phys + u64::from(last.len) == phys
                && u64::from(last.len) + len as u64 <= MAX_SG_ENTRY
            {
                last.len += len as u32;
                return Ok(());
            }
        }
        if self.total >= self.max {
            return Err(E2BIG);
        }
        self.lists[list].push(
            Entry {
                page,
                offset: offset as u32,
                len: len as u32,
                phys,
            },
            GFP_KERNEL,
        )?;
        self.total += 1;
        Ok(())
    }

    /// Forgets the data lists (1 and 3).
    pub(super) fn clear_data(&mut self) {
        self.lists[1].clear();
        self.lists[3].clear();
        self.total = self.lists[0].len() + self.lists[2].len();
    }

    /// Appends a kernel buffer (kmalloc or vmalloc memory) to list `list`.
    pub(super) fn add_kernel(&mut self, list: usize, buf: &[u8]) -> Result {
        let mut at = 0;
        while at < buf.len() {
            let addr = buf[at..].as_ptr();
            let off = addr as usize % PAGE_SIZE;
            let n = (PAGE_SIZE - off).min(buf.len() - at);
            // SAFETY: `addr` lies in `buf`, a live kmalloc/vmalloc allocation.
            let page = unsafe { sys::kaddr_to_page(addr) };
            self.add(list, page, off, n)?;
            at += n;
        }
        Ok(())
    }

    /// Writes the scatterlists.
    pub(super) fn finish(self) -> Result<(KVVec<bindings::scatterlist>, SgLists)> {
        // SAFETY: An all-zero scatterlist is valid (and `sg_init_table` re-initialises it).
        let zero: bindings::scatterlist = unsafe { core::mem::zeroed() };
        let mut sg = KVVec::from_elem(zero, self.total, GFP_KERNEL_ACCOUNT)?;
        let mut lists = [(0, 0); 4];
        let mut at = 0;
        for (i, list) in self.lists.iter().enumerate() {
            lists[i] = (at, list.len());
            if list.is_empty() {
                continue;
            }
            let sub = &mut sg[at..at + list.len()];
            // SAFETY: `sub` has `list.len()` entries; this zeroes them and end-marks the last.
            unsafe { bindings::sg_init_table(sub.as_mut_ptr(), list.len() as c_uint) };
            for (s, e) in sub.iter_mut().zip(list.iter()) {
                // SAFETY: `s` is an initialised entry; `e.page` is a valid page.
                unsafe { sys::vcuda_glue_sg_set_page(s, e.page, e.len, e.offset) };
            }
            at += list.len();
        }
        Ok((sg, lists))
    }
}
