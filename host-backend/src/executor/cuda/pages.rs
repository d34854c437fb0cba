// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The book of a migratable session's device memory (`fixed`): its reserved range, the
//! allocations placed in it and the 2 MiB pages mapped behind them. No driver calls: the
//! session makes them as the book says.

use std::collections::BTreeMap;

/// Bytes of one page of backing memory: the driver's allocation granularity on every GPU
/// CUDA 12 and 13 serve.
pub(super) const PAGE: u64 = 2 << 20;
/// Alignment of small allocations (the driver's `cudaMalloc` gives 512 and more).
const ALIGN: u64 = 512;
/// Most address space one session reserves.
const MAX_RANGE: u64 = 256 << 30;

/// A mapped page: the physical allocation behind it and how many allocations lie on it.
#[derive(Debug, Clone, Copy)]
struct Page {
    raw: u64,
    users: u32,
}

/// The session's range, its allocations and the pages behind them.
#[derive(Debug)]
pub(super) struct FixedBook {
    base: u64,
    len: u64,
    /// Free ranges: start to length.
    free: BTreeMap<u64, u64>,
    /// Allocations: start to length.
    allocs: BTreeMap<u64, u64>,
    /// Mapped pages, by address.
    pages: BTreeMap<u64, Page>,
}

/// The address space a session with memory limit `limit` reserves: twice the limit (room
/// for fragmentation), whole pages, at most [`MAX_RANGE`].
pub(super) fn range_len(limit: u64) -> u64 {
    limit
        .saturating_mul(2)
        .clamp(PAGE, MAX_RANGE)
        .next_multiple_of(PAGE)
}

/// The pages `[addr, addr + len)` lies on.
fn pages_of(addr: u64, len: u64) -> impl Iterator<Item = u64> {
    let first = addr / PAGE * PAGE;
    let end = (addr + len).next_multiple_of(PAGE);
    (first..end).step_by(PAGE as usize)
}

impl FixedBook {
    /// An empty book over `[base, base + len)`.
    pub(super) fn new(base: u64, len: u64) -> Self {
        Self {
            base,
            len,
            free: BTreeMap::from([(base, len)]),
            allocs: BTreeMap::new(),
            pages: BTreeMap::new(),
        }
    }

    /// The reserved range.
    pub(super) fn range(&self) -> (u64, u64) {
        (self.base, self.len)
    }

    /// Takes `[addr, addr + len)` out of the free range holding it.
    fn take(&mut self, addr: u64, len: u64) -> bool {
        let Some((&start, &flen)) = self.free.range(..=addr).next_back() else {
            return false;
        };
        let (end, fend) = (addr + len, start + flen);
        if end > fend {
            return false;
        }
        self.free.remove(&start);
        if start < addr {
            self.free.insert(start, addr - start);
        }
        if end < fend {
            self.free.insert(end, fend - end);
        }
        self.allocs.insert(addr, len);
        true
    }

    /// Places `len` bytes, first fit; the address.
    pub(super) fn place(&mut self, len: u64) -> Option<u64> {
        if len == 0 {
            return None;
        }
        let align = if len >= PAGE { PAGE } else { ALIGN };
        let len = len.checked_next_multiple_of(ALIGN)?;
        let at = self.free.iter().find_map(|(&s, &l)| {
            let a = s.checked_next_multiple_of(align)?;
            (a.checked_add(len)? <= s + l).then_some(a)
        })?;
        self.take(at, len).then_some(at)
    }

    /// Places `len` bytes at `addr` (a loaded allocation): `false` where that is not free
    /// and inside the range, or not aligned.
    pub(super) fn place_at(&mut self, addr: u64, len: u64) -> bool {
        let Some(len) = len.checked_next_multiple_of(ALIGN) else {
            return false;
        };
        len > 0
            && addr.is_multiple_of(ALIGN)
            && addr >= self.base
            && addr
                .checked_add(len)
                .is_some_and(|e| e <= self.base + self.len)
            && self.take(addr, len)
    }

    /// The pages `[addr, addr + len)` (an allocation just placed) lies on that are not
    /// mapped yet.
    pub(super) fn missing_pages(&self, addr: u64, len: u64) -> Vec<u64> {
        pages_of(addr, len)
            .filter(|p| !self.pages.contains_key(p))
            .collect()
    }

    /// Page `at` is mapped now, backed by `raw`, with `users` allocations on it.
    pub(super) fn add_page(&mut self, at: u64, raw: u64, users: u32) {
        self.pages.insert(at, Page { raw, users });
    }

    /// The allocation at `addr` (just placed) holds those of its pages that are mapped
    /// (the others are added held, [`FixedBook::add_page`]).
    pub(super) fn hold_pages(&mut self, addr: u64) {
        let Some(&len) = self.allocs.get(&addr) else {
            return;
        };
        for p in pages_of(addr, len) {
            if let Some(page) = self.pages.get_mut(&p) {
                page.users += 1;
            }
        }
    }

    /// Forgets the allocation starting at `addr`; its length and the pages nothing lies on
    /// any more (page address and physical allocation), out of the book now.
    pub(super) fn remove(&mut self, addr: u64) -> Option<(u64, Vec<(u64, u64)>)> {
        let len = self.allocs.remove(&addr)?;
        let mut gone = Vec::new();
        for p in pages_of(addr, len) {
            if let Some(page) = self.pages.get_mut(&p) {
                page.users = page.users.saturating_sub(1);
                if page.users == 0 {
                    gone.push((p, page.raw));
                    self.pages.remove(&p);
                }
            }
        }
        // Back into the free ranges, merged with its neighbours.
        let (mut start, mut end) = (addr, addr + len);
        if let Some((&s, &l)) = self.free.range(..start).next_back()
            && s + l == start
        {
            self.free.remove(&s);
            start = s;
        }
        if let Some(l) = self.free.remove(&end) {
            end += l;
        }
        self.free.insert(start, end - start);
        Some((len, gone))
    }

    /// Every mapped page (address and physical allocation), out of the book.
    pub(super) fn take_pages(&mut self) -> Vec<(u64, u64)> {
        std::mem::take(&mut self.pages)
            .into_iter()
            .map(|(a, p)| (a, p.raw))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: u64 = 0x7f00_0000_0000;

    /// Places and maps like the executor, with made-up physical handles.
    fn alloc(b: &mut FixedBook, len: u64) -> u64 {
        let a = b.place(len).unwrap();
        let missing = b.missing_pages(a, len);
        b.hold_pages(a);
        for p in missing {
            b.add_page(p, p ^ 1, 1);
        }
        a
    }

    #[test]
    fn small_allocations_share_pages_and_give_them_back_last() {
        let mut b = FixedBook::new(BASE, 64 * PAGE);
        let x = alloc(&mut b, 100);
        let y = alloc(&mut b, 1000);
        assert_eq!((x, y), (BASE, BASE + 512));
        assert!(b.missing_pages(y, 1000).is_empty());
        let (len, gone) = b.remove(x).unwrap();
        assert_eq!((len, gone.len()), (512, 0));
        let (_, gone) = b.remove(y).unwrap();
        assert_eq!(gone, vec![(BASE, BASE ^ 1)]);
        // Everything merged back: one free range, the whole of it.
        assert_eq!(b.free.len(), 1);
        assert_eq!(b.place(64 * PAGE), Some(BASE));
    }

    #[test]
    fn large_allocations_are_page_aligned_and_span_pages() {
        let mut b = FixedBook::new(BASE, 64 * PAGE);
        let s = alloc(&mut b, 8);
        let l = alloc(&mut b, 3 * PAGE + 1);
        assert_eq!(l, BASE + PAGE);
        assert_eq!(b.pages.len(), 1 + 4);
        let (_, gone) = b.remove(l).unwrap();
        assert_eq!(gone.len(), 4);
        assert_eq!(b.remove(l), None, "freed once");
        assert!(b.remove(s + 8).is_none(), "not a base");
    }

    #[test]
    fn loaded_allocations_go_where_they_were() {
        let mut b = FixedBook::new(BASE, 16 * PAGE);
        assert!(b.place_at(BASE + 4 * PAGE, 100));
        assert!(!b.place_at(BASE + 4 * PAGE + 256, 8), "overlaps");
        assert!(!b.place_at(BASE + 100, 8), "misaligned");
        assert!(!b.place_at(BASE - PAGE, 8), "below the range");
        assert!(!b.place_at(BASE + 15 * PAGE, 2 * PAGE), "past the range");
        assert!(!b.place_at(u64::MAX - 511, 8), "wraps");
        assert_eq!(alloc(&mut b, 8), BASE);
        assert_eq!(b.place(16 * PAGE), None, "full");
        assert_eq!(b.place(0), None);
    }

    #[test]
    fn the_range_follows_the_limit() {
        assert_eq!(range_len(0), PAGE);
        assert_eq!(range_len(3 << 20), 6 << 20);
        assert_eq!(range_len(u64::MAX), MAX_RANGE);
    }
}
