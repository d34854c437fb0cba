// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The library's record of allocations: device memory from `cudaMalloc`, page-locked host
//! memory from `cudaMallocHost`/`cudaHostAlloc`, and ranges registered with
//! `cudaHostRegister`. It answers `cudaPointerGetAttributes`, infers the direction of
//! `cudaMemcpyDefault`, and lets asynchronous calls be checked locally so they need not
//! wait for the backend.

use std::collections::BTreeMap;
use std::sync::RwLock;

/// What kind of memory a range is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Device memory.
    Device,
    /// Page-locked host memory the library allocated (`cudaHostAlloc` flags kept).
    HostAlloc(u32),
    /// Host memory the program registered (`cudaHostRegister` flags kept).
    HostRegistered(u32),
    /// Managed memory (`cudaMallocManaged`): host memory kernels reach at its own address.
    Managed,
}

/// One range.
#[derive(Clone, Copy, Debug)]
pub struct Range {
    /// Start.
    pub base: u64,
    /// Length.
    pub len: u64,
    /// Kind.
    pub kind: Kind,
    /// Device that was current when it was made.
    pub device: i32,
}

/// A recorded range, and whether it joins neighbours of its own sort (see
/// [`Mirror::insert_joining`]).
#[derive(Clone, Copy, Debug)]
struct Entry {
    r: Range,
    joins: bool,
}

/// All ranges, by start address.
#[derive(Default, Debug)]
pub struct Mirror {
    ranges: RwLock<BTreeMap<u64, Entry>>,
}

impl Mirror {
    /// Records a range.
    pub fn insert(&self, r: Range) {
        self.put(r, false);
    }

    /// Records a device range that forms one range with device ranges recorded this way
    /// right next to it: VMM mappings made accessible one by one are one range of device
    /// memory, as on a GPU, while separate allocations are not, even where they touch
    /// (NVIDIA's allocations often do, and a copy or memset across two of them fails).
    pub fn insert_joining(&self, r: Range) {
        self.put(r, true);
    }

    fn put(&self, r: Range, joins: bool) {
        self.ranges
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(r.base, Entry { r, joins });
    }

    /// Removes the range starting at `base` if it has a kind accepted by `pred`.
    pub fn remove(&self, base: u64, pred: impl Fn(Kind) -> bool) -> Option<Range> {
        let mut g = self.ranges.write().unwrap_or_else(|e| e.into_inner());
        match g.get(&base) {
            Some(e) if pred(e.r.kind) => g.remove(&base).map(|e| e.r),
            _ => None,
        }
    }

    /// Removes every range starting in `[lo, hi)` with a kind accepted by `pred`.
    pub fn remove_within(&self, lo: u64, hi: u64, pred: impl Fn(Kind) -> bool) {
        self.ranges
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|&b, e| !(lo <= b && b < hi && pred(e.r.kind)));
    }

    /// The range containing `addr`.
    pub fn find(&self, addr: u64) -> Option<Range> {
        let g = self.ranges.read().unwrap_or_else(|e| e.into_inner());
        let (_, e) = g.range(..=addr).next_back()?;
        (addr - e.r.base < e.r.len.max(1)).then_some(e.r)
    }

    /// Whether `[addr, addr + len)` lies in device memory: one device range, or several
    /// joining ranges side by side ([`Mirror::insert_joining`]; the backend still checks
    /// every access against what it owns).
    pub fn is_device_range(&self, addr: u64, len: u64) -> bool {
        let Some(end) = addr.checked_add(len) else {
            return false;
        };
        let g = self.ranges.read().unwrap_or_else(|e| e.into_inner());
        let Some((_, first)) = g.range(..=addr).next_back() else {
            return false;
        };
        let mut last = first;
        if last.r.kind != Kind::Device || addr - last.r.base >= last.r.len.max(1) {
            return false;
        }
        let mut covered = last.r.base.saturating_add(last.r.len);
        while covered < end {
            match g.get(&covered) {
                Some(e) if last.joins && e.joins && e.r.kind == Kind::Device && e.r.len > 0 => {
                    covered = covered.saturating_add(e.r.len);
                    last = e;
                }
                _ => return false,
            }
        }
        true
    }

    /// Whether `addr` is in device memory.
    pub fn is_device(&self, addr: u64) -> bool {
        matches!(self.find(addr), Some(r) if r.kind == Kind::Device)
    }

    /// Drops every device range (after `cudaDeviceReset`).
    pub fn clear_device(&self) {
        self.ranges
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|_, e| e.r.kind != Kind::Device);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(base: u64, len: u64) -> Range {
        Range {
            base,
            len,
            kind: Kind::Device,
            device: 0,
        }
    }

    #[test]
    fn joining_device_ranges_side_by_side_are_one() {
        let m = Mirror::default();
        m.insert_joining(dev(0x1000, 0x1000));
        m.insert_joining(dev(0x2000, 0x1000));
        m.insert_joining(dev(0x4000, 0x1000));
        assert!(m.is_device_range(0x1800, 0x1000));
        assert!(m.is_device_range(0x1000, 0x2000));
        assert!(!m.is_device_range(0x1000, 0x2001), "a gap at 0x3000");
        assert!(!m.is_device_range(0x800, 0x10));
        assert!(!m.is_device_range(0x1000, u64::MAX));
        m.insert(Range {
            kind: Kind::Managed,
            ..dev(0x3000, 0x1000)
        });
        assert!(
            !m.is_device_range(0x2800, 0x1000),
            "managed memory is not device memory"
        );
    }

    #[test]
    fn allocations_side_by_side_stay_apart() {
        let m = Mirror::default();
        m.insert(dev(0x1000, 0x1000));
        m.insert(dev(0x2000, 0x1000));
        m.insert_joining(dev(0x3000, 0x1000));
        assert!(m.is_device_range(0x1000, 0x1000));
        assert!(!m.is_device_range(0x1800, 0x1000), "two allocations");
        assert!(
            !m.is_device_range(0x2800, 0x1000),
            "an allocation, then a mapping"
        );
    }
}
