// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Saving and loading a session's device memory (live migration, [`crate::migrate`]).

use std::sync::Arc;

use super::{ALIGN, AllocKind, Allocation, DeviceHeap, GUARD, charge};
use crate::migrate::precopy::ChunkRead;
use crate::migrate::state::{
    ALLOC_ARRAY, ALLOC_SYMBOL, ALLOC_USER, AllocState, MapState, PhysState, VmmState,
};
use crate::migrate::{self, Known, MigrateError};

/// What a saved heap holds: `(start, end, next)` and the allocations (`end`: where the
/// range ended before the VMM API's reservations took its top).
pub type HeapState = ((u64, u64), u64, Vec<AllocState>);

impl DeviceHeap {
    /// The heap's range and allocations, contents compressed (not the host memory mapped into
    /// it, nor the VMM API's mappings, [`DeviceHeap::save_vmm`], nor allocations opened
    /// from other sessions, [`DeviceHeap::save_ipc`]).
    pub fn save_state(&self, known: Option<Known<'_>>) -> Result<HeapState, MigrateError> {
        // Mapped host memory is the session's to save (it re-maps it where the guest's
        // memory is, on the other side).
        let mut allocs = Vec::with_capacity(self.allocs.len());
        for (&addr, a) in &self.allocs {
            if self.is_import(addr) {
                // Another session's allocation: it travels with that session.
                continue;
            }
            let kind = match a.kind {
                AllocKind::User => ALLOC_USER,
                AllocKind::Symbol => ALLOC_SYMBOL,
                AllocKind::Array => ALLOC_ARRAY,
                // An accessible VMM mapping: its physical allocation travels in `save_vmm`.
                AllocKind::Vmm => continue,
            };
            let bytes = self.bytes(addr, a.len).map_err(|_| {
                MigrateError::invalid(format_args!("allocation at {addr:#x} unreadable"))
            })?;
            allocs.push(AllocState {
                addr,
                len: a.len,
                kind,
                data: migrate::compress_known(bytes, addr, known),
            });
        }
        Ok(((self.start, self.vmm_top()), self.next, allocs))
    }

    /// The chunk of device memory after `after` (`(address, index)`; `None`: the first)
    /// of the allocations [`DeviceHeap::save_state`] saves, in the order of addresses and
    /// then indices: its checksum, and the chunk packed as the state packs it unless
    /// `known` says the destination holds it. What a migration's pre-copy reads a chunk at
    /// a time while the session runs ([`crate::migrate::precopy`]).
    pub fn precopy_block(&self, after: Option<(u64, u32)>, known: Known<'_>) -> Option<ChunkRead> {
        let (from, mut next) = match after {
            Some((addr, index)) => (addr, index.checked_add(1)?),
            None => (self.start, 0),
        };
        for (&addr, a) in self.allocs.range(from..) {
            if addr != from {
                next = 0;
            }
            if matches!(a.kind, AllocKind::Vmm) || self.is_import(addr) {
                continue;
            }
            let Ok(bytes) = self.bytes(addr, a.len) else {
                continue;
            };
            let start = usize::try_from(next).ok()?.checked_mul(migrate::CHUNK)?;
            if start >= bytes.len() {
                continue;
            }
            let chunk = &bytes[start..(start + migrate::CHUNK).min(bytes.len())];
            // Memory exported through an IPC handle may be written meanwhile by an importing
            // session's kernel (only this session's slot is held): checksum and pack one
            // copy of it, so the block sent is the one its checksum names.
            let copy;
            let chunk = if self.exports.contains_key(&addr) {
                copy = chunk.to_vec();
                &copy[..]
            } else {
                chunk
            };
            let sum = migrate::block_hash(chunk);
            let packed = (!known(addr, next, &sum)).then(|| migrate::pack(chunk));
            return Some(ChunkRead {
                addr,
                index: next,
                sum,
                packed,
            });
        }
        None
    }

    /// The VMM API's objects: physical allocations with their contents, reservations,
    /// mappings and their access.
    pub fn save_vmm(&self) -> VmmState {
        let (phys, reserved, maps, next_handle) = self.vmm.book.snapshot();
        VmmState {
            top: self.vmm.top,
            phys: phys
                .into_iter()
                .map(|(handle, len, released, a)| PhysState {
                    handle,
                    len,
                    released,
                    data: migrate::compress(a.contents()),
                })
                .collect(),
            reserved,
            maps: maps
                .into_iter()
                .map(|(addr, m)| MapState {
                    addr,
                    handle: m.handle,
                    accessible: m.accessible,
                })
                .collect(),
            next_handle,
        }
    }

    /// Re-creates saved VMM objects in this heap, after [`DeviceHeap::load_state`]: each
    /// physical allocation under its handle with its contents (charged as `cuMemCreate`
    /// charges it), each reservation at its address (above every allocation, below where
    /// the range ended), each mapping through the checks `cuMemMap` and `cuMemSetAccess`
    /// make. On failure the heap is to be dropped.
    pub fn load_vmm(&mut self, v: VmmState) -> Result<(), MigrateError> {
        if !self.vmm_is_empty() {
            return Err(MigrateError::invalid(
                "loading VMM objects into a heap in use",
            ));
        }
        let top = match v.top {
            None if v.reserved.is_empty() => None,
            Some(top) if top == self.end => Some(top),
            _ => return Err(MigrateError::invalid("the VMM API's address range")),
        };
        let mut released = Vec::new();
        let mut lens = std::collections::HashMap::new();
        self.vmm
            .book
            .restore_next(v.next_handle)
            .map_err(|_| MigrateError::invalid("the VMM handle counter"))?;
        for p in v.phys {
            let bad = || MigrateError::invalid(format_args!("VMM allocation {:#x}", p.handle));
            let charge = charge(p.len).ok_or_else(bad)?;
            self.vmm.book.check_create(p.len).map_err(|_| bad())?;
            self.charge_loaded(charge)?;
            let Some(mut a) = Allocation::new(p.len, AllocKind::Vmm, charge) else {
                self.uncharge_loaded(charge);
                return Err(MigrateError::NoRoom(format!(
                    "{} bytes of host memory",
                    p.len
                )));
            };
            migrate::decompress_into(&p.data, a.contents_mut())?;
            self.vmm
                .book
                .restore_phys(p.handle, p.len, Arc::new(a), v.next_handle)
                .map_err(|_| bad())?;
            lens.insert(p.handle, p.len);
            if p.released {
                released.push(p.handle);
            }
        }
        for &(base, len) in &v.reserved {
            let bad = || MigrateError::invalid(format_args!("VMM reservation at {base:#x}"));
            self.vmm
                .book
                .check_reserve_at(base, len)
                .map_err(|_| bad())?;
            let stop = base.checked_add(len).ok_or_else(bad)?;
            if base < self.next || base <= self.start || top.is_none_or(|t| stop > t) {
                return Err(bad());
            }
            self.vmm.book.reserve(base, len);
        }
        if let Some(top) = top {
            self.vmm.top = Some(top);
            self.end = self.vmm.book.lowest_reservation().unwrap_or(top);
        }
        let mapped: std::collections::HashSet<u64> = v.maps.iter().map(|m| m.handle).collect();
        for m in v.maps {
            let bad = || MigrateError::invalid(format_args!("VMM mapping at {:#x}", m.addr));
            let len = *lens.get(&m.handle).ok_or_else(bad)?;
            self.vmm
                .book
                .map(m.addr, len, 0, m.handle)
                .map_err(|_| bad())?;
            if m.accessible {
                self.vmm_set_access(m.addr, len, 3).map_err(|_| bad())?;
            }
        }
        for h in released {
            // A released allocation lives on only in its mappings.
            if !mapped.contains(&h) || self.vmm_release(h).is_err() {
                return Err(MigrateError::invalid(format_args!("VMM allocation {h:#x}")));
            }
        }
        Ok(())
    }

    /// The allocation at `addr` (its start): its length and kind.
    pub fn allocation(&self, addr: u64) -> Option<(u64, AllocKind)> {
        self.allocs.get(&addr).map(|a| (a.len, a.kind))
    }

    /// How many allocations of `kind` the heap holds.
    pub fn count_kind(&self, kind: AllocKind) -> usize {
        self.allocs.values().filter(|a| a.kind == kind).count()
    }

    /// The addresses of module variables' storage (and of the device `malloc` heap).
    pub fn symbol_allocations(&self) -> impl Iterator<Item = u64> + '_ {
        self.allocs
            .iter()
            .filter(|(_, a)| a.kind == AllocKind::Symbol)
            .map(|(&addr, _)| addr)
    }

    /// Re-creates a saved heap in this empty one: the same range, every allocation at its
    /// address with its contents, each charged as a `cudaMalloc` would be. Checks every
    /// address and length (aligned, inside the range, no overlap, within the session's
    /// limit); on failure the heap may hold part of the state and is to be dropped.
    pub fn load_state(&mut self, state: HeapState) -> Result<(), MigrateError> {
        let ((start, end), next, allocs) = state;
        if !self.allocs.is_empty() {
            return Err(MigrateError::invalid("loading into a heap in use"));
        }
        if (start, end) != (self.start, self.end) {
            self.set_range(start, end.saturating_sub(start));
            if (start, end) != (self.start, self.end) {
                return Err(MigrateError::invalid(format_args!(
                    "device address range {start:#x}..{end:#x}"
                )));
            }
        }
        let mut floor = self.start;
        for a in allocs {
            let at = a.addr;
            let bad = || MigrateError::invalid(format_args!("allocation at {at:#x}"));
            let kind = match a.kind {
                ALLOC_USER => AllocKind::User,
                ALLOC_SYMBOL => AllocKind::Symbol,
                ALLOC_ARRAY => AllocKind::Array,
                _ => return Err(bad()),
            };
            // In address order, each after the previous one's guard gap.
            let span = a
                .len
                .checked_next_multiple_of(ALIGN)
                .and_then(|s| s.checked_add(GUARD))
                .ok_or_else(bad)?;
            let stop = at.checked_add(span).ok_or_else(bad)?;
            if a.len == 0 || !at.is_multiple_of(ALIGN) || at < floor || stop > self.end {
                return Err(bad());
            }
            let charge = charge(a.len).ok_or_else(bad)?;
            self.charge_loaded(charge)?;
            let Some(new) = Allocation::new(a.len, kind, charge) else {
                self.uncharge_loaded(charge);
                return Err(MigrateError::NoRoom(format!(
                    "{} bytes of host memory",
                    a.len
                )));
            };
            self.allocs.insert(at, Arc::new(new));
            let dst = self.bytes_mut(at, a.len).map_err(|_| bad())?;
            migrate::decompress_into(&a.data, dst)?;
            floor = stop;
        }
        // Everything at or above `next` must be free (`find_space`'s fast path).
        self.next = next.clamp(floor, self.end.max(floor));
        Ok(())
    }
}

impl DeviceHeap {
    /// Charges `charge` bytes of loaded device memory to the session, within its limit and
    /// the backend's budget, as an allocation call would.
    pub(super) fn charge_loaded(&mut self, charge: u64) -> Result<(), MigrateError> {
        if self
            .charged
            .checked_add(charge)
            .is_none_or(|c| c > self.limit)
        {
            return Err(MigrateError::NoRoom(format!(
                "device memory beyond the session's limit of {} bytes",
                self.limit
            )));
        }
        if !self.budget.reserve(charge) {
            return Err(MigrateError::NoRoom(
                "device memory beyond the backend's".into(),
            ));
        }
        self.charged += charge;
        Ok(())
    }

    /// Gives back what [`DeviceHeap::charge_loaded`] charged (the memory could not be made).
    fn uncharge_loaded(&mut self, charge: u64) {
        self.budget.release(charge);
        self.charged -= charge;
    }
}

impl Allocation {
    /// Its bytes, for saving (no call of the session runs: `save_state`'s contract, and an
    /// allocation shared through IPC is refused before).
    fn contents(&self) -> &[u8] {
        // SAFETY: the allocation owns `len` bytes at `ptr` (see `Allocation::new`); no
        // kernel or copy of the session runs while it is saved, so nothing writes them.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len as usize) }
    }

    /// Its bytes, for loading into a new allocation nothing else refers to yet.
    fn contents_mut(&mut self) -> &mut [u8] {
        // SAFETY: the allocation owns `len` bytes at `ptr`; `&mut self` is the only way to
        // them.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len as usize) }
    }
}
