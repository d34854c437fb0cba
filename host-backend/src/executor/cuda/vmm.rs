// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The virtual memory management API on the GPU: every request is checked against the
//! session's own objects ([`crate::executor::vmm::VmmBook`]: the rules are there) before the
//! driver sees it, physical allocations are charged to the session like `cudaMalloc`
//! memory, and an accessible mapping is device memory of the session that copies and
//! memsets may name. The objects are the process's, not the context's, so the session
//! frees them when it ends ([`CudaExecutor::vmm_teardown`]).

use super::allocs::Owner;
use super::driver;
use super::error::{optional_to_status, to_status};
use super::state::Phys;
use super::{CudaExecutor, charge};
use crate::executor::{ExecResult, Status};

impl CudaExecutor {
    pub(super) fn ordinal(&self) -> i32 {
        self.shared.config.device as i32
    }

    pub(super) fn vmm_create_impl(&mut self, device: u32, size: u64) -> ExecResult<u64> {
        self.check_device(device)?;
        self.vmm.check_create(size)?;
        let p = self.vmm_make(size)?;
        Ok(self.vmm.create(size, p))
    }

    /// A physical allocation of `size` bytes (checked by the book), charged to the session,
    /// for the book to keep.
    pub(super) fn vmm_make(&mut self, size: u64) -> ExecResult<Phys> {
        let n = usize::try_from(size).map_err(|_| Status::MEMORY_ALLOCATION)?;
        let c = charge(size).ok_or(Status::MEMORY_ALLOCATION)?;
        let charged = self
            .charged
            .checked_add(c)
            .filter(|&t| t <= self.shared.session_limit)
            .ok_or(Status::MEMORY_ALLOCATION)?;
        self.bind()?;
        let raw = driver::mem_create(n, self.ordinal()).map_err(optional_to_status)?;
        self.charged = charged;
        Ok(Phys { raw, charge: c })
    }

    /// Frees a physical allocation that left the book.
    pub(super) fn vmm_drop(&mut self, p: Phys) {
        // SAFETY: `raw` came from `mem_create` and left the book just now, so it is
        // released once.
        if let Err(e) = unsafe { driver::mem_release(p.raw) } {
            log::warn!("cuMemRelease: {}", driver::error_name(e));
        }
        self.charged = self.charged.saturating_sub(p.charge);
    }

    pub(super) fn vmm_release_impl(&mut self, handle: u64) -> ExecResult<()> {
        if let Some(p) = self.vmm.release(handle)? {
            self.bind()?;
            self.vmm_drop(p);
        }
        Ok(())
    }

    pub(super) fn vmm_reserve_impl(
        &mut self,
        size: u64,
        alignment: u64,
        hint: u64,
    ) -> ExecResult<u64> {
        self.vmm.check_reserve(size, alignment)?;
        let n = usize::try_from(size).map_err(|_| Status::MEMORY_ALLOCATION)?;
        let a = usize::try_from(alignment).map_err(|_| Status::INVALID_VALUE)?;
        self.bind()?;
        // The guest's address is a hint the driver takes where that range is free.
        let ptr = driver::mem_address_reserve(n, a, hint).map_err(optional_to_status)?;
        self.vmm.reserve(ptr, size);
        Ok(ptr)
    }

    pub(super) fn vmm_free_impl(&mut self, ptr: u64, size: u64) -> ExecResult<()> {
        self.vmm.free(ptr, size)?;
        self.bind()?;
        // SAFETY: a whole reservation of this session with nothing mapped (the book
        // checked both) that left the book just now.
        unsafe { driver::mem_address_free(ptr, size as usize) }.map_err(to_status)
    }

    pub(super) fn vmm_map_impl(
        &mut self,
        ptr: u64,
        size: u64,
        offset: u64,
        handle: u64,
    ) -> ExecResult<()> {
        let raw = self.vmm.map(ptr, size, offset, handle)?.raw;
        let r = self.bind().and_then(|()| {
            // SAFETY: the book checked that `[ptr, ptr + size)` lies in one of the session's
            // reservations, free of mappings, and that `raw` is a live allocation of exactly
            // `size` bytes.
            unsafe { driver::mem_map(ptr, size as usize, raw) }.map_err(to_status)
        });
        if r.is_err() {
            // Not mapped after all.
            let _ = self.vmm.unmap(ptr, size);
        }
        r
    }

    pub(super) fn vmm_set_access_impl(
        &mut self,
        ptr: u64,
        size: u64,
        device: u32,
        flags: u32,
    ) -> ExecResult<()> {
        self.check_device(device)?;
        if flags > 3 {
            return Err(Status::INVALID_VALUE);
        }
        self.bind()?;
        let on = flags != 0;
        let ordinal = self.ordinal();
        let allocs = &mut self.allocs;
        self.vmm.set_access(ptr, size, on, |at, m, _| {
            // SAFETY: `[at, at + m.len)` is exactly one of the session's mappings.
            unsafe { driver::mem_set_access(at, m.len as usize, ordinal, if on { 3 } else { 0 }) }
                .map_err(to_status)?;
            if on {
                allocs.insert(at, m.len, Owner::Vmm)
            } else {
                allocs.remove_vmm(at);
                Ok(())
            }
        })
    }

    pub(super) fn vmm_unmap_impl(&mut self, ptr: u64, size: u64) -> ExecResult<()> {
        self.bind()?;
        for (at, m, gone) in self.vmm.unmap(ptr, size)? {
            self.allocs.remove_vmm(at);
            // SAFETY: exactly one of the session's mappings, which left the book just now.
            if let Err(e) = unsafe { driver::mem_unmap(at, m.len as usize) } {
                log::warn!("cuMemUnmap: {}", driver::error_name(e));
            }
            if let Some(p) = gone {
                self.vmm_drop(p);
            }
        }
        Ok(())
    }

    /// Unmaps, frees and releases everything of the VMM API the session still holds.
    pub(super) fn vmm_teardown(&mut self) {
        let all = self.vmm.take_all();
        for (at, m) in all.maps {
            // SAFETY: the session's mappings, which left the book just now.
            let _ = unsafe { driver::mem_unmap(at, m.len as usize) };
        }
        for (base, len) in all.reserved {
            // SAFETY: the session's reservations, empty now, which left the book.
            let _ = unsafe { driver::mem_address_free(base, len as usize) };
        }
        for p in all.phys {
            self.vmm_drop(p);
        }
    }
}
