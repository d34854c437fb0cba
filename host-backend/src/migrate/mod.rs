// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Live migration: saving every session of a VM with its device state, and loading it into
//! a fresh backend, so that a guest moves to another host with its CUDA work.
//!
//! What moves is what the guest built through its calls: device memory (every allocation,
//! with its contents, at the same device address), modules and function handles, module
//! variables, streams, events, graphs, cuBLAS handles and cuRAND generators, limits, the
//! sticky error and unsent `printf` output. Handles and device addresses the guest holds
//! stay valid: the loading executor re-creates each object under the handle and at the
//! address the guest knows.
//!
//! A session is saved when it is quiet (no call of it runs: the transport stops taking its
//! messages first). What cannot move yet makes the save fail with
//! [`MigrateError::Unsupported`], naming it: CUDA arrays and textures, the VMM API's
//! objects, IPC handles, host memory shared with or mapped for the device, and sessions of
//! the CUDA executor (which needs device allocations re-created at fixed addresses through
//! the driver's virtual memory calls).
//!
//! The saved bytes ([`mod@format`]) are hostile input to the loader, like a guest's messages:
//! every length is bounded, every allocation is charged to the session's limit, and every
//! address and handle is checked for overlap and duplicates before use. A state that fails a
//! check loads nothing.

pub mod format;
pub mod state;

use thiserror::Error;

/// Why a save or a load failed.
#[derive(Debug, Error)]
pub enum MigrateError {
    /// The session holds something that cannot be migrated yet.
    #[error("cannot migrate {0}: not supported yet")]
    Unsupported(String),
    /// The state is not a container this backend reads.
    #[error("malformed device state: {0}")]
    Format(&'static str),
    /// The container's version (the first) is not this backend's (the second).
    #[error("device state of format version {0}, this backend reads version {1}")]
    Version(u32, u32),
    /// The body does not decode.
    #[error("malformed device state: {0}")]
    Decode(String),
    /// Encoding failed.
    #[error("cannot encode device state: {0}")]
    Encode(String),
    /// The state decodes but does not describe a consistent session.
    #[error("inconsistent device state: {0}")]
    Invalid(String),
    /// Loading needs more than the new session may have.
    #[error("device state does not fit: {0}")]
    NoRoom(String),
}

impl MigrateError {
    /// An [`MigrateError::Invalid`] with this message.
    pub fn invalid(what: impl std::fmt::Display) -> Self {
        Self::Invalid(what.to_string())
    }
}

/// Compresses device memory for the state.
pub fn compress(bytes: &[u8]) -> Vec<u8> {
    lz4_flex::block::compress(bytes)
}

/// Decompresses `data` into `dst`, which it must fill exactly.
pub fn decompress_into(data: &[u8], dst: &mut [u8]) -> Result<(), MigrateError> {
    match lz4_flex::block::decompress_into(data, dst) {
        Ok(n) if n == dst.len() => Ok(()),
        Ok(_) => Err(MigrateError::invalid(
            "device memory shorter than its allocation",
        )),
        Err(e) => Err(MigrateError::invalid(format_args!("device memory: {e}"))),
    }
}
