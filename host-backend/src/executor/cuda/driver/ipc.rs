// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Interprocess memory and event handles (`cuIpc*`).

use std::ffi::c_uint;

use cudarc::driver::sys::{self, CUdeviceptr, CUevent, CUresult};

use super::{DrvResult, ok};
use crate::executor::cuda::ffi;

/// An interprocess handle for the allocation at `ptr` of the current context.
pub fn ipc_get_mem_handle(ptr: CUdeviceptr) -> DrvResult<[u8; 64]> {
    let mut h = sys::CUipcMemHandle_st { reserved: [0; 64] };
    // SAFETY: valid out pointer; the driver checks `ptr`.
    ok(unsafe { ffi::cuIpcGetMemHandle(&mut h, ptr) })?;
    Ok(h.reserved.map(|b| b as u8))
}

/// Maps the allocation another process exported as `handle` into the current context:
/// its address and length.
pub fn ipc_open_mem_handle(handle: &[u8; 64], flags: c_uint) -> DrvResult<(CUdeviceptr, u64)> {
    let h = sys::CUipcMemHandle_st {
        reserved: handle.map(|b| b as core::ffi::c_char),
    };
    let mut p = 0;
    // SAFETY: valid out pointer; the driver checks the handle's bytes.
    ok(unsafe { ffi::cuIpcOpenMemHandle_v2(&mut p, h, flags) })?;
    let (mut base, mut len) = (0, 0usize);
    // SAFETY: valid out pointers; `p` was just mapped in the current context.
    let r = ok(unsafe { ffi::cuMemGetAddressRange_v2(&mut base, &mut len, p) });
    // The mapping starts where the driver said (else it is not what we think it is).
    let r = r.and_then(|()| {
        (base == p)
            .then_some(())
            .ok_or(CUresult::CUDA_ERROR_UNKNOWN)
    });
    if let Err(e) = r {
        // SAFETY: `p` was mapped just above and is given to nobody.
        let _ = unsafe { ffi::cuIpcCloseMemHandle(p) };
        return Err(e);
    }
    Ok((p, len as u64))
}

/// Unmaps what [`ipc_open_mem_handle`] mapped (one open).
///
/// # Safety
///
/// `ptr` came from `ipc_open_mem_handle` in the current context and no work still uses it.
pub unsafe fn ipc_close_mem_handle(ptr: CUdeviceptr) -> DrvResult<()> {
    // SAFETY: the caller's guarantee.
    ok(unsafe { ffi::cuIpcCloseMemHandle(ptr) })
}

/// An interprocess handle for `event` (created with `CU_EVENT_INTERPROCESS`).
pub fn ipc_get_event_handle(event: CUevent) -> DrvResult<[u8; 64]> {
    let mut h = sys::CUipcEventHandle_st { reserved: [0; 64] };
    // SAFETY: valid out pointer; `event` is a live event of the current context.
    ok(unsafe { ffi::cuIpcGetEventHandle(&mut h, event) })?;
    Ok(h.reserved.map(|b| b as u8))
}

/// Opens the event another process exported as `handle` in the current context.
pub fn ipc_open_event_handle(handle: &[u8; 64]) -> DrvResult<CUevent> {
    let h = sys::CUipcEventHandle_st {
        reserved: handle.map(|b| b as core::ffi::c_char),
    };
    let mut e = std::ptr::null_mut();
    // SAFETY: valid out pointer; the driver checks the handle's bytes.
    ok(unsafe { ffi::cuIpcOpenEventHandle(&mut e, h) })?;
    Ok(e)
}
