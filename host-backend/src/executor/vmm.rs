// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The bookkeeping of the virtual memory management API (`cuMemCreate`,
//! `cuMemAddressReserve`, `cuMemMap`, `cuMemSetAccess`, `cuMemUnmap`, `cuMemRelease`,
//! `cuMemAddressFree`) that every executor shares: which physical allocations, reservations
//! and mappings a session owns, and the rules every request is checked against before an
//! executor acts on it. `P` is what an executor keeps per physical allocation (the CPU
//! executor's buffer, the driver's handle).
//!
//! The rules: sizes and mapped addresses are multiples of [`GRANULARITY`]; a mapping lies
//! inside one reservation, overlaps no other and covers a whole physical allocation
//! (offset 0, its size: anything else answers not-supported); unmapping and setting access
//! take ranges made of whole mappings; a reservation is freed whole and empty; a released
//! allocation goes with its last mapping. Each kind of object is bounded by [`MAX_VMM`],
//! and the address space reserved by [`MAX_RESERVED`].

use std::collections::{BTreeMap, HashMap};

use super::{ExecResult, Status};

/// Granularity of physical allocations, reservations and mappings (the H100's).
pub const GRANULARITY: u64 = 2 << 20;
/// Most physical allocations, reservations and mappings of one session, each.
pub const MAX_VMM: usize = 4096;
/// The highest handle counter a loaded session may bring (no session counts that far:
/// the bound keeps the counter from overflowing).
pub const MAX_HANDLE: u64 = 1 << 48;
/// Most bytes of address space one session may hold reserved (the device's address space
/// is every session's).
pub const MAX_RESERVED: u64 = 1 << 40;

/// A session's VMM objects.
#[derive(Debug)]
pub struct VmmBook<P> {
    phys: HashMap<u64, Phys<P>>,
    /// Reservations: base -> length.
    reserved: BTreeMap<u64, u64>,
    /// Mappings: address -> what is mapped there.
    maps: BTreeMap<u64, Mapping>,
    next_handle: u64,
    /// Bytes reserved in all.
    reserved_bytes: u64,
}

impl<P> Default for VmmBook<P> {
    fn default() -> Self {
        Self {
            phys: HashMap::new(),
            reserved: BTreeMap::new(),
            maps: BTreeMap::new(),
            next_handle: 0,
            reserved_bytes: 0,
        }
    }
}

#[derive(Debug)]
struct Phys<P> {
    payload: P,
    len: u64,
    /// `cuMemRelease` was called: it goes once its last mapping does.
    released: bool,
    maps: u32,
}

/// One mapping.
#[derive(Debug, Clone, Copy)]
pub struct Mapping {
    /// Bytes.
    pub len: u64,
    /// The physical allocation mapped.
    pub handle: u64,
    /// Whether kernels and copies may reach it.
    pub accessible: bool,
}

/// What [`VmmBook::take_all`] hands back.
#[derive(Debug)]
pub struct Everything<P> {
    /// Mappings: address and mapping.
    pub maps: Vec<(u64, Mapping)>,
    /// Reservations: base and length.
    pub reserved: Vec<(u64, u64)>,
    /// The allocations' payloads.
    pub phys: Vec<P>,
}

/// A size the API takes: non-zero, a multiple of [`GRANULARITY`].
pub fn granular(n: u64) -> bool {
    n > 0 && n.is_multiple_of(GRANULARITY)
}

impl<P> VmmBook<P> {
    /// Checks a new physical allocation of `size` bytes before it is made.
    pub fn check_create(&self, size: u64) -> ExecResult<()> {
        if !granular(size) {
            return Err(Status::INVALID_VALUE);
        }
        if self.phys.len() >= MAX_VMM {
            return Err(Status::MEMORY_ALLOCATION);
        }
        Ok(())
    }

    /// Records a physical allocation made after [`VmmBook::check_create`]: its handle.
    pub fn create(&mut self, size: u64, payload: P) -> u64 {
        self.next_handle += 1;
        self.phys.insert(
            self.next_handle,
            Phys {
                payload,
                len: size,
                released: false,
                maps: 0,
            },
        );
        self.next_handle
    }

    /// `cuMemRelease`: the allocation's payload if it goes now (no mapping left).
    pub fn release(&mut self, handle: u64) -> ExecResult<Option<P>> {
        let p = self
            .phys
            .get_mut(&handle)
            .filter(|p| !p.released)
            .ok_or(Status::INVALID_VALUE)?;
        p.released = true;
        Ok(if p.maps == 0 {
            self.phys.remove(&handle).map(|p| p.payload)
        } else {
            None
        })
    }

    /// Checks a reservation of `size` bytes aligned to `align` before it is made.
    pub fn check_reserve(&self, size: u64, align: u64) -> ExecResult<()> {
        if !granular(size) || (align != 0 && !align.is_power_of_two()) {
            return Err(Status::INVALID_VALUE);
        }
        if self.reserved.len() >= MAX_VMM
            || self
                .reserved_bytes
                .checked_add(size)
                .is_none_or(|t| t > MAX_RESERVED)
        {
            return Err(Status::MEMORY_ALLOCATION);
        }
        Ok(())
    }

    /// Records a reservation made after [`VmmBook::check_reserve`].
    pub fn reserve(&mut self, base: u64, size: u64) {
        self.reserved.insert(base, size);
        self.reserved_bytes += size;
    }

    /// `cuMemAddressFree`: checks and forgets a whole reservation with nothing mapped in it.
    pub fn free(&mut self, ptr: u64, size: u64) -> ExecResult<()> {
        if self.reserved.get(&ptr) != Some(&size)
            || self
                .maps
                .range(ptr..ptr.saturating_add(size))
                .next()
                .is_some()
        {
            return Err(Status::INVALID_VALUE);
        }
        self.reserved.remove(&ptr);
        self.reserved_bytes -= size;
        Ok(())
    }

    /// Whether no physical allocation and no reservation exists.
    pub fn is_empty(&self) -> bool {
        self.phys.is_empty() && self.reserved.is_empty()
    }

    /// The lowest reserved address, if any.
    pub fn lowest_reservation(&self) -> Option<u64> {
        self.reserved.keys().next().copied()
    }

    /// `cuMemMap`: checks the mapping and records it (not accessible yet); the payload
    /// mapped.
    pub fn map(&mut self, ptr: u64, size: u64, offset: u64, handle: u64) -> ExecResult<&P> {
        let len = match self.phys.get(&handle) {
            Some(p) if !p.released => p.len,
            _ => return Err(Status::INVALID_VALUE),
        };
        if offset != 0 || size != len {
            return Err(Status::NOT_SUPPORTED);
        }
        if !ptr.is_multiple_of(GRANULARITY) {
            return Err(Status::INVALID_VALUE);
        }
        let end = ptr.checked_add(size).ok_or(Status::INVALID_VALUE)?;
        let inside = self
            .reserved
            .range(..=ptr)
            .next_back()
            .is_some_and(|(&b, &l)| end <= b + l);
        let overlaps = self
            .maps
            .range(..end)
            .next_back()
            .is_some_and(|(&b, m)| b + m.len > ptr);
        if !inside || overlaps || self.maps.len() >= MAX_VMM {
            return Err(Status::INVALID_VALUE);
        }
        self.maps.insert(
            ptr,
            Mapping {
                len,
                handle,
                accessible: false,
            },
        );
        let p = self.phys.get_mut(&handle).ok_or(Status::INVALID_VALUE)?;
        p.maps += 1;
        Ok(&p.payload)
    }

    /// The addresses of the mappings that exactly cover `[ptr, ptr + size)`.
    fn covering(&self, ptr: u64, size: u64) -> ExecResult<Vec<u64>> {
        let end = ptr.checked_add(size).ok_or(Status::INVALID_VALUE)?;
        let mut at = ptr;
        let mut out = Vec::new();
        for (&b, m) in self.maps.range(ptr..end) {
            if b != at {
                return Err(Status::INVALID_VALUE);
            }
            out.push(b);
            at = b + m.len;
        }
        if size == 0 || at != end {
            return Err(Status::INVALID_VALUE);
        }
        Ok(out)
    }

    /// `cuMemSetAccess`: checks that whole mappings cover the range, and calls `apply` for
    /// each whose access changes (address, mapping, payload) before recording it.
    pub fn set_access(
        &mut self,
        ptr: u64,
        size: u64,
        on: bool,
        mut apply: impl FnMut(u64, &Mapping, &P) -> ExecResult<()>,
    ) -> ExecResult<()> {
        for b in self.covering(ptr, size)? {
            let Some(m) = self.maps.get_mut(&b) else {
                continue;
            };
            if m.accessible == on {
                continue;
            }
            let Some(p) = self.phys.get(&m.handle) else {
                continue;
            };
            apply(b, m, &p.payload)?;
            m.accessible = on;
        }
        Ok(())
    }

    /// `cuMemUnmap`: checks that whole mappings cover the range and forgets them: each
    /// one's address and mapping, with the payload of an allocation that goes with it.
    pub fn unmap(&mut self, ptr: u64, size: u64) -> ExecResult<Vec<(u64, Mapping, Option<P>)>> {
        let mut out = Vec::new();
        for b in self.covering(ptr, size)? {
            let Some(m) = self.maps.remove(&b) else {
                continue;
            };
            let gone = self.phys.get_mut(&m.handle).is_some_and(|p| {
                p.maps -= 1;
                p.maps == 0 && p.released
            });
            let payload = if gone {
                self.phys.remove(&m.handle).map(|p| p.payload)
            } else {
                None
            };
            out.push((b, m, payload));
        }
        Ok(out)
    }

    /// What a saved state needs: each physical allocation (handle, length, released,
    /// payload), the reservations, the mappings, and the handle counter.
    #[allow(clippy::type_complexity)]
    pub fn snapshot(
        &self,
    ) -> (
        Vec<(u64, u64, bool, &P)>,
        Vec<(u64, u64)>,
        Vec<(u64, Mapping)>,
        u64,
    ) {
        let mut phys: Vec<_> = self
            .phys
            .iter()
            .map(|(&h, p)| (h, p.len, p.released, &p.payload))
            .collect();
        phys.sort_unstable_by_key(|p| p.0);
        (
            phys,
            self.reserved.iter().map(|(&b, &l)| (b, l)).collect(),
            self.maps.iter().map(|(&a, &m)| (a, m)).collect(),
            self.next_handle,
        )
    }

    /// Checks a saved physical allocation before it is made again (loading a migrated
    /// session): as [`VmmBook::check_create`] checks a new one, its handle new, non-zero
    /// and within `next_handle`, the counter the state gives (at most [`MAX_HANDLE`]).
    pub fn check_restore(&self, handle: u64, len: u64, next_handle: u64) -> ExecResult<()> {
        self.check_create(len)?;
        if handle == 0
            || handle > next_handle
            || next_handle > MAX_HANDLE
            || self.phys.contains_key(&handle)
        {
            return Err(Status::INVALID_VALUE);
        }
        Ok(())
    }

    /// Records a saved physical allocation under its handle, checked as
    /// [`VmmBook::check_restore`] checks it.
    pub fn restore_phys(
        &mut self,
        handle: u64,
        len: u64,
        payload: P,
        next_handle: u64,
    ) -> ExecResult<()> {
        self.check_restore(handle, len, next_handle)?;
        self.next_handle = self.next_handle.max(next_handle);
        self.phys.insert(
            handle,
            Phys {
                payload,
                len,
                released: false,
                maps: 0,
            },
        );
        Ok(())
    }

    /// Whether `[base, base + size)` overlaps a reservation (or wraps around).
    pub fn overlaps_reservation(&self, base: u64, size: u64) -> bool {
        let Some(end) = base.checked_add(size) else {
            return true;
        };
        self.reserved
            .range(..end)
            .next_back()
            .is_some_and(|(&b, &l)| b + l > base)
    }

    /// Checks a saved reservation at `base` (loading a migrated session): as
    /// [`VmmBook::check_reserve`], and aligned, overlapping no other.
    pub fn check_reserve_at(&self, base: u64, size: u64) -> ExecResult<()> {
        self.check_reserve(size, 0)?;
        if !base.is_multiple_of(GRANULARITY) || self.overlaps_reservation(base, size) {
            return Err(Status::INVALID_VALUE);
        }
        Ok(())
    }

    /// Restores the counter behind physical allocations' handles (loading a migrated
    /// session, whose guest may still hold handles of allocations gone since): at most
    /// [`MAX_HANDLE`].
    pub fn restore_next(&mut self, next_handle: u64) -> ExecResult<()> {
        if next_handle > MAX_HANDLE {
            return Err(Status::INVALID_VALUE);
        }
        self.next_handle = self.next_handle.max(next_handle);
        Ok(())
    }

    /// Everything, for the session's end, in the order to undo it: mappings, then
    /// reservations, then allocations.
    pub fn take_all(&mut self) -> Everything<P> {
        self.reserved_bytes = 0;
        Everything {
            maps: std::mem::take(&mut self.maps).into_iter().collect(),
            reserved: std::mem::take(&mut self.reserved).into_iter().collect(),
            phys: std::mem::take(&mut self.phys)
                .into_values()
                .map(|p| p.payload)
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rules() {
        let mut b: VmmBook<&str> = VmmBook::default();
        assert_eq!(b.check_create(100).unwrap_err(), Status::INVALID_VALUE);
        b.check_create(GRANULARITY).unwrap();
        let h = b.create(GRANULARITY, "one");
        let base = 64 * GRANULARITY;
        b.check_reserve(2 * GRANULARITY, 0).unwrap();
        assert_eq!(
            b.check_reserve(GRANULARITY, 3).unwrap_err(),
            Status::INVALID_VALUE
        );
        b.reserve(base, 2 * GRANULARITY);
        // Outside the reservation, misaligned, partial, or overlapping: refused.
        assert!(b.map(base + 2 * GRANULARITY, GRANULARITY, 0, h).is_err());
        assert!(b.map(base + 4096, GRANULARITY, 0, h).is_err());
        assert_eq!(
            b.map(base, GRANULARITY, 4096, h).unwrap_err(),
            Status::NOT_SUPPORTED
        );
        assert_eq!(*b.map(base, GRANULARITY, 0, h).unwrap(), "one");
        assert!(b.map(base, GRANULARITY, 0, h).is_err());
        let mut seen = Vec::new();
        b.set_access(base, GRANULARITY, true, |a, _, p| {
            seen.push((a, *p));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, [(base, "one")]);
        // Already accessible: nothing to apply.
        b.set_access(base, GRANULARITY, true, |_, _, _| panic!("applied twice"))
            .unwrap();
        assert!(
            b.set_access(base, 2 * GRANULARITY, true, |_, _, _| Ok(()))
                .is_err()
        );
        // Released while mapped: goes with the unmap.
        assert_eq!(b.release(h).unwrap(), None);
        assert!(b.release(h).is_err());
        assert!(b.free(base, 2 * GRANULARITY).is_err());
        let gone = b.unmap(base, GRANULARITY).unwrap();
        assert_eq!(gone.len(), 1);
        assert!(gone[0].1.accessible);
        assert_eq!(gone[0].2, Some("one"));
        b.free(base, 2 * GRANULARITY).unwrap();
        assert_eq!(b.lowest_reservation(), None);
        // Bounded.
        for _ in 0..MAX_VMM {
            b.check_create(GRANULARITY).unwrap();
            b.create(GRANULARITY, "many");
        }
        assert_eq!(
            b.check_create(GRANULARITY).unwrap_err(),
            Status::MEMORY_ALLOCATION
        );
        for i in 0..MAX_VMM as u64 {
            b.check_reserve(GRANULARITY, 0).unwrap();
            b.reserve(i * GRANULARITY, GRANULARITY);
        }
        assert_eq!(
            b.check_reserve(GRANULARITY, 0).unwrap_err(),
            Status::MEMORY_ALLOCATION
        );
        let all = b.take_all();
        assert_eq!((all.phys.len(), all.reserved.len()), (MAX_VMM, MAX_VMM));
        b.check_reserve(MAX_RESERVED, 0).unwrap();
        b.reserve(0, MAX_RESERVED);
        assert_eq!(
            b.check_reserve(GRANULARITY, 0).unwrap_err(),
            Status::MEMORY_ALLOCATION
        );
    }
}
