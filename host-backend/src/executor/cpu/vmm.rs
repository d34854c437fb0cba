// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The virtual memory management API on the CPU executor (`cuMemCreate`,
//! `cuMemAddressReserve`, `cuMemMap`, `cuMemSetAccess`, `cuMemUnmap`, `cuMemRelease`,
//! `cuMemAddressFree`): physical allocations are buffers of the session's heap charged
//! like `cudaMalloc` memory; an address reservation is a range of the session's device
//! address space taken from the top of it (allocations never go there); a physical
//! allocation mapped into a reservation and made accessible is an entry of the heap at
//! that address sharing the allocation's buffer, as an IPC import is, so kernels, copies
//! and memsets reach it like any allocation.
//!
//! The rules every request is checked against are [`crate::executor::vmm`]'s. Access is
//! read-write or none (`CU_MEM_ACCESS_FLAGS_PROT_READ` alone makes the range read-write
//! too).

use std::sync::Arc;

use super::{AllocKind, Allocation, DeviceHeap, charge};
use crate::executor::vmm::VmmBook;
use crate::executor::{ExecResult, Status};

/// A session's VMM state (in its heap): the shared bookkeeping, each physical allocation's
/// buffer, and where the heap's address space ended before the first reservation.
#[derive(Debug, Default)]
pub struct Vmm {
    pub(super) book: VmmBook<Arc<Allocation>>,
    pub(super) top: Option<u64>,
}

impl DeviceHeap {
    /// `cuMemCreate`: a physical allocation of `size` bytes, charged to the session; its
    /// handle.
    pub fn vmm_create(&mut self, size: u64) -> ExecResult<u64> {
        self.vmm.book.check_create(size)?;
        let charge = charge(size).ok_or(Status::MEMORY_ALLOCATION)?;
        if self
            .charged
            .checked_add(charge)
            .is_none_or(|c| c > self.limit)
            || !self.budget.reserve(charge)
        {
            return Err(Status::MEMORY_ALLOCATION);
        }
        let Some(a) = Allocation::new(size, AllocKind::Vmm, charge) else {
            self.budget.release(charge);
            return Err(Status::MEMORY_ALLOCATION);
        };
        self.charged += charge;
        Ok(self.vmm.book.create(size, Arc::new(a)))
    }

    /// Gives a physical allocation's charge back (it is gone from the book).
    fn vmm_uncharge(&mut self, a: &Allocation) {
        self.budget.release(a.charge);
        self.charged -= a.charge;
    }

    /// `cuMemRelease`: the allocation goes now, or with its last mapping.
    pub fn vmm_release(&mut self, handle: u64) -> ExecResult<()> {
        if let Some(a) = self.vmm.book.release(handle)? {
            self.vmm_uncharge(&a);
        }
        Ok(())
    }

    /// `cuMemAddressReserve`: address space taken from the top of the session's range
    /// (allocations never go there), or where the hint asks if that is free (CUDA treats
    /// the address as a hint too).
    pub fn vmm_reserve(&mut self, size: u64, align: u64, hint: u64) -> ExecResult<u64> {
        self.vmm.book.check_reserve(size, align)?;
        let align = align.max(super::GRANULARITY);
        // The address asked for, where it is free: above the allocations, below the top of
        // the range, clear of every reservation (the lowest reservation bounds the
        // allocations, as always). Otherwise below the lowest reservation.
        let top = self.vmm_top();
        let hinted = (hint != 0 && hint.is_multiple_of(align))
            .then_some(hint)
            .filter(|&b| b >= self.next && b > self.start)
            .filter(|&b| b.checked_add(size).is_some_and(|e| e <= top))
            .filter(|&b| !self.vmm.book.overlaps_reservation(b, size));
        let base = hinted
            .or_else(|| {
                self.end
                    .checked_sub(size)
                    .map(|b| b / align * align)
                    .filter(|&b| b >= self.next && b > self.start)
            })
            .ok_or(Status::MEMORY_ALLOCATION)?;
        self.vmm.top.get_or_insert(self.end);
        self.vmm.book.reserve(base, size);
        self.end = self.end.min(base);
        Ok(base)
    }

    /// `cuMemAddressFree`.
    pub fn vmm_free(&mut self, ptr: u64, size: u64) -> ExecResult<()> {
        self.vmm.book.free(ptr, size)?;
        // The address space below the lowest reservation is the allocations' again.
        if let Some(top) = self.vmm.top {
            self.end = self.vmm.book.lowest_reservation().unwrap_or(top);
        }
        Ok(())
    }

    /// `cuMemMap` (not accessible until [`DeviceHeap::vmm_set_access`]).
    pub fn vmm_map(&mut self, ptr: u64, size: u64, offset: u64, handle: u64) -> ExecResult<()> {
        self.vmm.book.map(ptr, size, offset, handle).map(drop)
    }

    /// `cuMemSetAccess`: an accessible mapping is an entry of the heap sharing the
    /// allocation's buffer; `flags` 0 removes it (1, read-only, makes it read-write).
    pub fn vmm_set_access(&mut self, ptr: u64, size: u64, flags: u32) -> ExecResult<()> {
        if flags > 3 {
            return Err(Status::INVALID_VALUE);
        }
        let on = flags != 0;
        let allocs = &mut self.allocs;
        self.vmm.book.set_access(ptr, size, on, |at, _, a| {
            if on {
                allocs.insert(at, a.clone());
            } else {
                allocs.remove(&at);
            }
            Ok(())
        })
    }

    /// `cuMemUnmap`. Kernels run on the session's thread, so none uses the memory now.
    pub fn vmm_unmap(&mut self, ptr: u64, size: u64) -> ExecResult<()> {
        for (at, m, gone) in self.vmm.book.unmap(ptr, size)? {
            if m.accessible {
                self.allocs.remove(&at);
            }
            if let Some(a) = gone {
                self.vmm_uncharge(&a);
            }
        }
        Ok(())
    }

    /// Where the session's device range ends, its VMM reservations included.
    pub(super) fn vmm_top(&self) -> u64 {
        self.vmm.top.unwrap_or(self.end)
    }

    /// Forgets every VMM object (their charges go with the heap's: [`DeviceHeap::clear`]).
    /// Whether the session holds no object of the VMM API.
    pub(super) fn vmm_is_empty(&self) -> bool {
        self.vmm.top.is_none() && self.vmm.book.is_empty()
    }

    pub(super) fn vmm_clear(&mut self) {
        if let Some(top) = self.vmm.top.take() {
            self.end = top;
        }
        self.vmm = Vmm::default();
    }
}

#[cfg(test)]
mod tests {
    use super::super::{GRANULARITY, MemoryBudget};
    use super::*;

    #[test]
    fn a_free_address_asked_for_is_given() {
        let budget = MemoryBudget::new(1 << 30);
        let mut h = DeviceHeap::new(budget.clone(), u64::MAX);
        let top = h.vmm_reserve(GRANULARITY, 0, 0).unwrap();
        let want = top - 16 * GRANULARITY;
        assert_eq!(h.vmm_reserve(GRANULARITY, 0, want).unwrap(), want);
        // Taken, misaligned or past the space for them: placed as without a hint.
        for hint in [want, want + 4096, top + GRANULARITY, top - GRANULARITY] {
            let got = h.vmm_reserve(2 * GRANULARITY, 0, hint).unwrap();
            assert_eq!(got, want - 2 * GRANULARITY);
            h.vmm_free(got, 2 * GRANULARITY).unwrap();
        }
        // A free gap above the lowest reservation (as a migrated session asks for the
        // addresses its reservations had, in any order).
        let gap = want + 4 * GRANULARITY;
        assert_eq!(h.vmm_reserve(GRANULARITY, 0, gap).unwrap(), gap);
        assert_eq!(
            h.vmm_reserve(GRANULARITY, 0, 0).unwrap(),
            want - GRANULARITY,
            "the allocations still end at the lowest reservation"
        );
    }

    #[test]
    fn reserve_map_access_unmap_release() {
        let budget = MemoryBudget::new(1 << 30);
        let mut h = DeviceHeap::new(budget.clone(), u64::MAX);
        let p1 = h.vmm_create(GRANULARITY).unwrap();
        let p2 = h.vmm_create(2 * GRANULARITY).unwrap();
        assert_eq!(h.vmm_create(100).unwrap_err(), Status::INVALID_VALUE);
        let va = h.vmm_reserve(4 * GRANULARITY, 0, 0).unwrap();
        assert!(va.is_multiple_of(GRANULARITY));
        // Allocations never land in a reservation, nor does mapped host memory.
        let a = h.alloc(1 << 20, AllocKind::User).unwrap();
        assert!(a + (1 << 20) <= va);
        let mut host = vec![0u8; 4096];
        // SAFETY: refused before anything is kept.
        let r = unsafe { h.map_host(va, host.as_mut_ptr(), 4096) };
        assert_eq!(r.unwrap_err(), Status::INVALID_VALUE);
        h.vmm_map(va, GRANULARITY, 0, p1).unwrap();
        h.vmm_map(va + GRANULARITY, 2 * GRANULARITY, 0, p2).unwrap();
        assert_eq!(
            h.vmm_map(va, GRANULARITY, 0, p1).unwrap_err(),
            Status::INVALID_VALUE
        );
        assert_eq!(
            h.vmm_map(va + 3 * GRANULARITY, GRANULARITY, GRANULARITY, p1)
                .unwrap_err(),
            Status::NOT_SUPPORTED
        );
        // Not accessible before cuMemSetAccess.
        assert!(h.resolve(va).is_none());
        h.vmm_set_access(va, 3 * GRANULARITY, 3).unwrap();
        assert_eq!(
            h.resolve(va + GRANULARITY + 5).unwrap().base,
            va + GRANULARITY
        );
        // Side by side, the two mappings are one range for copies.
        assert_eq!(
            h.spans(va + GRANULARITY - 8, 16).unwrap(),
            [(va + GRANULARITY - 8, 8), (va + GRANULARITY, 8)]
        );
        h.copy(va + GRANULARITY - 8, va, 16).unwrap();
        assert!(h.spans(va + 3 * GRANULARITY - 8, 16).is_err());
        // One buffer, two addresses: a second mapping of p1 elsewhere sees the same bytes.
        let va2 = h.vmm_reserve(GRANULARITY, 0, 0).unwrap();
        h.vmm_map(va2, GRANULARITY, 0, p1).unwrap();
        h.vmm_set_access(va2, GRANULARITY, 3).unwrap();
        h.bytes_mut(va + 8, 4)
            .unwrap()
            .copy_from_slice(&[1, 2, 3, 4]);
        assert_eq!(h.bytes(va2 + 8, 4).unwrap(), &[1, 2, 3, 4]);
        // cudaFree does not free mapped memory.
        assert_eq!(
            h.free(va, AllocKind::User).unwrap_err(),
            Status::INVALID_VALUE
        );
        // Released while mapped: kept until unmapped.
        h.vmm_release(p1).unwrap();
        assert_eq!(h.vmm_release(p1).unwrap_err(), Status::INVALID_VALUE);
        assert!(h.resolve(va).is_some());
        let charged = h.charged();
        h.vmm_unmap(va, GRANULARITY).unwrap();
        assert_eq!(h.charged(), charged, "still mapped at va2");
        h.vmm_unmap(va2, GRANULARITY).unwrap();
        assert!(h.charged() < charged);
        assert!(h.resolve(va).is_none());
        // Partial ranges and freeing a reservation with mappings are refused.
        assert_eq!(
            h.vmm_unmap(va + GRANULARITY, GRANULARITY).unwrap_err(),
            Status::INVALID_VALUE
        );
        assert_eq!(
            h.vmm_free(va, 4 * GRANULARITY).unwrap_err(),
            Status::INVALID_VALUE
        );
        h.vmm_unmap(va + GRANULARITY, 2 * GRANULARITY).unwrap();
        h.vmm_release(p2).unwrap();
        h.vmm_free(va2, GRANULARITY).unwrap();
        h.vmm_free(va, 4 * GRANULARITY).unwrap();
        assert_eq!(h.charged(), charge(1 << 20).unwrap());
        h.free(a, AllocKind::User).unwrap();
        assert_eq!(budget.free(), budget.total());
    }
}
