// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Live migration of a CUDA session's objects of the virtual memory management API
//! (`cuMemCreate`, `cuMemAddressReserve`, `cuMemMap`, `cuMemSetAccess`).
//!
//! The guest holds the reservations' addresses, and the physical allocations' handles. A
//! save reads every physical allocation's contents through a scratch mapping of its own (an
//! allocation may be mapped nowhere, or only without access). A load reserves every range
//! again at its address: the driver takes an address asked for where it is free, and where
//! it is taken on the destination the load fails, naming it, and the guest runs on at its
//! source. Then it makes each physical allocation again under its handle (charged as
//! `cuMemCreate` charges it), writes its contents through a scratch mapping, and maps,
//! sets access and releases as the session had, through the same checks as the calls.

use std::collections::{HashMap, HashSet};

use super::errors::{failed, not_made};
use crate::executor::Status;
use crate::executor::cuda::{CudaExecutor, driver, to_status};
use crate::executor::vmm::GRANULARITY;
use crate::migrate::state::{MapState, PhysState, VmmState};
use crate::migrate::{CHUNK, MigrateError, compress};

/// Device addresses reserved for the time of a save or a load, where one physical
/// allocation at a time is mapped so the session can read or write it.
struct Scratch {
    base: u64,
    len: usize,
    ordinal: i32,
}

impl Scratch {
    /// `len` bytes of device addresses, wherever the driver likes.
    fn new(len: u64, ordinal: i32) -> Result<Self, MigrateError> {
        let len = usize::try_from(len)
            .map_err(|_| MigrateError::NoRoom("device address space".into()))?;
        let base = driver::mem_address_reserve(len, GRANULARITY as usize, 0)
            .map_err(|e| failed("reserving device addresses", to_status(e)))?;
        Ok(Self { base, len, ordinal })
    }

    /// Runs `f` with the `len` bytes of physical allocation `raw` mapped, readable and
    /// writable, at the address it is given. `f` waits for the copies it makes.
    fn with<T>(
        &self,
        raw: u64,
        len: u64,
        f: impl FnOnce(u64) -> Result<T, MigrateError>,
    ) -> Result<T, MigrateError> {
        let n = usize::try_from(len)
            .ok()
            .filter(|&n| n <= self.len)
            .ok_or_else(|| MigrateError::invalid("a VMM allocation past the scratch range"))?;
        // SAFETY: the scratch range is reserved and nothing is mapped in it (every `with`
        // unmaps what it mapped), `n` fits in it, and `raw` is a live physical allocation of
        // the session of exactly `n` bytes (the book's).
        unsafe { driver::mem_map_rw(self.base, n, raw, self.ordinal) }
            .map_err(|e| failed("mapping device memory", to_status(e)))?;
        let r = f(self.base);
        // SAFETY: exactly the mapping made above; `f` waited for its copies, so no work
        // uses it.
        let unmapped = unsafe { driver::mem_unmap(self.base, n) };
        let v = r?;
        unmapped.map_err(|e| failed("unmapping device memory", to_status(e)))?;
        Ok(v)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // SAFETY: the range `new` reserved, with nothing mapped in it.
        if let Err(e) = unsafe { driver::mem_address_free(self.base, self.len) } {
            log::warn!("cuMemAddressFree: {}", driver::error_name(e));
        }
    }
}

impl CudaExecutor {
    /// The session's VMM objects, every physical allocation with its contents (the device
    /// idle, the context current).
    pub(in crate::executor::cuda::ops) fn save_vmm(&self) -> Result<VmmState, MigrateError> {
        let (phys, reserved, maps, next_handle) = self.vmm.snapshot();
        let mut saved = Vec::with_capacity(phys.len());
        if let Some(most) = phys.iter().map(|p| p.1).max() {
            let scratch = Scratch::new(most, self.ordinal())?;
            for (handle, len, released, p) in phys {
                // A synchronous copy to pageable memory: done as it returns.
                let bytes = scratch.with(p.raw, len, |at| self.read_device(at, len))?;
                saved.push(PhysState {
                    handle,
                    len,
                    released,
                    data: compress(&bytes),
                });
            }
        }
        Ok(VmmState {
            top: None,
            phys: saved,
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
        })
    }

    /// Makes the saved VMM objects again: reservations at their addresses, physical
    /// allocations under their handles with their contents, then mappings, access and
    /// releases. On failure the session is to be dropped (its end frees what its book holds).
    pub(in crate::executor::cuda::ops) fn load_vmm(
        &mut self,
        v: VmmState,
    ) -> Result<(), MigrateError> {
        if v.top.is_some() {
            return Err(MigrateError::invalid(
                "the VMM address range of a CPU session",
            ));
        }
        self.vmm
            .restore_next(v.next_handle)
            .map_err(|_| MigrateError::invalid("the VMM handle counter"))?;
        for &(base, len) in &v.reserved {
            self.load_reservation(base, len)?;
        }
        let mut made = Vec::with_capacity(v.phys.len());
        let mut lens = HashMap::new();
        for p in &v.phys {
            let bad = || MigrateError::invalid(format_args!("VMM allocation {:#x}", p.handle));
            self.vmm
                .check_restore(p.handle, p.len, v.next_handle)
                .map_err(|_| bad())?;
            if usize::try_from(p.len.div_ceil(CHUNK as u64)).ok() != Some(p.data.len()) {
                return Err(bad());
            }
            let phys = self
                .vmm_make(p.len)
                .map_err(|st| not_made("VMM allocation", p.handle, st))?;
            if self
                .vmm
                .restore_phys(p.handle, p.len, phys, v.next_handle)
                .is_err()
            {
                self.vmm_drop(phys);
                return Err(bad());
            }
            made.push((phys.raw, p));
            lens.insert(p.handle, p.len);
        }
        // Every allocation is within the session's limit now, and so is the scratch range.
        if let Some(most) = lens.values().copied().max() {
            let scratch = Scratch::new(most, self.ordinal())?;
            for (raw, p) in made {
                scratch.with(raw, p.len, |at| {
                    self.write_blocks(at, p.len, &p.data)?;
                    driver::ctx_synchronize()
                        .map_err(|e| failed("writing device memory", to_status(e)))
                })?;
            }
        }
        let mapped: HashSet<u64> = v.maps.iter().map(|m| m.handle).collect();
        for m in v.maps {
            let bad = || MigrateError::invalid(format_args!("VMM mapping at {:#x}", m.addr));
            let len = *lens.get(&m.handle).ok_or_else(bad)?;
            let refused = |st| match st {
                Status::INVALID_VALUE | Status::NOT_SUPPORTED => bad(),
                st => failed("mapping device memory", st),
            };
            self.vmm_map_impl(m.addr, len, 0, m.handle)
                .map_err(refused)?;
            if m.accessible {
                self.vmm_set_access_impl(m.addr, len, 0, 3)
                    .map_err(refused)?;
            }
        }
        for p in v.phys.iter().filter(|p| p.released) {
            // A released allocation lives on only in its mappings.
            if !mapped.contains(&p.handle) || self.vmm_release_impl(p.handle).is_err() {
                return Err(MigrateError::invalid(format_args!(
                    "VMM allocation {:#x}",
                    p.handle
                )));
            }
        }
        Ok(())
    }

    /// Reserves `[base, base + len)` again, as a saved reservation (checked as the call).
    fn load_reservation(&mut self, base: u64, len: u64) -> Result<(), MigrateError> {
        let bad = || MigrateError::invalid(format_args!("VMM reservation at {base:#x}"));
        self.vmm.check_reserve_at(base, len).map_err(|_| bad())?;
        let n = usize::try_from(len).map_err(|_| bad())?;
        let got = driver::mem_address_reserve(n, GRANULARITY as usize, base)
            .map_err(|e| failed("reserving device addresses", to_status(e)))?;
        if got != base {
            // SAFETY: the range was reserved just above, nothing is mapped in it.
            let _ = unsafe { driver::mem_address_free(got, n) };
            return Err(MigrateError::NoRoom(format!(
                "device addresses {base:#x}..{:#x} of a VMM reservation are taken on this host",
                base.saturating_add(len)
            )));
        }
        self.vmm.reserve(base, len);
        Ok(())
    }
}
