// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CUDA executor's interprocess handles ([`IpcOps`]): the driver's own, passed only with
//! `--cuda-ipc` ([`CudaConfig::ipc`](super::super::CudaConfig::ipc)); an opened range is
//! charged to the session as an allocation.

use crate::executor::cuda::allocs::Owner;
use crate::executor::cuda::config::MAX_IPC_OPENS;
use crate::executor::cuda::error::to_status;
use crate::executor::cuda::{CudaExecutor, charge, driver};
use crate::executor::{ExecResult, IpcOps, Status};

impl IpcOps for CudaExecutor {
    fn ipc_get_mem_handle(&mut self, ptr: u64) -> ExecResult<[u8; 64]> {
        self.ipc_allowed()?;
        let base = self.allocs.user_base_of(ptr).ok_or(Status::INVALID_VALUE)?;
        self.bind()?;
        driver::ipc_get_mem_handle(base).map_err(to_status)
    }

    fn ipc_open_mem_handle(&mut self, handle: &[u8; 64], flags: u32) -> ExecResult<(u64, u64)> {
        self.ipc_allowed()?;
        if flags & !1 != 0 {
            return Err(Status::INVALID_VALUE);
        }
        if self.ipc_opens.len() >= MAX_IPC_OPENS {
            return Err(Status::MEMORY_ALLOCATION);
        }
        self.bind()?;
        let (ptr, len) = driver::ipc_open_mem_handle(handle, flags).map_err(to_status)?;
        // SAFETY (for the closes below): mapped just above in the current context and
        // given to nobody.
        let undo = |e| {
            // SAFETY: as above.
            let _ = unsafe { driver::ipc_close_mem_handle(ptr) };
            Err(e)
        };
        // The driver returns the same address for a handle opened again in this context;
        // the first open is charged to this session as if it had allocated the memory.
        if !self.allocs.is_ipc_base(ptr) {
            let Some(charged) = charge(len)
                .and_then(|c| self.charged.checked_add(c))
                .filter(|&c| c <= self.shared.session_limit)
            else {
                return undo(Status::MEMORY_ALLOCATION);
            };
            if let Err(e) = self.allocs.insert(ptr, len, Owner::Ipc) {
                return undo(e);
            }
            self.charged = charged;
        }
        *self.ipc_opens.entry(ptr).or_default() += 1;
        Ok((ptr, len))
    }

    fn ipc_close_mem_handle(&mut self, ptr: u64) -> ExecResult<()> {
        self.ipc_allowed()?;
        if !self.allocs.is_ipc_base(ptr) {
            return Err(Status::INVALID_VALUE);
        }
        self.bind()?;
        // As cudaFree: wait for the device first, so no work still reads the range.
        self.may_print = true;
        let r = self.wait_device();
        self.settle(r)?;
        // SAFETY: `ptr` was opened through an IPC handle in this session's context (current
        // since `bind`), counted in `ipc_opens`, and the device is idle.
        unsafe { driver::ipc_close_mem_handle(ptr) }.map_err(to_status)?;
        let n = self.ipc_opens.entry(ptr).or_insert(1);
        *n -= 1;
        if *n == 0 {
            self.ipc_opens.remove(&ptr);
            if let Some(len) = self.allocs.remove_ipc(ptr) {
                self.charged = self.charged.saturating_sub(charge(len).unwrap_or(0));
            }
        }
        Ok(())
    }

    fn ipc_get_event_handle(&mut self, event: u64) -> ExecResult<[u8; 64]> {
        self.ipc_allowed()?;
        self.ipc_get_event_handle_impl(event)
    }

    fn ipc_open_event_handle(&mut self, handle: &[u8; 64]) -> ExecResult<u64> {
        self.ipc_allowed()?;
        self.ipc_open_event_handle_impl(handle)
    }
}
