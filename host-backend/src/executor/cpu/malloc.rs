// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The device heap of device-side `malloc` and `free` (and `new`/`delete` through them) on
//! the CPU executor.
//!
//! As on a GPU, the heap is one region of device memory of `cudaLimitMallocHeapSize` bytes
//! (8 MiB by default), made when the first kernel that may call `malloc` launches and kept
//! until the device is reset; blocks allocate from it first-fit, 16 bytes aligned, and a
//! `malloc` it cannot serve returns NULL. Memory a kernel allocates outlives the kernel, for
//! later kernels to use and free. The bookkeeping, in the backend's own memory, is bounded
//! whatever the heap's size: at most [`MAX_LIVE`] blocks live at once (a `malloc` beyond
//! returns NULL, as for a full heap), and the free ranges lie between them.

use std::collections::{BTreeMap, HashMap};

/// Alignment (and granule) of device `malloc`.
const ALIGN: u64 = 16;

/// Most blocks one session's device heap holds at once: with the free ranges between them,
/// some tens of MiB of bookkeeping, not the 16 bytes' worth per granule a heap of
/// gigabytes would allow (issue 38: the bookkeeping is not charged to the session).
pub const MAX_LIVE: usize = 1 << 20;

/// One session's device heap.
#[derive(Debug)]
pub struct MallocHeap {
    /// Free ranges: start -> length, disjoint and never adjacent (merged on free).
    free: BTreeMap<u64, u64>,
    /// Live allocations: start -> length.
    used: HashMap<u64, u64>,
    /// Where the heap is: `(base, size)`.
    span: (u64, u64),
}

impl MallocHeap {
    /// A heap over `size` bytes of device memory at `base` (16-byte aligned).
    pub fn new(base: u64, size: u64) -> Self {
        let size = size - size % ALIGN;
        let mut free = BTreeMap::new();
        if size > 0 {
            free.insert(base, size);
        }
        Self {
            free,
            used: HashMap::new(),
            span: (base, size),
        }
    }

    /// `(base, size)` and the live blocks, `(address, length)` (what a saved session keeps).
    pub fn state(&self) -> ((u64, u64), Vec<(u64, u64)>) {
        let mut used: Vec<(u64, u64)> = self.used.iter().map(|(&a, &l)| (a, l)).collect();
        used.sort_unstable();
        (self.span, used)
    }

    /// A heap over `size` bytes at `base` with blocks `used` live (see
    /// [`MallocHeap::state`]); `None` if a block is misaligned, overlaps another or lies
    /// outside the heap, or there are more than [`MAX_LIVE`].
    pub fn restore(base: u64, size: u64, used: &[(u64, u64)]) -> Option<Self> {
        if !base.is_multiple_of(ALIGN) || used.len() > MAX_LIVE {
            return None;
        }
        let mut h = Self::new(base, size);
        for &(at, len) in used {
            if len == 0 || !len.is_multiple_of(ALIGN) || !at.is_multiple_of(ALIGN) {
                return None;
            }
            let (&start, &free) = h.free.range(..=at).next_back()?;
            let end = at.checked_add(len)?;
            if end > start + free {
                return None;
            }
            h.free.remove(&start);
            if at > start {
                h.free.insert(start, at - start);
            }
            if start + free > end {
                h.free.insert(end, start + free - end);
            }
            h.used.insert(at, len);
        }
        Some(h)
    }

    /// `size` bytes (at least one granule), or `None` when no free range is large enough.
    pub fn alloc(&mut self, size: u64) -> Option<u64> {
        if self.used.len() >= MAX_LIVE {
            return None;
        }
        let need = size.max(1).checked_next_multiple_of(ALIGN)?;
        let (&at, &len) = self.free.iter().find(|&(_, &len)| len >= need)?;
        self.free.remove(&at);
        if len > need {
            self.free.insert(at + need, len - need);
        }
        self.used.insert(at, need);
        Some(at)
    }

    /// Frees an allocation; anything else (a pointer `alloc` did not return, or one freed
    /// already) is ignored, as the device runtime leaves it undefined.
    pub fn free(&mut self, addr: u64) {
        let Some(len) = self.used.remove(&addr) else {
            return;
        };
        // Merged with the free ranges right before and right after.
        let mut start = addr;
        if let Some((&p, &plen)) = self.free.range(..addr).next_back()
            && p + plen == addr
        {
            self.free.remove(&p);
            start = p;
        }
        let mut end = addr + len;
        if let Some(next) = self.free.remove(&end) {
            end += next;
        }
        self.free.insert(start, end - start);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_fit_aligned_and_merged_on_free() {
        let mut h = MallocHeap::new(0x1000, 100);
        // 96 usable bytes (whole granules).
        let a = h.alloc(10).unwrap();
        let b = h.alloc(16).unwrap();
        let c = h.alloc(0).unwrap();
        assert_eq!((a, b, c), (0x1000, 0x1010, 0x1020));
        assert_eq!(h.alloc(64), None);
        assert_eq!(h.alloc(48), Some(0x1030));
        // Freeing b then a leaves one free range of 32 bytes at the start.
        h.free(b);
        h.free(a);
        h.free(a);
        assert_eq!(h.alloc(32), Some(0x1000));
        // Everything back: one range again.
        h.free(0x1000);
        h.free(c);
        h.free(0x1030);
        assert_eq!(h.free.len(), 1);
        assert_eq!(h.alloc(96), Some(0x1000));
        assert_eq!(h.alloc(1), None);
        // Bogus frees do nothing.
        h.free(0x1008);
        h.free(0);
        assert_eq!(h.used.len(), 1);
    }

    #[test]
    fn restores_what_it_saved_and_refuses_the_rest() {
        let mut h = MallocHeap::new(0x1000, 256);
        let a = h.alloc(10).unwrap();
        let b = h.alloc(40).unwrap();
        h.free(a);
        let ((base, size), used) = h.state();
        let mut r = MallocHeap::restore(base, size, &used).unwrap();
        assert_eq!(r.state(), h.state());
        assert_eq!(r.free, h.free);
        assert_eq!(r.alloc(16), Some(a));
        r.free(b);
        assert_eq!(r.alloc(200), Some(0x1010));
        for bad in [
            vec![(0x1008, 16)],
            vec![(0x1000, 0)],
            vec![(0x1000, 32), (0x1010, 16)],
            vec![(0x10f0, 32)],
            vec![(0x0ff0, 16)],
        ] {
            assert!(MallocHeap::restore(0x1000, 256, &bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn live_blocks_are_bounded_whatever_the_heap_size() {
        // A heap with room for more granules than blocks may live.
        let mut h = MallocHeap::new(0x10_0000, (MAX_LIVE as u64 + 16) * ALIGN);
        for _ in 0..MAX_LIVE {
            assert!(h.alloc(1).is_some());
        }
        assert_eq!(h.alloc(1), None, "a block past the bound");
        assert!(h.free.len() <= 1);
        // One freed: room again.
        h.free(0x10_0000);
        assert_eq!(h.alloc(1), Some(0x10_0000));
    }
}
