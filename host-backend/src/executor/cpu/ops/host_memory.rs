// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CPU executor's mapped host memory ([`HostMemoryOps`]): shared memory is used where
//! it is mapped, and mapped for kernels as heap entries at the guest's device address.

use crate::executor::cpu::CpuExecutor;
use crate::executor::{ExecResult, HostMemoryOps};

impl HostMemoryOps for CpuExecutor {
    fn host_memory_shared(&mut self, _addr: usize, _len: usize) {
        // Copies read and write the shared memory where it is mapped: nothing to pin.
    }

    fn host_memory_unshared(&mut self, _addr: usize) {}

    fn can_map_host_memory(&self) -> bool {
        true
    }

    fn maps_host_memory_in_place(&self) -> bool {
        false
    }

    fn mapped_memory_is_guest_pages(&mut self) {
        // Kernels run on the session's thread and end before it answers: no work outlives
        // a call to reach mapped memory.
    }

    fn prefers_managed_on_device(&self) -> bool {
        false
    }

    fn host_memory_map(&mut self, addr: u64, host: usize, len: usize) -> ExecResult<()> {
        // SAFETY: the session passes part of a shared region it keeps mapped until it
        // calls `host_memory_unmap` for this range (before unsharing the region, or when
        // the session ends after the executor is dropped).
        unsafe { self.heap.map_host(addr, host as *mut u8, len as u64) }
    }

    fn host_memory_unmap(&mut self, addr: u64) -> ExecResult<()> {
        self.heap.unmap_host(addr)
    }
}
