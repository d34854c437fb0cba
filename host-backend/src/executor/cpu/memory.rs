// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Simulated device memory: host allocations at device-like addresses.
//!
//! Every allocation gets its own address range in `[HEAP_BASE, HEAP_END)`, aligned to
//! [`ALIGN`] and followed by an unmapped guard gap, so pointer arithmetic inside an
//! allocation works and an access just past its end is an illegal address, as on a GPU.
//! Memory is zeroed when allocated, so nothing leaks between sessions.

use std::alloc::{self, Layout};
use std::collections::BTreeMap;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::executor::{ExecResult, Status};

/// First device address handed out, unless the guest reserved a range.
pub const HEAP_BASE: u64 = 0x7f00_0000_0000;
/// End of the default device address range.
pub const HEAP_END: u64 = 0x7fff_ffff_0000;
/// Smallest guest-reserved range accepted.
pub const MIN_RANGE: u64 = 1 << 30;
/// Alignment of every allocation (cudaMalloc guarantees at least 256).
pub const ALIGN: u64 = 512;
/// Unmapped bytes after every allocation.
pub const GUARD: u64 = 4096;

/// What an allocation is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocKind {
    /// `cudaMalloc`: the guest may free it.
    User,
    /// A module variable: freed with its module.
    Symbol,
}

/// One allocation.
#[derive(Debug)]
struct Allocation {
    ptr: NonNull<u8>,
    len: u64,
    layout: Layout,
    kind: AllocKind,
}

// SAFETY: `Allocation` owns its buffer exclusively (like a `Box<[u8]>`); the raw pointer is
// only dereferenced under the heap's borrow rules or, during a launch, through atomic
// accesses by the interpreter.
unsafe impl Send for Allocation {}
// SAFETY: `Allocation` owns its buffer exclusively and a shared reference only gives out
// the pointer, never a `&mut`; reads through it during a launch are atomic accesses.
unsafe impl Sync for Allocation {}

impl Drop for Allocation {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `alloc_zeroed(layout)` and is freed exactly once, here.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

/// Bytes of simulated device memory in use across all sessions of one backend.
#[derive(Debug)]
pub struct MemoryBudget {
    total: u64,
    used: AtomicU64,
}

impl MemoryBudget {
    /// A budget of `total` bytes.
    pub fn new(total: u64) -> Arc<Self> {
        Arc::new(Self {
            total,
            used: AtomicU64::new(0),
        })
    }

    /// Total bytes.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Free bytes.
    pub fn free(&self) -> u64 {
        self.total.saturating_sub(self.used.load(Ordering::Relaxed))
    }

    fn reserve(&self, n: u64) -> bool {
        self.used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
                u.checked_add(n).filter(|&t| t <= self.total)
            })
            .is_ok()
    }

    fn release(&self, n: u64) {
        self.used.fetch_sub(n, Ordering::Relaxed);
    }
}

/// One session's device memory.
#[derive(Debug)]
pub struct DeviceHeap {
    allocs: BTreeMap<u64, Allocation>,
    next: u64,
    start: u64,
    end: u64,
    budget: Arc<MemoryBudget>,
}

/// A device range resolved to host memory.
#[derive(Debug, Clone, Copy)]
pub struct Resolved {
    /// Device address of the allocation.
    pub base: u64,
    /// Its length.
    pub len: u64,
    /// Its host memory.
    pub host: *mut u8,
}

impl DeviceHeap {
    /// An empty heap drawing on `budget`.
    pub fn new(budget: Arc<MemoryBudget>) -> Self {
        Self {
            allocs: BTreeMap::new(),
            next: HEAP_BASE,
            start: HEAP_BASE,
            end: HEAP_END,
            budget,
        }
    }

    /// Places future allocations in `[base, base + len)`, the range the guest reserved, if
    /// nothing is allocated yet and the range is sane (aligned, at least `MIN_RANGE`,
    /// inside the 47-bit user address space). Otherwise keeps the default range.
    pub fn set_range(&mut self, base: u64, len: u64) {
        let end = base.checked_add(len);
        let ok = self.allocs.is_empty()
            && base.is_multiple_of(0x10000)
            && base >= 0x1_0000_0000
            && len >= MIN_RANGE
            && end.is_some_and(|e| e <= 0x8000_0000_0000);
        if ok {
            self.start = base;
            self.next = base;
            self.end = base + len;
        }
    }

    /// The shared budget.
    pub fn budget(&self) -> &MemoryBudget {
        &self.budget
    }

    /// Allocates `size` zeroed bytes. `size` 0 gives address 0, as cudaMalloc does.
    pub fn alloc(&mut self, size: u64, kind: AllocKind) -> ExecResult<u64> {
        if size == 0 {
            return Ok(0);
        }
        let span = size
            .checked_add(ALIGN - 1)
            .map(|s| s & !(ALIGN - 1))
            .and_then(|s| s.checked_add(GUARD))
            .ok_or(Status::MEMORY_ALLOCATION)?;
        let layout = Layout::from_size_align(
            usize::try_from(size).map_err(|_| Status::MEMORY_ALLOCATION)?,
            ALIGN as usize,
        )
        .map_err(|_| Status::MEMORY_ALLOCATION)?;
        let addr = self.find_space(span).ok_or(Status::MEMORY_ALLOCATION)?;
        if !self.budget.reserve(size) {
            return Err(Status::MEMORY_ALLOCATION);
        }
        // SAFETY: `layout` has a non-zero size (size > 0 was checked above).
        let ptr = unsafe { alloc::alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(ptr) else {
            self.budget.release(size);
            return Err(Status::MEMORY_ALLOCATION);
        };
        self.allocs.insert(
            addr,
            Allocation {
                ptr,
                len: size,
                layout,
                kind,
            },
        );
        self.next = addr + span;
        Ok(addr)
    }

    /// Finds `span` free bytes of address space: after the last allocation if it fits, else
    /// in the first gap large enough.
    fn find_space(&self, span: u64) -> Option<u64> {
        if self.next.checked_add(span).is_some_and(|e| e <= self.end) {
            return Some(self.next);
        }
        let mut prev_end = self.start;
        for (&base, a) in &self.allocs {
            if base.saturating_sub(prev_end) >= span {
                return Some(prev_end);
            }
            prev_end = (base + a.len).next_multiple_of(ALIGN) + GUARD;
        }
        prev_end
            .checked_add(span)
            .filter(|&e| e <= self.end)
            .map(|_| prev_end)
    }

    /// Frees the allocation starting at `addr` (0 is a no-op).
    pub fn free(&mut self, addr: u64, kind: AllocKind) -> ExecResult<()> {
        if addr == 0 {
            return Ok(());
        }
        match self.allocs.get(&addr) {
            Some(a) if a.kind == kind => {}
            _ => return Err(Status::INVALID_VALUE),
        }
        if let Some(a) = self.allocs.remove(&addr) {
            self.budget.release(a.len);
        }
        Ok(())
    }

    /// Frees every allocation.
    pub fn clear(&mut self) {
        let total: u64 = self.allocs.values().map(|a| a.len).sum();
        self.allocs.clear();
        self.budget.release(total);
        self.next = self.start;
    }

    /// The allocation containing `addr`.
    pub fn resolve(&self, addr: u64) -> Option<Resolved> {
        let (&base, a) = self.allocs.range(..=addr).next_back()?;
        (addr - base < a.len).then_some(Resolved {
            base,
            len: a.len,
            host: a.ptr.as_ptr(),
        })
    }

    /// Checks that `[addr, addr + len)` lies in one allocation; returns its host offset
    /// base and the offset of `addr` in it.
    fn range(&self, addr: u64, len: u64) -> ExecResult<(Resolved, usize)> {
        let r = self.resolve(addr).ok_or(Status::INVALID_VALUE)?;
        let off = addr - r.base;
        match off.checked_add(len) {
            Some(end) if end <= r.len => Ok((r, off as usize)),
            _ => Err(Status::INVALID_VALUE),
        }
    }

    /// `[addr, addr + len)` as a mutable byte slice. The exclusive borrow of the heap
    /// guarantees no kernel is running.
    pub fn bytes_mut(&mut self, addr: u64, len: u64) -> ExecResult<&mut [u8]> {
        if len == 0 {
            return Ok(&mut []);
        }
        let (r, off) = self.range(addr, len)?;
        // SAFETY: the range is inside one live allocation (checked by `range`), and `&mut
        // self` excludes every other access to the heap's memory for the slice's lifetime.
        Ok(unsafe { std::slice::from_raw_parts_mut(r.host.add(off), len as usize) })
    }

    /// `[addr, addr + len)` as a byte slice.
    pub fn bytes(&self, addr: u64, len: u64) -> ExecResult<&[u8]> {
        if len == 0 {
            return Ok(&[]);
        }
        let (r, off) = self.range(addr, len)?;
        // SAFETY: inside one live allocation; shared borrows of the heap never coexist with
        // writes (writes need `&mut self`, and kernels run only while the executor holds the
        // heap exclusively).
        Ok(unsafe { std::slice::from_raw_parts(r.host.add(off), len as usize) })
    }

    /// Copies `len` bytes between two device ranges (which may overlap).
    pub fn copy(&mut self, dst: u64, src: u64, len: u64) -> ExecResult<()> {
        if len == 0 {
            return Ok(());
        }
        let (d, doff) = self.range(dst, len)?;
        let (s, soff) = self.range(src, len)?;
        // SAFETY: both ranges are inside live allocations (checked above); `ptr::copy`
        // allows overlap; `&mut self` excludes concurrent access.
        unsafe { std::ptr::copy(s.host.add(soff), d.host.add(doff), len as usize) };
        Ok(())
    }

    /// Bytes allocated by this session.
    pub fn used(&self) -> u64 {
        self.allocs.values().map(|a| a.len).sum()
    }
}

impl Drop for DeviceHeap {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alloc_resolve_free() {
        let budget = MemoryBudget::new(1 << 20);
        let mut h = DeviceHeap::new(budget.clone());
        let a = h.alloc(100, AllocKind::User).unwrap();
        let b = h.alloc(100, AllocKind::User).unwrap();
        assert_eq!(a % ALIGN, 0);
        assert!(b >= a + 100 + GUARD);
        assert!(h.resolve(a + 99).is_some());
        assert!(h.resolve(a + 100).is_none());
        h.bytes_mut(a + 10, 4)
            .unwrap()
            .copy_from_slice(&[1, 2, 3, 4]);
        h.copy(b, a + 10, 4).unwrap();
        assert_eq!(h.bytes(b, 4).unwrap(), &[1, 2, 3, 4]);
        assert!(h.bytes(a + 98, 4).is_err());
        assert_eq!(budget.free(), (1 << 20) - 200);
        h.free(a, AllocKind::User).unwrap();
        assert_eq!(h.free(a, AllocKind::User), Err(Status::INVALID_VALUE));
        assert_eq!(h.free(b + 1, AllocKind::User), Err(Status::INVALID_VALUE));
        assert_eq!(
            h.alloc(2 << 20, AllocKind::User),
            Err(Status::MEMORY_ALLOCATION)
        );
        assert_eq!(h.alloc(0, AllocKind::User), Ok(0));
        drop(h);
        assert_eq!(budget.free(), 1 << 20);
    }
}
