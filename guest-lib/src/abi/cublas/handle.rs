// SPDX-License-Identifier: Apache-2.0 OR MIT
//! cuBLAS handles as the guest keeps them: each handle's stream, pointer mode, math mode and
//! atomics mode, which travel with every call instead of costing a round trip to set.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::Mutex;

use crate::error::BlasError;

/// `cublasHandle_t`.
pub(super) type H = *mut c_void;

/// What the guest keeps of a handle.
#[derive(Clone, Copy, Debug)]
pub(super) struct HandleState {
    pub(super) stream: usize,
    pub(super) pointer_mode: c_int,
    pub(super) math_mode: c_int,
    pub(super) atomics: c_int,
}

static HANDLES: Mutex<Option<HashMap<u64, HandleState>>> = Mutex::new(None);

/// Runs `f` on the table of live handles.
pub(super) fn with_handles<R>(f: impl FnOnce(&mut HashMap<u64, HandleState>) -> R) -> R {
    let mut g = HANDLES.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(HashMap::new))
}

/// A live handle's state (`CUBLAS_STATUS_NOT_INITIALIZED` for an unknown handle).
pub(super) fn handle_state(h: H) -> Result<HandleState, BlasError> {
    with_handles(|m| m.get(&(h as u64)).copied()).ok_or(BlasError::NOT_INITIALIZED)
}

/// Changes a live handle's state (`CUBLAS_STATUS_NOT_INITIALIZED` for an unknown handle).
pub(super) fn update(h: H, f: impl FnOnce(&mut HandleState)) -> Result<(), BlasError> {
    with_handles(|m| match m.get_mut(&(h as u64)) {
        Some(s) => {
            f(s);
            Ok(())
        }
        None => Err(BlasError::NOT_INITIALIZED),
    })
}
