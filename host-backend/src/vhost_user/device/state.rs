// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Saving every session of a VM and loading them into another backend's device (live
//! migration, [`crate::migrate`]).
//!
//! QEMU transfers the state once the VM is stopped and every request queue is stopped
//! (`GET_VRING_BASE`, which waits for the chains in flight): no call runs and none starts,
//! so each session is quiet. Saving leaves the sessions as they are, since the migration may
//! still fail and the VM run on here; loading happens before the guest's memory is mapped,
//! so nothing in a session's state may name guest memory (sessions sharing guest pages do
//! not move yet).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use log::{info, warn};
use vcuda_protocol::virtio::PageExtent;
use vm_memory::GuestAddress;

use super::super::chain::{self, Mem};
use super::super::pages;
use super::{Device, Entry, Inner, Slot, Threading, Worker, start_worker};
use crate::executor::Cancel;
use crate::migrate::precopy::{ChunkRead, Sent};
use crate::migrate::state::{DeviceState, SessionState};
use crate::migrate::{Known, MigrateError};
use crate::session::Session;

impl Device {
    /// Every session's state, the device memory `sent` says the destination holds (a
    /// pre-copy's) as references to it. Call it only while no chain can run (the rings
    /// stopped).
    pub fn save_state(&self, sent: Option<&Sent>) -> Result<DeviceState, MigrateError> {
        let mut t = self.inner.table();
        let mut sessions: Vec<(u64, SessionState)> = Vec::with_capacity(t.sessions.len());
        for (&id, e) in &mut t.sessions {
            let token = e.token;
            let holds = |addr: u64, index: u32, sum: &[u8; 16]| {
                sent.is_some_and(|s| s.holds(id, token, addr, index, sum))
            };
            let known: Option<Known<'_>> = sent.map(|_| &holds as Known<'_>);
            let saved = match &mut e.worker {
                Worker::Thread(_, shared) => shared
                    .slot()
                    .session
                    .as_mut()
                    .map(|s| s.save_state_known(known)),
                Worker::Inline(slot) => slot.session.as_mut().map(|s| s.save_state_known(known)),
            };
            match saved {
                Some(Ok(state)) => sessions.push((id, state)),
                Some(Err(e)) => {
                    return Err(match e {
                        MigrateError::Unsupported(what) => {
                            MigrateError::Unsupported(format!("{what} (session {id:#x})"))
                        }
                        e => e,
                    });
                }
                // A session whose open failed, or that was dropped after a panic: nothing
                // moves, and the guest's next call to it gets an error as it would here.
                None => {}
            }
        }
        sessions.sort_unstable_by_key(|(id, _)| *id);
        info!("saved {} sessions", sessions.len());
        Ok(DeviceState {
            sessions,
            next_session: 0,
        })
    }

    /// A handle on this device that does not keep it (nor end its sessions when dropped).
    pub fn downgrade(&self) -> WeakDevice {
        WeakDevice(Arc::downgrade(&self.inner))
    }

    /// Shares again, in `mem` (the guest's memory as this backend now maps it), the guest
    /// pages each loaded session shared on the other side. A session whose pages cannot be
    /// shared again is dropped (the guest's calls to it then fail), the others go on.
    pub fn restore_guest_pages(&self, mem: &Mem) {
        // Loaded sessions run no call before their rings start, after this.
        let deadline = Instant::now() + Duration::from_secs(1);
        let resolve = |extents: &[(u64, u64)]| {
            let e: Vec<PageExtent> = extents
                .iter()
                .map(|&(addr, len)| PageExtent { addr, len })
                .collect();
            pages::pieces(mem, &e)
        };
        let busy = self.each_session(deadline, |id, session| {
            if let Err(e) = session.restore_guest_pages(&resolve) {
                warn!("session {id:#x} dropped: its shared guest pages: {e}");
                return false;
            }
            true
        });
        for id in busy {
            warn!("session {id:#x} busy while the guest's memory was mapped");
        }
    }

    /// Logs every guest page the sessions share as written (in the dirty-page log of a
    /// migration): kernels and copies write them behind vm-memory's back. Called as a
    /// request queue stops, after its calls ended, so the last copy of the guest's RAM has
    /// them. Waits until `deadline` for calls still running on other queues; the sessions
    /// still busy then are not logged, and the device will not save its state
    /// ([`Device::save_state`] refuses) until a later call logs them.
    pub fn mark_shared_dirty(&self, mem: &Mem, deadline: Instant) {
        let busy = self.each_session(deadline, |_, session| {
            for (addr, len) in session.shared_extents() {
                chain::mark_dirty(mem, GuestAddress(addr), len);
            }
            true
        });
        *self
            .inner
            .unlogged
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = busy;
    }

    /// Runs `f` on every session, waiting until `deadline` for a call one runs to end;
    /// drops those for which `f` returns false (the guest's calls to them then get "no
    /// session"). The ids of sessions still busy at the deadline, which `f` did not see.
    fn each_session(
        &self,
        deadline: Instant,
        mut f: impl FnMut(u64, &mut Session) -> bool,
    ) -> Vec<u64> {
        let mut t = self.inner.table();
        let mut busy = Vec::new();
        for (&id, e) in &mut t.sessions {
            let mut guard;
            let slot: &mut Slot = match &mut e.worker {
                Worker::Thread(_, shared) => match shared.slot_until(deadline) {
                    Some(g) => {
                        guard = g;
                        &mut guard
                    }
                    None => {
                        busy.push(id);
                        continue;
                    }
                },
                Worker::Inline(slot) => slot,
            };
            if let Some(s) = slot.session.as_mut()
                && !f(id, s)
            {
                slot.session = None;
            }
        }
        busy
    }

    /// Loads saved sessions into this device, which has none. Fails, loading nothing, if one
    /// does not load (every session loaded before it is dropped again).
    pub fn load_state(&self, state: DeviceState) -> Result<usize, MigrateError> {
        let inner = &self.inner;
        if inner.config.threading != Threading::PerSession {
            return Err(MigrateError::Unsupported(
                "loading into a device without session threads".into(),
            ));
        }
        let mut t = inner.table();
        if !t.sessions.is_empty() {
            return Err(MigrateError::invalid("loading into a device with sessions"));
        }
        if state.sessions.len() > inner.config.max_sessions {
            return Err(MigrateError::NoRoom(format!(
                "{} sessions, more than this backend's limit of {}",
                state.sessions.len(),
                inner.config.max_sessions
            )));
        }
        let mut loaded = Vec::with_capacity(state.sessions.len());
        let mut failed = None;
        for (id, saved) in state.sessions {
            if loaded.iter().any(|(i, _)| *i == id) {
                failed = Some(MigrateError::invalid(format_args!("session {id:#x} twice")));
                break;
            }
            let cancel = Cancel::default();
            match inner
                .backend
                .load_session(saved, cancel.clone(), inner.tenant)
            {
                Ok(mut s) => {
                    s.share_guest_pages();
                    let mut slot = Slot::new(cancel.clone());
                    slot.session = Some(s);
                    loaded.push((id, (slot, cancel)));
                }
                Err(e) => {
                    failed = Some(match e {
                        MigrateError::Unsupported(w) => {
                            MigrateError::Unsupported(format!("{w} (session {id:#x})"))
                        }
                        e => MigrateError::invalid(format_args!("session {id:#x}: {e}")),
                    });
                    break;
                }
            }
        }
        // What sessions share (memory opened through IPC handles) links once all are here.
        for (id, (slot, _)) in &mut loaded {
            if failed.is_some() {
                break;
            }
            if let Some(s) = slot.session.as_mut()
                && let Err(e) = s.link_state()
            {
                failed = Some(MigrateError::invalid(format_args!("session {id:#x}: {e}")));
            }
        }
        if let Some(e) = failed {
            // The sessions loaded so far end here, with their memory.
            return Err(e);
        }
        let n = loaded.len();
        let epoch = inner.epoch.load(Ordering::SeqCst);
        for (id, (slot, cancel)) in loaded {
            let token = t.next_token;
            t.next_token += 1;
            let Some((tx, shared)) = start_worker(inner, id, token, slot, 0) else {
                return Err(MigrateError::NoRoom("no thread for a session".into()));
            };
            t.sessions.insert(
                id,
                Entry {
                    token,
                    epoch,
                    worker: Worker::Thread(tx, shared),
                    cancel,
                },
            );
        }
        info!("loaded {n} sessions");
        Ok(n)
    }
}

/// A handle on a [`Device`] that does not keep it: what a migration's pre-copy reads the
/// sessions through ([`super::super::precopy`]). Dropping it ends nothing.
#[derive(Clone)]
pub struct WeakDevice(Weak<Inner>);

impl WeakDevice {
    /// The sessions open now: each id, and the token of the session that holds it (an id
    /// the guest reuses gets a new token).
    pub fn sessions(&self) -> Vec<(u64, u64)> {
        let Some(inner) = self.0.upgrade() else {
            return Vec::new();
        };
        let mut ids: Vec<(u64, u64)> = inner
            .table()
            .sessions
            .iter()
            .map(|(&id, e)| (id, e.token))
            .collect();
        ids.sort_unstable();
        ids
    }

    /// The chunk of session `id`'s device memory after `after`, for a migration's
    /// pre-copy (see [`crate::executor::StateOps::precopy_block`]), read between the
    /// session's calls: `Some(None)` at the end; `None` for a session or device that is
    /// gone, and when a call of the session still runs at `deadline`.
    pub fn precopy_block(
        &self,
        id: u64,
        after: Option<(u64, u32)>,
        known: Known<'_>,
        deadline: Instant,
    ) -> Option<Option<ChunkRead>> {
        let inner = self.0.upgrade()?;
        // Not under the table's lock, which new chains need.
        let shared = match &inner.table().sessions.get(&id)?.worker {
            Worker::Thread(_, shared) => shared.clone(),
            Worker::Inline(_) => return None,
        };
        shared
            .slot_until(deadline)?
            .session
            .as_mut()
            .map(|s| s.precopy_block(after, known))
    }
}
