// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Saving and loading a session's device memory (live migration, [`crate::migrate`]).

use std::sync::Arc;

use super::{ALIGN, AllocKind, Allocation, DeviceHeap, GUARD, charge};
use crate::migrate::state::{ALLOC_ARRAY, ALLOC_SYMBOL, ALLOC_USER, AllocState};
use crate::migrate::{self, MigrateError};

/// What a saved heap holds: `(start, end, next)` and the allocations.
pub type HeapState = ((u64, u64), u64, Vec<AllocState>);

impl DeviceHeap {
    /// The heap's range and allocations, contents compressed (not the host memory mapped into
    /// it). Fails for what cannot move yet: IPC imports and exports, the VMM API's objects.
    pub fn save_state(&self) -> Result<HeapState, MigrateError> {
        let refuse = |what: &str| Err(MigrateError::Unsupported(what.into()));
        if !self.imports.is_empty() {
            return refuse("device memory opened through an IPC handle");
        }
        if !self.exports.is_empty() {
            return refuse("device memory exported through an IPC handle");
        }
        // Mapped host memory is the session's to save (it re-maps it where the guest's
        // memory is, on the other side).
        if !self.vmm_is_empty() {
            return refuse("objects of the virtual memory management API (cuMemCreate)");
        }
        let mut allocs = Vec::with_capacity(self.allocs.len());
        for (&addr, a) in &self.allocs {
            let kind = match a.kind {
                AllocKind::User => ALLOC_USER,
                AllocKind::Symbol => ALLOC_SYMBOL,
                AllocKind::Array => ALLOC_ARRAY,
                AllocKind::Vmm => {
                    return refuse("objects of the virtual memory management API (cuMemCreate)");
                }
            };
            let bytes = self.bytes(addr, a.len).map_err(|_| {
                MigrateError::invalid(format_args!("allocation at {addr:#x} unreadable"))
            })?;
            allocs.push(AllocState {
                addr,
                len: a.len,
                kind,
                data: migrate::compress(bytes),
            });
        }
        Ok(((self.start, self.end), self.next, allocs))
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
            let Some(new) = Allocation::new(a.len, kind, charge) else {
                self.budget.release(charge);
                return Err(MigrateError::NoRoom(format!(
                    "{} bytes of host memory",
                    a.len
                )));
            };
            self.allocs.insert(at, Arc::new(new));
            self.charged += charge;
            let dst = self.bytes_mut(at, a.len).map_err(|_| bad())?;
            migrate::decompress_into(&a.data, dst)?;
            floor = stop;
        }
        // Everything at or above `next` must be free (`find_space`'s fast path).
        self.next = next.clamp(floor, self.end.max(floor));
        Ok(())
    }
}
