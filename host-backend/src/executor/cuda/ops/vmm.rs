// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CUDA executor's virtual memory management calls ([`VmmOps`]), done in `vmm.rs`.

use crate::executor::cuda::CudaExecutor;
use crate::executor::{ExecResult, VmmOps};

impl VmmOps for CudaExecutor {
    fn vmm_create(&mut self, device: u32, size: u64) -> ExecResult<u64> {
        self.vmm_create_impl(device, size)
    }

    fn vmm_release(&mut self, handle: u64) -> ExecResult<()> {
        self.vmm_release_impl(handle)
    }

    fn vmm_reserve(&mut self, size: u64, alignment: u64, addr: u64) -> ExecResult<u64> {
        self.vmm_reserve_impl(size, alignment, addr)
    }

    fn vmm_free(&mut self, ptr: u64, size: u64) -> ExecResult<()> {
        self.vmm_free_impl(ptr, size)
    }

    fn vmm_map(&mut self, ptr: u64, size: u64, offset: u64, handle: u64) -> ExecResult<()> {
        self.vmm_map_impl(ptr, size, offset, handle)
    }

    fn vmm_unmap(&mut self, ptr: u64, size: u64) -> ExecResult<()> {
        self.vmm_unmap_impl(ptr, size)
    }

    fn vmm_set_access(&mut self, ptr: u64, size: u64, device: u32, flags: u32) -> ExecResult<()> {
        self.vmm_set_access_impl(ptr, size, device, flags)
    }
}
