// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Saving a session and loading it into another backend (live migration,
//! [`crate::migrate`]).

use std::collections::HashMap;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use vcuda_protocol::status;

use super::{Backend, Session};
use crate::executor::{Cancel, MAX_STDOUT_BUFFER, ModuleImage, Status, Tenant};
use crate::migrate::MigrateError;
use crate::migrate::state::{Image, SessionState};

impl Session {
    /// Everything the session built, for [`Backend::load_session`] in another backend.
    /// Call it only while none of the session's calls runs. Fails, naming it, if the
    /// session holds something that cannot move yet (memory the guest shares with the
    /// host, among others: see [`crate::migrate`]); the session is unchanged then.
    pub fn save_state(&mut self) -> Result<SessionState, MigrateError> {
        if !self.shared.is_empty() || !self.mapped.is_empty() {
            return Err(MigrateError::Unsupported(
                "host memory the guest shares with the device (page-locked, mapped or managed memory)"
                    .into(),
            ));
        }
        let (exec, images) = self.exec.save_state()?;
        self.collect_stdout();
        Ok(SessionState {
            executor: self.backend.kind() as u32,
            hello: self.hello,
            sticky: self.sticky.map(Status::code),
            stdout: self.stdout.clone(),
            images: images
                .iter()
                .map(|i| Image {
                    hash: i.hash,
                    bytes: i.bytes.clone(),
                })
                .collect(),
            graphs: self.graphs.save_state(),
            exec,
        })
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
        let mut session = self
            .new_session_with(cancel, tenant)
            .map_err(|s| MigrateError::NoRoom(format!("no session: {s}")))?;
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
        Ok(session)
    }
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
