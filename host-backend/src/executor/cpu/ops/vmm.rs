// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CPU executor's virtual memory management calls ([`VmmOps`]), on the session's heap
//! (`vmm.rs`).

use crate::executor::cpu::CpuExecutor;
use crate::executor::{ExecResult, VmmOps};

impl VmmOps for CpuExecutor {
    fn vmm_create(&mut self, device: u32, size: u64) -> ExecResult<u64> {
        self.check_device(device)?;
        self.heap.vmm_create(size)
    }

    fn vmm_release(&mut self, handle: u64) -> ExecResult<()> {
        self.heap.vmm_release(handle)
    }

    fn vmm_reserve(&mut self, size: u64, alignment: u64, addr: u64) -> ExecResult<u64> {
        self.heap.vmm_reserve(size, alignment, addr)
    }

    fn vmm_free(&mut self, ptr: u64, size: u64) -> ExecResult<()> {
        self.heap.vmm_free(ptr, size)
    }

    fn vmm_map(&mut self, ptr: u64, size: u64, offset: u64, handle: u64) -> ExecResult<()> {
        self.heap.vmm_map(ptr, size, offset, handle)
    }

    fn vmm_unmap(&mut self, ptr: u64, size: u64) -> ExecResult<()> {
        // Kernels that use the memory run on this thread, so none does now.
        self.heap.vmm_unmap(ptr, size)
    }

    fn vmm_set_access(&mut self, ptr: u64, size: u64, device: u32, flags: u32) -> ExecResult<()> {
        self.check_device(device)?;
        self.heap.vmm_set_access(ptr, size, flags)
    }
}
