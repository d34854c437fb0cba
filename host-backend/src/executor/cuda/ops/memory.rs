// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CUDA executor's device memory calls ([`MemoryOps`]): `cudaMalloc` charged against the
//! session's limit and checked against its allocations; copies and memsets are
//! `transfer`'s.

use vcuda_protocol::{MemcpyDtoDReq, MemcpyDtoHReq, MemcpyHtoDReq, MemsetReq};

use crate::data::DataSegs;
use crate::executor::cuda::allocs::Owner;
use crate::executor::cuda::error::to_status;
use crate::executor::cuda::{CudaExecutor, charge, driver};
use crate::executor::{ExecResult, MemoryOps, Status};

impl MemoryOps for CudaExecutor {
    fn malloc(&mut self, device: u32, size: u64) -> ExecResult<u64> {
        self.check_device(device)?;
        if size == 0 {
            return Ok(0);
        }
        let n = usize::try_from(size).map_err(|_| Status::MEMORY_ALLOCATION)?;
        let charged = charge(size)
            .and_then(|c| self.charged.checked_add(c))
            .filter(|&c| c <= self.shared.session_limit)
            .ok_or(Status::MEMORY_ALLOCATION)?;
        self.bind()?;
        let migratable = self.shared.config.migratable;
        let ptr = if migratable {
            // Charges the pages it maps itself.
            let ptr = self.fixed_alloc(size, None)?;
            if let Err(e) = self.allocs.insert(ptr, size, Owner::User) {
                self.fixed_free(ptr);
                return Err(e);
            }
            return Ok(ptr);
        } else {
            driver::mem_alloc(n).map_err(|e| match e {
                // A size no device has (1 << 50, say): the runtime's answer is an
                // allocation failure (H100, driver 580, measured), the driver's an invalid
                // value.
                cudarc::driver::sys::CUresult::CUDA_ERROR_INVALID_VALUE => {
                    Status::MEMORY_ALLOCATION
                }
                e => to_status(e),
            })?
        };
        if let Err(e) = self.allocs.insert(ptr, size, Owner::User) {
            // The driver never hands out overlapping ranges; if it did, refuse the memory.
            // SAFETY: `ptr` was allocated just above in the session's context, which is
            // still current, and was never given out, so nothing else frees or uses it.
            let _ = unsafe { driver::mem_free(ptr) };
            return Err(e);
        }
        self.charged = charged;
        Ok(ptr)
    }

    fn free(&mut self, ptr: u64) -> ExecResult<()> {
        if ptr == 0 {
            return Ok(());
        }
        if !self.allocs.is_user_base(ptr) {
            return Err(Status::INVALID_VALUE);
        }
        self.bind()?;
        // cudaFree waits for the device first, reporting earlier failures.
        self.may_print = true;
        let r = self.wait_device();
        self.settle(r)?;
        if self.shared.config.migratable {
            // Uncharges the pages it unmaps.
            self.fixed_free(ptr).ok_or(Status::INVALID_VALUE)?;
            return self.allocs.remove_user(ptr).map(drop);
        }
        // SAFETY: `ptr` is the base of a live user allocation of this session's context
        // (checked above; the context, current since `bind`, is the one it was allocated
        // in); it leaves the table right after, so it is freed once, and the device is idle
        // (synchronized above), so no work still uses it.
        unsafe { driver::mem_free(ptr) }.map_err(to_status)?;
        let len = self.allocs.remove_user(ptr)?;
        self.charged = self.charged.saturating_sub(charge(len).unwrap_or(0));
        Ok(())
    }

    fn memcpy_htod(&mut self, req: &MemcpyHtoDReq, src: &DataSegs<'_>) -> ExecResult<()> {
        self.may_print = true;
        self.htod(req, src)
    }

    fn memcpy_dtoh(&mut self, req: &MemcpyDtoHReq, dst: &DataSegs<'_>) -> ExecResult<()> {
        self.may_print = true;
        self.dtoh(req, dst)
    }

    fn memcpy_dtod(&mut self, req: &MemcpyDtoDReq) -> ExecResult<()> {
        self.dtod(req)
    }

    fn memset(&mut self, req: &MemsetReq) -> ExecResult<()> {
        self.memset_impl(req)
    }
}
