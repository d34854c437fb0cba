// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Device memory at addresses the session chooses (`--cuda-migratable`), so a migrated
//! session gets every allocation back where its guest knows it.
//!
//! `cuMemAlloc` picks addresses, and another process (the destination of a migration) may
//! get others. A migratable session instead reserves one range of device address space
//! (`cuMemAddressReserve`, at its first allocation; a loaded session asks for the saved
//! range) and places each `cudaMalloc` in it itself, first fit, 512-byte aligned (2 MiB for
//! allocations of 2 MiB and more, as the driver aligns them). Memory behind the range comes
//! in 2 MiB pages (`cuMemCreate` + `cuMemMap` + `cuMemSetAccess`), each mapped while an
//! allocation overlaps it: small allocations share pages as the driver's own
//! sub-allocator's do, and a freed range gives its pages back once nothing else lies on
//! them.
//!
//! `pages::FixedBook` keeps the ranges and pages (no driver calls); the methods on
//! [`CudaExecutor`] here make the driver calls.

use super::error::{optional_to_status, to_status};
use super::pages::{FixedBook, PAGE, range_len};
use super::{CudaExecutor, driver};
use crate::executor::{ExecResult, Status};

impl CudaExecutor {
    /// The session's book, its range reserved first (at `at`, a loaded session's saved
    /// range, or where the driver likes: `at` 0).
    pub(super) fn fixed_book(&mut self, at: u64, len: u64) -> ExecResult<&mut FixedBook> {
        if let Some(book) = &self.fixed
            && at != 0
            && book.range() != (at, len)
        {
            // A loaded session's range, but another one is reserved already.
            return Err(Status::INVALID_VALUE);
        }
        if self.fixed.is_none() {
            let len = if len == 0 {
                range_len(self.shared.session_limit)
            } else {
                len
            };
            let n = usize::try_from(len).map_err(|_| Status::MEMORY_ALLOCATION)?;
            self.bind()?;
            let base =
                driver::mem_address_reserve(n, PAGE as usize, at).map_err(optional_to_status)?;
            if at != 0 && base != at {
                // SAFETY: the range was reserved just above, nothing is mapped in it.
                let _ = unsafe { driver::mem_address_free(base, n) };
                return Err(Status::MEMORY_ALLOCATION);
            }
            self.fixed = Some(FixedBook::new(base, len));
        }
        self.fixed.as_mut().ok_or(Status::MEMORY_ALLOCATION)
    }

    /// `cudaMalloc` of a migratable session: `len` bytes placed in the session's range (at
    /// `at`, for a loaded allocation: `Status::INVALID_VALUE` where that is not free), their
    /// pages mapped. The session is charged for the pages it maps, 2 MiB each (what the
    /// device gives), not for the bytes asked for.
    pub(super) fn fixed_alloc(&mut self, len: u64, at: Option<u64>) -> ExecResult<u64> {
        let book = self.fixed_book(0, 0)?;
        let addr = match at {
            Some(a) => book
                .place_at(a, len)
                .then_some(a)
                .ok_or(Status::INVALID_VALUE)?,
            None => book.place(len).ok_or(Status::MEMORY_ALLOCATION)?,
        };
        let missing = book.missing_pages(addr, len);
        // Held before anything can fail, so `fixed_free` undoes exactly this call.
        book.hold_pages(addr);
        let fits = (missing.len() as u64)
            .checked_mul(PAGE)
            .and_then(|c| self.charged.checked_add(c))
            .is_some_and(|c| c <= self.shared.session_limit);
        if !fits {
            self.fixed_free(addr);
            return Err(Status::MEMORY_ALLOCATION);
        }
        let ordinal = self.shared.config.device as i32;
        let mut failed = None;
        let mut made = 0;
        for p in missing {
            match map_page(p, ordinal) {
                Ok(raw) => {
                    if let Some(book) = self.fixed.as_mut() {
                        book.add_page(p, raw, 1);
                    }
                    made += 1;
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        self.charged = self.charged.saturating_add(made * PAGE);
        if let Some(e) = failed {
            // Give back what this call mapped and the range.
            self.fixed_free(addr);
            return Err(e);
        }
        Ok(addr)
    }

    /// Frees a migratable session's allocation at `addr` (the device idle: no work uses
    /// it) and unmaps the pages nothing else lies on, uncharging them; its length.
    pub(super) fn fixed_free(&mut self, addr: u64) -> Option<u64> {
        let (len, gone) = self.fixed.as_mut()?.remove(addr)?;
        for &(p, raw) in &gone {
            unmap_page(p, raw);
        }
        self.charged = self.charged.saturating_sub(gone.len() as u64 * PAGE);
        Some(len)
    }

    /// Forgets the session's range and pages without unmapping them: work the session
    /// abandoned may still use them (they go with the process).
    pub(super) fn fixed_forget(&mut self) {
        if self.fixed.take().is_some() {
            log::warn!("a migratable session's device memory stays mapped: its work may run on");
        }
    }

    /// Unmaps every page and frees the range (the context's work is done or gone).
    pub(super) fn fixed_teardown(&mut self) {
        let Some(mut book) = self.fixed.take() else {
            return;
        };
        for (p, raw) in book.take_pages() {
            unmap_page(p, raw);
        }
        let (base, len) = book.range();
        // SAFETY: the session's reservation, with nothing mapped in it any more.
        if let Err(e) = unsafe { driver::mem_address_free(base, len as usize) } {
            log::warn!("cuMemAddressFree: {}", driver::error_name(e));
        }
    }
}

/// Backs page `at` (reserved by the session, unmapped) with a new physical allocation,
/// readable and writable by the device; the allocation.
fn map_page(at: u64, ordinal: i32) -> ExecResult<u64> {
    let raw = driver::mem_create(PAGE as usize, ordinal).map_err(|e| match e {
        cudarc::driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => Status::MEMORY_ALLOCATION,
        e => optional_to_status(e),
    })?;
    // SAFETY: `at` is a page of the session's reservation with nothing mapped (the book
    // says so), and `raw` a fresh allocation of exactly one page.
    let mapped = unsafe { driver::mem_map_rw(at, PAGE as usize, raw, ordinal) };
    if let Err(e) = mapped {
        // SAFETY: `raw` was made above and is mapped nowhere.
        let _ = unsafe { driver::mem_release(raw) };
        return Err(to_status(e));
    }
    Ok(raw)
}

/// Unmaps page `at` and releases `raw` behind it (out of the book; no work uses it).
fn unmap_page(at: u64, raw: u64) {
    // SAFETY: `[at, at + PAGE)` is exactly one mapping `map_page` made, out of the book now.
    if let Err(e) = unsafe { driver::mem_unmap(at, PAGE as usize) } {
        log::warn!("cuMemUnmap: {}", driver::error_name(e));
    }
    // SAFETY: `raw` was made by `map_page` and is mapped nowhere now.
    if let Err(e) = unsafe { driver::mem_release(raw) } {
        log::warn!("cuMemRelease: {}", driver::error_name(e));
    }
}
