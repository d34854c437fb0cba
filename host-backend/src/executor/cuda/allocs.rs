// SPDX-License-Identifier: Apache-2.0 OR MIT
//! What device memory a session owns, so every guest pointer is checked before use.
//!
//! Device pointers are the driver's own addresses and pass through to the guest unchanged.
//! In one backend process every session's memory lives in one unified address space, so the
//! driver alone would happily copy from another session's allocation (or from a registered
//! host range): every copy, memset and free is first checked here against the allocations
//! of the calling session, and a range must lie inside one of them.

use std::collections::BTreeMap;

use vcuda_protocol::region::Region;

use crate::executor::{ExecResult, Status};

/// Who may free an allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// `cudaMalloc`: the guest frees it.
    User,
    /// A module variable (`__device__`, `__constant__`), keyed by module image hash: it goes
    /// away with its module.
    Module([u8; 32]),
    /// Another process's allocation opened through an IPC handle: closed with
    /// `cudaIpcCloseMemHandle` (or with the session's context).
    Ipc,
    /// A mapping of the VMM API made accessible: goes with `cuMemUnmap` or
    /// `cuMemSetAccess` to none.
    Vmm,
    /// Host memory the guest shares, mapped for kernels at the guest's own address
    /// (`MapHostMemory`): goes with `UnmapHostMemory`.
    Mapped,
}

#[derive(Debug, Clone, Copy)]
struct Alloc {
    len: u64,
    owner: Owner,
}

/// A session's device allocations, by base address.
#[derive(Debug, Default)]
pub struct Allocations {
    map: BTreeMap<u64, Alloc>,
}

impl Allocations {
    /// Records `[base, base + len)`. Overlapping an existing range is refused (the driver
    /// never returns overlapping allocations; module variables may be looked up twice).
    pub fn insert(&mut self, base: u64, len: u64, owner: Owner) -> ExecResult<()> {
        let end = base.checked_add(len).ok_or(Status::INVALID_VALUE)?;
        if len == 0 {
            return Err(Status::INVALID_VALUE);
        }
        if let Some(a) = self.map.get(&base) {
            return if a.len == len && a.owner == owner {
                Ok(())
            } else {
                Err(Status::INVALID_VALUE)
            };
        }
        let before = self.map.range(..base).next_back();
        let after = self.map.range(base..).next();
        if before.is_some_and(|(&b, a)| b + a.len > base) || after.is_some_and(|(&b, _)| b < end) {
            return Err(Status::INVALID_VALUE);
        }
        self.map.insert(base, Alloc { len, owner });
        Ok(())
    }

    /// Forgets the user allocation starting exactly at `base`; its length.
    pub fn remove_user(&mut self, base: u64) -> ExecResult<u64> {
        match self.map.get(&base) {
            Some(a) if a.owner == Owner::User => {
                let len = a.len;
                self.map.remove(&base);
                Ok(len)
            }
            _ => Err(Status::INVALID_VALUE),
        }
    }

    /// Forgets the variables of module `hash`.
    pub fn remove_module(&mut self, hash: &[u8; 32]) {
        self.map.retain(|_, a| a.owner != Owner::Module(*hash));
    }

    /// The user allocations: base and length, in address order.
    pub fn users(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.map
            .iter()
            .filter(|(_, a)| a.owner == Owner::User)
            .map(|(&b, a)| (b, a.len))
    }

    /// Whether any range has owner `owner`.
    pub fn any_of(&self, owner: Owner) -> bool {
        self.map.values().any(|a| a.owner == owner)
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        self.map.clear();
    }

    /// Checks that `[addr, addr + len)` lies inside one allocation, or inside VMM mappings
    /// side by side, which are one range of device memory (`len` 0: always fine).
    pub fn check(&self, addr: u64, len: u64) -> ExecResult<()> {
        if len == 0 {
            return Ok(());
        }
        let end = addr.checked_add(len).ok_or(Status::INVALID_VALUE)?;
        let (&base, a) = self
            .map
            .range(..=addr)
            .next_back()
            .ok_or(Status::INVALID_VALUE)?;
        let mut covered = base.checked_add(a.len).ok_or(Status::INVALID_VALUE)?;
        if covered <= addr {
            return Err(Status::INVALID_VALUE);
        }
        let mut vmm = a.owner == Owner::Vmm;
        while covered < end {
            // Only a VMM mapping continues into the next one that starts where it ends.
            match self.map.get(&covered) {
                Some(n) if vmm && n.owner == Owner::Vmm => {
                    covered = covered.checked_add(n.len).ok_or(Status::INVALID_VALUE)?;
                    vmm = true;
                }
                _ => return Err(Status::INVALID_VALUE),
            }
        }
        Ok(())
    }

    /// Checks a pitched region (see [`Region`]).
    pub fn check_region(&self, r: &Region) -> ExecResult<()> {
        self.check(r.base(), r.span())
    }

    /// Number of tracked ranges.
    pub fn count(&self) -> usize {
        self.map.len()
    }

    /// Whether a user allocation starts exactly at `base`.
    /// The base of the user allocation containing `addr`.
    pub fn user_base_of(&self, addr: u64) -> Option<u64> {
        let (&b, a) = self.map.range(..=addr).next_back()?;
        (addr - b < a.len && a.owner == Owner::User).then_some(b)
    }

    /// Whether `base` starts a range opened through an IPC handle.
    pub fn is_ipc_base(&self, base: u64) -> bool {
        self.map.get(&base).is_some_and(|a| a.owner == Owner::Ipc)
    }

    /// Forgets the IPC range at `base`: its length.
    pub fn remove_ipc(&mut self, base: u64) -> Option<u64> {
        if self.is_ipc_base(base) {
            self.map.remove(&base).map(|a| a.len)
        } else {
            None
        }
    }

    /// Forgets the accessible VMM mapping at `base`.
    pub fn remove_vmm(&mut self, base: u64) {
        self.remove_owned(base, Owner::Vmm);
    }

    /// Forgets the range at `base` if `owner` has it.
    pub fn remove_owned(&mut self, base: u64, owner: Owner) {
        if self.map.get(&base).is_some_and(|a| a.owner == owner) {
            self.map.remove(&base);
        }
    }

    pub fn is_user_base(&self, base: u64) -> bool {
        self.map.get(&base).is_some_and(|a| a.owner == Owner::User)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: u64 = 0x7f00_0000_0000;

    #[test]
    fn ranges_must_lie_in_one_allocation() {
        let mut m = Allocations::default();
        m.insert(A, 1000, Owner::User).unwrap();
        m.insert(A + 1000, 24, Owner::User).unwrap();
        m.check(A, 1000).unwrap();
        m.check(A + 999, 1).unwrap();
        m.check(A + 5, 0).unwrap();
        m.check(0, 0).unwrap();
        // Crossing into the neighbour, past the end, before the start, wrapping.
        assert_eq!(m.check(A + 999, 2), Err(Status::INVALID_VALUE));
        assert_eq!(m.check(A + 1000, 25), Err(Status::INVALID_VALUE));
        assert_eq!(m.check(A - 1, 1), Err(Status::INVALID_VALUE));
        assert_eq!(m.check(A + 10, u64::MAX), Err(Status::INVALID_VALUE));
        assert_eq!(m.check(u64::MAX, 1), Err(Status::INVALID_VALUE));
        assert_eq!(m.count(), 2);
        // VMM mappings side by side are one range; a user allocation after one is not.
        let v = A + 0x10_0000;
        m.insert(v, 4096, Owner::Vmm).unwrap();
        m.insert(v + 4096, 4096, Owner::Vmm).unwrap();
        m.insert(v + 8192, 4096, Owner::User).unwrap();
        m.check(v + 4000, 200).unwrap();
        m.check(v, 8192).unwrap();
        assert_eq!(m.check(v + 8000, 400), Err(Status::INVALID_VALUE));
    }

    #[test]
    fn another_sessions_pointer_is_rejected() {
        let mut mine = Allocations::default();
        let mut theirs = Allocations::default();
        mine.insert(A, 4096, Owner::User).unwrap();
        theirs.insert(A + 0x20_0000, 4096, Owner::User).unwrap();
        assert_eq!(mine.check(A + 0x20_0000, 16), Err(Status::INVALID_VALUE));
        assert_eq!(mine.remove_user(A + 0x20_0000), Err(Status::INVALID_VALUE));
        theirs.check(A + 0x20_0000, 16).unwrap();
    }

    #[test]
    fn free_only_user_bases() {
        let mut m = Allocations::default();
        let h = [7u8; 32];
        m.insert(A, 64, Owner::User).unwrap();
        m.insert(A + 4096, 16, Owner::Module(h)).unwrap();
        // Looking a variable up again is fine; a conflicting overlap is not.
        m.insert(A + 4096, 16, Owner::Module(h)).unwrap();
        assert_eq!(
            m.insert(A + 4100, 16, Owner::User),
            Err(Status::INVALID_VALUE)
        );
        assert_eq!(
            m.insert(A + 32, 64, Owner::User),
            Err(Status::INVALID_VALUE)
        );
        assert!(!m.is_user_base(A + 1) && !m.is_user_base(A + 4096) && m.is_user_base(A));
        assert_eq!(m.remove_user(A + 1), Err(Status::INVALID_VALUE));
        assert_eq!(m.remove_user(A + 4096), Err(Status::INVALID_VALUE));
        assert_eq!(m.remove_user(A), Ok(64));
        assert_eq!(m.remove_user(A), Err(Status::INVALID_VALUE));
        m.check(A + 4096, 16).unwrap();
        m.remove_module(&h);
        assert_eq!(m.check(A + 4096, 16), Err(Status::INVALID_VALUE));
        assert_eq!(m.count(), 0);
    }

    #[test]
    fn regions() {
        // Regions themselves are tested with `vcuda_protocol::region`; here, that a region
        // must lie in one allocation from its base to its last byte.
        let r = Region::new(A, 256, 100, 3).unwrap();
        let mut m = Allocations::default();
        m.insert(A, 612, Owner::User).unwrap();
        m.check_region(&r).unwrap();
        let r2 = Region::new(A, 257, 100, 3).unwrap();
        assert_eq!(m.check_region(&r2), Err(Status::INVALID_VALUE));
    }
}
