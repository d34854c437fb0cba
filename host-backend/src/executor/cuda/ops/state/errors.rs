// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The errors a CUDA session's save and load answer with, shared by the state's modules.

use crate::executor::Status;
use crate::migrate::MigrateError;

/// A call of the session's, or the driver's, that failed while saving or loading.
pub(super) fn failed(what: &str, st: Status) -> MigrateError {
    MigrateError::invalid(format_args!("{what}: {st}"))
}

/// Why making an object of a loaded state failed: no room for it, a request the call would
/// refuse (a damaged state), or the driver's error.
pub(super) fn not_made(what: &str, handle: u64, st: Status) -> MigrateError {
    match st {
        Status::MEMORY_ALLOCATION => {
            MigrateError::NoRoom(format!("device memory for the {what} {handle:#x}"))
        }
        Status::INVALID_VALUE | Status::NOT_SUPPORTED => {
            MigrateError::invalid(format_args!("{what} {handle:#x}"))
        }
        st => failed(what, st),
    }
}
