// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Saving a session and loading it into another backend (live migration,
//! [`crate::migrate`]).

use std::collections::HashMap;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use vcuda_protocol::decode::{decode_reply_header, split_records};
use vcuda_protocol::{RecordHeader, RecordKind, ReplyBuilder, status};

use super::pending::Pending;
use super::{Backend, Session};
use crate::executor::{Cancel, MAX_STDOUT_BUFFER, ModuleImage, Status, Tenant};
use crate::migrate::MigrateError;
use crate::migrate::state::{HeldRecord, Image, MappedState, SessionState};
use crate::shared::ResolvePieces;

impl Session {
    /// Links what this loaded session shares with the other sessions of its VM (see
    /// [`crate::executor::StateOps::link_state`]): call it once every session is loaded.
    pub fn link_state(&mut self) -> Result<(), MigrateError> {
        self.exec.link_state()
    }

    /// Everything the session built, for [`Backend::load_session`] in another backend.
    /// Call it only while none of the session's calls runs. Fails, naming it, if the
    /// session holds something that cannot move yet (memory the guest shares with the
    /// host, among others: see [`crate::migrate`]); the session is unchanged then.
    pub fn save_state(&mut self) -> Result<SessionState, MigrateError> {
        self.save_state_known(None)
    }

    /// [`Session::save_state`], saving the device memory `known` names (the destination
    /// holds it from a pre-copy, [`crate::migrate::precopy`]) as references to it.
    pub fn save_state_known(
        &mut self,
        known: Option<crate::migrate::Known<'_>>,
    ) -> Result<SessionState, MigrateError> {
        if self.pending.is_some() {
            return Err(MigrateError::Unsupported(
                "a session loaded here whose guest memory was never mapped".into(),
            ));
        }
        let Some(shared) = self.shared.guest_regions() else {
            return Err(MigrateError::Unsupported(
                "memory shared over a Unix socket (only a VM's sessions move)".into(),
            ));
        };
        let mapped = self
            .mapped
            .iter()
            .map(|(&addr, m)| MappedState {
                addr,
                region: m.region,
                offset: m.offset,
                len: m.len,
            })
            .collect();
        let (exec, images) = self.exec.save_state(known)?;
        self.collect_stdout();
        Ok(SessionState {
            executor: self.backend.kind() as u32,
            hello: self.hello,
            sticky: self.sticky.map(Status::code),
            stdout: self.stdout.clone(),
            held: held_records(&mut self.held)?,
            images: images
                .iter()
                .map(|i| Image {
                    hash: i.hash,
                    bytes: i.bytes.clone(),
                })
                .collect(),
            graphs: self.graphs.save_state(),
            shared,
            shared_next: self.shared.next_handle(),
            mapped,
            exec,
        })
    }

    /// The chunk of device memory after `after`, for a migration's pre-copy (see
    /// [`crate::executor::StateOps::precopy_block`]).
    pub fn precopy_block(
        &mut self,
        after: Option<(u64, u32)>,
        known: crate::migrate::Known<'_>,
    ) -> Option<crate::migrate::precopy::ChunkRead> {
        self.exec.precopy_block(after, known)
    }

    /// The guest-physical extents `(address, length)` of every guest page the session
    /// shares (a VM's: pages the backend may write behind the guest's back, through copies
    /// and kernels).
    pub fn shared_extents(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        if let Some(regions) = self.shared.guest_regions() {
            out.extend(regions.into_iter().flat_map(|(_, e)| e));
        }
        if let Some(p) = &self.pending {
            out.extend(p.extents());
        }
        out
    }

    /// Shares again the guest pages a loaded session shared on the other side, now that
    /// this backend maps the guest's memory: `resolve` turns guest-physical extents into
    /// pieces of that memory. Their ranges exposed to kernels are exposed again at the same
    /// device addresses. Nothing to do for a session that shares none.
    pub fn restore_guest_pages<'m>(&mut self, resolve: &ResolvePieces<'m>) -> Result<(), String> {
        let Some(mut p) = self.pending.take() else {
            return Ok(());
        };
        for (h, extents) in &p.shared {
            let pieces = resolve(extents)?;
            self.shared
                .restore_pieces(*h, &pieces, extents, p.next)
                .map_err(|s| format!("region {h}: {s}"))?;
            if let Some((addr, len)) = self.shared.range(*h) {
                self.exec.host_memory_shared(addr, len);
            }
        }
        for m in &p.mapped {
            let held = p.holds.remove(&m.addr);
            self.map_host(m.region, m.offset, m.len, m.addr, held)
                .map_err(|s| format!("range at {:#x}: {s}", m.addr))?;
        }
        Ok(())
    }
}

impl Backend {
    /// A session of `tenant` holding what `state` (from [`Session::save_state`] in another
    /// backend) describes, every handle and device address as it was. The state is hostile
    /// input: anything inconsistent fails the load, and nothing of it stays.
    pub fn load_session(
        self: &Arc<Self>,
        state: SessionState,
        cancel: Cancel,
        tenant: Tenant,
    ) -> Result<Session, MigrateError> {
        if state.executor != self.kind() as u32 {
            return Err(MigrateError::invalid(format_args!(
                "saved by executor kind {}, this backend runs {:?}",
                state.executor,
                self.kind()
            )));
        }
        if state.sticky.is_some_and(|s| !status::is_sticky(s)) {
            return Err(MigrateError::invalid("sticky error"));
        }
        let mut images = HashMap::new();
        for Image { hash, bytes } in state.images {
            let sum: [u8; 32] = Sha256::digest(&bytes).into();
            if sum != hash || bytes.len() as u64 > crate::modules::MAX_MODULE_LEN {
                return Err(MigrateError::invalid("module image"));
            }
            images.insert(hash, Arc::new(ModuleImage { hash, bytes }));
        }
        let mut pending = Pending::check(state.shared, state.shared_next, state.mapped)?;
        let mut session = self
            .new_session_with(cancel, tenant)
            .map_err(|s| MigrateError::NoRoom(format!("no session: {s}")))?;
        if let Some(p) = pending.as_mut().filter(|p| !p.mapped.is_empty()) {
            if !session.exec.can_map_host_memory() {
                return Err(MigrateError::NoRoom(
                    "memory mapped for kernels: this host's device does not map host memory".into(),
                ));
            }
            // Before the executor's state, which must not take these addresses either.
            if session.exec.maps_host_memory_in_place() {
                p.hold_addresses()?;
            }
        }
        session.pending = pending;
        session.exec.load_state(state.exec, &images)?;
        session
            .graphs
            .load_state(session.exec.as_mut(), state.graphs)?;
        // The guest sent these: it may offer them by hash again.
        for image in images.into_values() {
            session.sent_images.insert(image.hash);
            self.modules.insert(image);
        }
        session.hello = state.hello;
        session.sticky = state.sticky.map(Status);
        session.stdout = state.stdout;
        session.stdout.truncate(MAX_STDOUT_BUFFER);
        for r in state.held {
            let kind = RecordKind::from_u16(r.kind)
                .ok_or_else(|| MigrateError::invalid("held record kind"))?;
            if session.held.ctrl_bytes() + size_of::<RecordHeader>() + r.payload.len()
                > super::MAX_HELD
            {
                return Err(MigrateError::invalid("held records"));
            }
            session.held.push(kind, r.seq, r.status, &[&r.payload], 0);
        }
        Ok(session)
    }
}

/// The records `held` holds, in order.
fn held_records(held: &mut ReplyBuilder) -> Result<Vec<HeldRecord>, MigrateError> {
    if held.is_empty() {
        return Ok(Vec::new());
    }
    let bytes = held.finish();
    let bad = |e: vcuda_protocol::DecodeError| MigrateError::invalid(format_args!("held: {e}"));
    let h = decode_reply_header(bytes).map_err(bad)?;
    let ctrl = bytes
        .get(size_of::<vcuda_protocol::ReplyHeader>()..)
        .unwrap_or(&[]);
    Ok(split_records(&h, ctrl)
        .map_err(bad)?
        .iter()
        .map(|r| HeldRecord {
            kind: r.header.kind,
            seq: r.header.seq,
            status: r.header.status,
            payload: r.payload.to_vec(),
        })
        .collect())
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "mapped_tests.rs"]
pub(crate) mod mapped_tests;
