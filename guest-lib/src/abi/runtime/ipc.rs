// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Interprocess memory and event handles: `cudaIpcGetMemHandle`, `cudaIpcOpenMemHandle`,
//! `cudaIpcCloseMemHandle`, `cudaIpcGetEventHandle`, `cudaIpcOpenEventHandle`.
//!
//! The backend makes the handle (an unguessable token for the allocation) and maps it into
//! another session; so processes sharing memory must reach the same backend process: the
//! programs of one VM, or the clients of one backend serving its sessions in-process (the
//! CPU executor's default). A record of an interprocess event goes out as a call, not
//! batched, so another process waiting on the event sees the work recorded before it.

use crate::core::ipc::*;
use crate::error::Error;
use crate::ffi::cudaEvent_t;
use crate::ffi::write_out;
use std::ffi::{c_uint, c_void};

entry! {
    fn cudaIpcGetEventHandle(handle: *mut cudaIpcEventHandle_t, event: cudaEvent_t) {
        if handle.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        let bytes = get_event_handle(event)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(handle, cudaIpcEventHandle_t { reserved: bytes }) }
    }

    fn cudaIpcOpenEventHandle(event: *mut cudaEvent_t, handle: cudaIpcEventHandle_t) {
        if event.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        let e = open_event_handle(&handle.reserved)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(event, e) }
    }

    fn cudaIpcGetMemHandle(handle: *mut cudaIpcMemHandle_t, dev_ptr: *mut c_void) {
        if handle.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        let bytes = get_mem_handle(dev_ptr as u64)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(handle, cudaIpcMemHandle_t { reserved: bytes }) }
    }

    fn cudaIpcOpenMemHandle(dev_ptr: *mut *mut c_void, handle: cudaIpcMemHandle_t, flags: c_uint) {
        if dev_ptr.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        let p = open_mem_handle(&handle.reserved, flags)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(dev_ptr, p as *mut c_void) }
    }

    fn cudaIpcCloseMemHandle(dev_ptr: *mut c_void) {
        close_mem_handle(dev_ptr as u64)
    }
}
