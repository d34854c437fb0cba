// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CPU executor's interprocess handles: the backend-wide registries of exported
//! allocations and events, by unguessable token, and the heap's side of
//! `cudaIpcGetMemHandle`, `cudaIpcOpenMemHandle` and `cudaIpcCloseMemHandle` (an import is a
//! heap entry sharing the exporter's buffer, charged to the importer while open).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, Weak};

use super::{AllocKind, Allocation, DeviceHeap, Import, Token};
use crate::executor::{ExecResult, Status};

/// The first bytes of every IPC handle the CPU executor gives out.
pub(super) const IPC_MAGIC: &[u8; 8] = b"vcudaIPC";
/// Most exported allocations in the backend, and per session; most imports per session.
const MAX_EXPORTS: usize = 65_536;
pub(super) const MAX_EXPORTS_PER_SESSION: usize = 4096;
pub(super) const MAX_IMPORTS: usize = 4096;

/// An exported allocation (see [`DeviceHeap::ipc_export`]): the registry holds it weakly, so
/// an export keeps nothing alive; an import holds the buffer.
pub(super) struct Export {
    pub(super) alloc: Weak<Allocation>,
    pub(super) heap: u64,
}

/// Every session's exports, by token: sessions of one backend process share allocations
/// through them (the guest processes of one VM; the clients of one in-process backend).
static EXPORTS: LazyLock<Mutex<HashMap<Token, Export>>> = LazyLock::new(Default::default);

/// Every session's exported interprocess events, by token: the exporting session's heap id
/// (see [`IpcEvents`]).
static EVENT_EXPORTS: LazyLock<Mutex<HashMap<Token, u64>>> = LazyLock::new(Default::default);

/// The first bytes of every IPC event handle the CPU executor gives out.
const IPC_EVENT_MAGIC: &[u8; 8] = b"vcudaEVT";

/// A session's exported events (`cudaIpcGetEventHandle`): their tokens in the backend-wide
/// registry, withdrawn when the event is destroyed, at reset and when the session ends.
/// The CPU executor finishes every piece of work before it answers the request, so an event
/// another session opens has nothing to wait for: the exporter's work recorded before it is
/// done by the time the record is answered (the library sends records of interprocess
/// events as calls, not batched).
#[derive(Debug, Default)]
pub struct IpcEvents {
    by_event: HashMap<u64, Token>,
}

impl IpcEvents {
    /// Whether no event of the session is exported.
    pub fn is_empty(&self) -> bool {
        self.by_event.is_empty()
    }

    /// The handle for `event` of the session whose heap is `heap`.
    pub fn export(&mut self, event: u64, heap: &DeviceHeap) -> ExecResult<[u8; 64]> {
        let token = match self.by_event.get(&event) {
            Some(t) => *t,
            None => {
                let mut token = [0u8; 16];
                getrandom::fill(&mut token).map_err(|_| Status::MEMORY_ALLOCATION)?;
                let mut reg = EVENT_EXPORTS.lock().unwrap_or_else(|e| e.into_inner());
                if reg.len() >= MAX_EXPORTS || self.by_event.len() >= MAX_EXPORTS_PER_SESSION {
                    return Err(Status::MEMORY_ALLOCATION);
                }
                reg.insert(token, heap.id);
                self.by_event.insert(event, token);
                token
            }
        };
        let mut h = [0u8; 64];
        h[..8].copy_from_slice(IPC_EVENT_MAGIC);
        h[8..24].copy_from_slice(&token);
        Ok(h)
    }

    /// Checks that `handle` names a live event another session exported (the session whose
    /// heap is `heap` opens it).
    pub fn check_open(handle: &[u8; 64], heap: &DeviceHeap) -> ExecResult<()> {
        if &handle[..8] != IPC_EVENT_MAGIC {
            return Err(Status::INVALID_VALUE);
        }
        let mut token: Token = [0; 16];
        token.copy_from_slice(&handle[8..24]);
        let reg = EVENT_EXPORTS.lock().unwrap_or_else(|e| e.into_inner());
        match reg.get(&token) {
            None => Err(Status::INVALID_VALUE),
            Some(&id) if id == heap.id => Err(Status(vcuda_protocol::status::DEVICE_UNINITIALIZED)),
            Some(_) => Ok(()),
        }
    }

    /// The exported events and their tokens, for a saved state.
    pub fn save(&self) -> Vec<(u64, Token)> {
        let mut v: Vec<_> = self.by_event.iter().map(|(&e, &t)| (e, t)).collect();
        v.sort_unstable();
        v
    }

    /// Registers a loaded session's exported events again under their tokens (the handles
    /// the guest processes hold): each one of the session's interprocess events
    /// (`interprocess`), a token no live export holds.
    pub fn load(
        &mut self,
        events: Vec<(u64, Token)>,
        heap: &DeviceHeap,
        interprocess: impl Fn(u64) -> bool,
    ) -> Result<(), crate::migrate::MigrateError> {
        if !self.by_event.is_empty() || events.len() > MAX_EXPORTS_PER_SESSION {
            return Err(crate::migrate::MigrateError::invalid("IPC event handles"));
        }
        let mut reg = EVENT_EXPORTS.lock().unwrap_or_else(|e| e.into_inner());
        for (event, token) in events {
            if !interprocess(event)
                || reg.contains_key(&token)
                || self.by_event.contains_key(&event)
            {
                return Err(crate::migrate::MigrateError::invalid(format_args!(
                    "IPC handle of event {event:#x}"
                )));
            }
            reg.insert(token, heap.id);
            self.by_event.insert(event, token);
        }
        Ok(())
    }

    /// Withdraws the handle of `event` (destroyed).
    pub fn remove(&mut self, event: u64) {
        if let Some(t) = self.by_event.remove(&event) {
            EVENT_EXPORTS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&t);
        }
    }

    /// Withdraws every handle.
    pub fn clear(&mut self) {
        if self.by_event.is_empty() {
            return;
        }
        let mut reg = EVENT_EXPORTS.lock().unwrap_or_else(|e| e.into_inner());
        for (_, t) in self.by_event.drain() {
            reg.remove(&t);
        }
    }
}

impl Drop for IpcEvents {
    fn drop(&mut self) {
        self.clear();
    }
}

pub(super) fn exports() -> std::sync::MutexGuard<'static, HashMap<Token, Export>> {
    // A panic while holding the lock leaves the map consistent (single inserts/removes).
    EXPORTS.lock().unwrap_or_else(|e| e.into_inner())
}

impl DeviceHeap {
    /// An interprocess handle for the allocation holding `addr` (`cudaIpcGetMemHandle`):
    /// a magic, an unguessable token naming the allocation in the backend's registry, and
    /// the allocation's length. Asking again for the same allocation gives the same handle.
    pub fn ipc_export(&mut self, addr: u64) -> ExecResult<[u8; 64]> {
        let (&base, a) = self
            .allocs
            .range(..=addr)
            .next_back()
            .filter(|(b, a)| addr - **b < a.len && a.kind == AllocKind::User)
            .ok_or(Status::INVALID_VALUE)?;
        if self.imports.contains_key(&base) {
            return Err(Status::INVALID_VALUE);
        }
        let token = match self.exports.get(&base) {
            Some(t) => *t,
            None => {
                let mut token = [0u8; 16];
                getrandom::fill(&mut token).map_err(|_| Status::MEMORY_ALLOCATION)?;
                let mut reg = exports();
                if reg.len() >= MAX_EXPORTS {
                    reg.retain(|_, e| e.alloc.strong_count() > 0);
                }
                if reg.len() >= MAX_EXPORTS || self.exports.len() >= MAX_EXPORTS_PER_SESSION {
                    return Err(Status::MEMORY_ALLOCATION);
                }
                reg.insert(
                    token,
                    Export {
                        alloc: Arc::downgrade(a),
                        heap: self.id,
                    },
                );
                self.exports.insert(base, token);
                token
            }
        };
        let mut h = [0u8; 64];
        h[..8].copy_from_slice(IPC_MAGIC);
        h[8..24].copy_from_slice(&token);
        h[24..32].copy_from_slice(&a.len.to_le_bytes());
        Ok(h)
    }

    /// Maps the allocation another session exported as `handle` into this heap
    /// (`cudaIpcOpenMemHandle`), charged to this session as long as it stays open. The
    /// same handle opened again returns the same address and counts one more open.
    pub fn ipc_import(&mut self, handle: &[u8; 64]) -> ExecResult<(u64, u64)> {
        if &handle[..8] != IPC_MAGIC {
            return Err(Status::INVALID_VALUE);
        }
        let mut token: Token = [0; 16];
        token.copy_from_slice(&handle[8..24]);
        if let Some((&addr, i)) = self.imports.iter_mut().find(|(_, i)| i.token == token) {
            i.opens = i.opens.checked_add(1).ok_or(Status::INVALID_VALUE)?;
            let len = self.allocs.get(&addr).map_or(0, |a| a.len);
            return Ok((addr, len));
        }
        let (alloc, heap) = {
            let reg = exports();
            let e = reg.get(&token).ok_or(Status::INVALID_VALUE)?;
            (e.alloc.upgrade().ok_or(Status::INVALID_VALUE)?, e.heap)
        };
        if heap == self.id {
            // CUDA opens handles of other processes only (`cudaErrorInvalidContext`).
            return Err(Status(vcuda_protocol::status::DEVICE_UNINITIALIZED));
        }
        if self.imports.len() >= MAX_IMPORTS {
            return Err(Status::MEMORY_ALLOCATION);
        }
        let charge = alloc.charge;
        let (addr, span) = self.place(alloc.len, charge)?;
        if !self.budget.reserve(charge) {
            return Err(Status::MEMORY_ALLOCATION);
        }
        let len = alloc.len;
        self.allocs.insert(addr, alloc);
        self.imports.insert(
            addr,
            Import {
                token,
                opens: 1,
                charge,
            },
        );
        self.charged += charge;
        self.next = self.next.max(addr + span);
        Ok((addr, len))
    }

    /// Closes one open of the imported allocation at `addr` (`cudaIpcCloseMemHandle`);
    /// the last close unmaps it.
    pub fn ipc_close(&mut self, addr: u64) -> ExecResult<()> {
        let i = self.imports.get_mut(&addr).ok_or(Status::INVALID_VALUE)?;
        i.opens -= 1;
        if i.opens == 0 {
            let charge = i.charge;
            self.imports.remove(&addr);
            self.allocs.remove(&addr);
            self.budget.release(charge);
            self.charged -= charge;
        }
        Ok(())
    }

    /// Withdraws the export of the allocation at `addr`, if it has one (it is being freed).
    pub(super) fn withdraw_export(&mut self, addr: u64) {
        if let Some(token) = self.exports.remove(&addr) {
            exports().remove(&token);
        }
    }

    /// Removes this heap's exports from the registry: nobody opens them any more (those
    /// already open stay valid).
    pub(super) fn forget_exports(&mut self) {
        if self.exports.is_empty() {
            return;
        }
        let mut reg = exports();
        for (_, t) in self.exports.drain() {
            reg.remove(&t);
        }
    }
}
