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

use log::info;

use super::{Device, Entry, Slot, Threading, Worker, start_worker};
use crate::executor::Cancel;
use crate::migrate::MigrateError;
use crate::migrate::state::{DeviceState, SessionState};

impl Device {
    /// Every session's state. Call it only while no chain can run (the rings stopped).
    pub fn save_state(&self) -> Result<DeviceState, MigrateError> {
        let mut t = self.inner.table();
        let mut sessions: Vec<(u64, SessionState)> = Vec::with_capacity(t.sessions.len());
        for (&id, e) in &mut t.sessions {
            let saved = match &mut e.worker {
                Worker::Thread(_, shared) => shared.slot().session.as_mut().map(|s| s.save_state()),
                Worker::Inline(slot) => slot.session.as_mut().map(|s| s.save_state()),
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
