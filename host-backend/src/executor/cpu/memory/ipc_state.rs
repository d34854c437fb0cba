// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Saving and loading a session's IPC memory handles (live migration): the allocations it
//! exported, registered again under their tokens, and the allocations of other sessions of
//! the VM it opened, linked to the exporter's allocation once every session is loaded (two
//! sessions may each have opened the other's).

use std::sync::Arc;

use super::ipc::{Export, MAX_EXPORTS_PER_SESSION, MAX_IMPORTS, exports};
use super::{ALIGN, AllocKind, DeviceHeap, GUARD, Import};
use crate::migrate::MigrateError;
use crate::migrate::state::{ImportState, IpcState};

impl DeviceHeap {
    /// The session's exports and imports. Fails, naming it, for an import whose exporter
    /// has freed the allocation since (only the importer holds it then, and it does not
    /// move).
    pub fn save_ipc(&self) -> Result<IpcState, MigrateError> {
        if !self.pending_imports.is_empty() {
            return Err(MigrateError::invalid("IPC imports not linked"));
        }
        let reg = exports();
        let mut out = IpcState::default();
        for (&addr, &token) in &self.exports {
            out.exports.push((addr, token));
        }
        out.exports.sort_unstable();
        for (&addr, i) in &self.imports {
            let live = reg
                .get(&i.token)
                .is_some_and(|e| e.alloc.strong_count() > 0 && e.heap != self.id);
            if !live {
                return Err(MigrateError::Unsupported(
                    "device memory opened through an IPC handle whose exporter freed it".into(),
                ));
            }
            out.imports.push(ImportState {
                addr,
                token: i.token,
                len: self.allocs.get(&addr).map_or(0, |a| a.len),
                opens: i.opens,
            });
        }
        Ok(out)
    }

    /// Whether the allocation at `addr` was opened from another session (its contents are
    /// that session's to save).
    pub(super) fn is_import(&self, addr: u64) -> bool {
        self.imports.contains_key(&addr)
    }

    /// Registers a loaded session's exports again (after [`DeviceHeap::load_state`]) and
    /// keeps its imports for [`DeviceHeap::link_imports`]. Every export names one of the
    /// session's `cudaMalloc` allocations and a token no live export holds.
    pub fn load_ipc(&mut self, s: IpcState) -> Result<(), MigrateError> {
        if !self.exports.is_empty() || !self.imports.is_empty() {
            return Err(MigrateError::invalid(
                "loading IPC handles into a heap in use",
            ));
        }
        if s.exports.len() > MAX_EXPORTS_PER_SESSION || s.imports.len() > MAX_IMPORTS {
            return Err(MigrateError::invalid("too many IPC handles"));
        }
        let mut reg = exports();
        for (addr, token) in s.exports {
            let bad = || MigrateError::invalid(format_args!("IPC export at {addr:#x}"));
            let a = self
                .allocs
                .get(&addr)
                .filter(|a| a.kind == AllocKind::User)
                .ok_or_else(bad)?;
            if reg.contains_key(&token) || self.exports.contains_key(&addr) {
                return Err(bad());
            }
            reg.insert(
                token,
                Export {
                    alloc: Arc::downgrade(a),
                    heap: self.id,
                },
            );
            self.exports.insert(addr, token);
        }
        let mut tokens = std::collections::HashSet::new();
        for i in &s.imports {
            if i.opens == 0
                || i.len == 0
                || !i.addr.is_multiple_of(ALIGN)
                || !tokens.insert(i.token)
            {
                return Err(MigrateError::invalid(format_args!(
                    "IPC import at {:#x}",
                    i.addr
                )));
            }
        }
        self.pending_imports = s.imports;
        Ok(())
    }

    /// Opens a loaded session's imports again, now that every session of its VM is loaded:
    /// each at its address (inside the session's range, clear of its allocations), sharing
    /// the allocation another session exported under its token, of the length it had,
    /// charged to this session as `cudaIpcOpenMemHandle` charges it.
    pub fn link_imports(&mut self) -> Result<(), MigrateError> {
        for i in std::mem::take(&mut self.pending_imports) {
            let at = i.addr;
            let bad = || MigrateError::invalid(format_args!("IPC import at {at:#x}"));
            let alloc = {
                let reg = exports();
                let e = reg.get(&i.token).ok_or_else(bad)?;
                if e.heap == self.id {
                    return Err(bad());
                }
                e.alloc.upgrade().ok_or_else(bad)?
            };
            let span = alloc
                .len
                .checked_next_multiple_of(ALIGN)
                .and_then(|s| s.checked_add(GUARD))
                .ok_or_else(bad)?;
            let stop = at.checked_add(span).ok_or_else(bad)?;
            let clear_below = self
                .allocs
                .range(..at)
                .next_back()
                .is_none_or(|(&b, a)| b + a.len.next_multiple_of(ALIGN) + GUARD <= at);
            let clear_above = self.allocs.range(at..stop).next().is_none();
            if alloc.len != i.len
                || at < self.start
                || stop > self.end
                || !clear_below
                || !clear_above
            {
                return Err(bad());
            }
            let charge = alloc.charge;
            self.charge_loaded(charge)?;
            self.allocs.insert(at, alloc);
            self.imports.insert(
                at,
                Import {
                    token: i.token,
                    opens: i.opens,
                    charge,
                },
            );
            self.next = self.next.max(stop);
        }
        Ok(())
    }
}
