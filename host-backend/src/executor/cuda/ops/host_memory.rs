// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CUDA executor's mapped host memory ([`HostMemoryOps`]): shared memory pinned in the
//! session's context, and mapped for kernels at the guest's own address (see "Mapped host
//! memory" in the [executor's documentation](super::super)).

use log::warn;

use crate::executor::cuda::allocs::Owner;
use crate::executor::cuda::{CudaExecutor, driver, guest_mem};
use crate::executor::{ExecResult, HostMemoryOps, Status};

impl HostMemoryOps for CudaExecutor {
    fn host_memory_shared(&mut self, addr: usize, len: usize) {
        self.host_shared.push((addr, len));
        self.pin_host(addr, len);
    }

    fn host_memory_unshared(&mut self, addr: usize) {
        self.host_shared.retain(|&(a, _)| a != addr);
        let ranges = self.host_pinned.ranges();
        if ranges.iter().any(|&(a, _)| a == addr) {
            let kept = ranges.iter().copied().filter(|&(a, _)| a != addr).collect();
            self.host_pinned = guest_mem::PinnedRanges::new(kept);
            if self.bind().is_ok() {
                // SAFETY: `addr` starts a range `pin_host` pinned in this context; copies
                // straight from pinned memory wait for their DMA before returning, so none
                // uses it now.
                if let Err(e) = unsafe { driver::mem_host_unregister(addr as *mut u8) } {
                    warn!(
                        "unpinning shared memory at {addr:#x}: {}",
                        driver::error_name(e)
                    );
                }
            }
        }
    }

    fn can_map_host_memory(&self) -> bool {
        self.shared.maps_host
    }

    fn maps_host_memory_in_place(&self) -> bool {
        true
    }

    fn mapped_memory_is_guest_pages(&mut self) {
        self.mapped_guest_pages = true;
    }

    fn prefers_managed_on_device(&self) -> bool {
        true
    }

    fn host_memory_map(&mut self, addr: u64, host: usize, len: usize) -> ExecResult<()> {
        if !self.shared.maps_host {
            return Err(Status::NOT_SUPPORTED);
        }
        // The session maps the memory at the guest's address first (see
        // `maps_host_memory_in_place`).
        if host as u64 != addr || len == 0 {
            return Err(Status::INVALID_VALUE);
        }
        self.map_host(addr, len)?;
        self.host_mapped.insert(addr, len);
        Ok(())
    }

    fn host_memory_unmap(&mut self, addr: u64) -> ExecResult<()> {
        self.host_mapped
            .remove(&addr)
            .ok_or(Status::INVALID_VALUE)?;
        self.allocs.remove_owned(addr, Owner::Mapped);
        if self.bind().is_ok() {
            // SAFETY: `addr` starts a range `map_host` registered in this context; the
            // guest unmaps it only after the work that used it (`cudaFreeHost` and
            // `cudaHostUnregister` wait for the device first), and the session unmaps the
            // memory only after this returns.
            if let Err(e) = unsafe { driver::mem_host_unregister(addr as *mut u8) } {
                warn!(
                    "unmapping host memory at {addr:#x}: {}",
                    driver::error_name(e)
                );
            }
        }
        Ok(())
    }
}
