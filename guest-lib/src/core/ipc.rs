// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Interprocess memory and event handles: `cudaIpcGetMemHandle`, `cudaIpcOpenMemHandle`,
//! `cudaIpcCloseMemHandle`, `cudaIpcGetEventHandle`, `cudaIpcOpenEventHandle`.
//!
//! The backend makes the handle (an unguessable token for the allocation) and maps it into
//! another session; so processes sharing memory must reach the same backend process: the
//! programs of one VM, or the clients of one backend serving its sessions in-process (the
//! CPU executor's default). A record of an interprocess event goes out as a call, not
//! batched, so another process waiting on the event sees the work recorded before it.

use crate::client::{self, EventInfo};
use crate::error::{Error, Result};
use crate::ffi::cudaEvent_t;
use crate::mirror::{Kind, Range};
use crate::state;
use std::collections::HashMap;
use std::ffi::c_uint;
use std::sync::{LazyLock, Mutex};
use vcuda_protocol::{HandleReq, HandleResp, IpcHandle, IpcOpenReq, IpcOpenResp, PtrReq, ops};

/// `cudaIpcMemHandle_t` (and the driver's `CUipcMemHandle`): 64 opaque bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cudaIpcMemHandle_t {
    pub reserved: [u8; 64],
}

/// `cudaIpcEventHandle_t` (and the driver's `CUipcEventHandle`): 64 opaque bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cudaIpcEventHandle_t {
    pub reserved: [u8; 64],
}

/// `cudaEventDisableTiming | cudaEventInterprocess`.
pub const EVENT_IPC_FLAGS: u32 = 0x2 | 0x4;

/// `cudaIpcMemLazyEnablePeerAccess`.
pub const LAZY_ENABLE_PEER_ACCESS: c_uint = 1;

/// The handle of the allocation holding `ptr`.
pub(crate) fn get_mem_handle(ptr: u64) -> Result<[u8; 64]> {
    let c = client::client()?;
    c.check_sticky()?;
    if !c.mirror.is_device(ptr) {
        return Err(Error::INVALID_VALUE);
    }
    let h: IpcHandle = c.call::<ops::IpcGetMemHandle>(&PtrReq { ptr })?;
    Ok(h.bytes)
}

/// Opens `handle` in this process: the device address of the shared allocation.
pub(crate) fn open_mem_handle(handle: &[u8; 64], flags: c_uint) -> Result<u64> {
    let c = client::client()?;
    c.check_sticky()?;
    // cudaIpcMemLazyEnablePeerAccess is the one flag (one device: nothing to enable);
    // NVIDIA's runtime ignores the others (flags 7 opened a handle on an H100, CUDA 13.0).
    let flags = flags & LAZY_ENABLE_PEER_ACCESS;
    let device = c.check_device(state::device())?;
    let mut opens = opens();
    let r: IpcOpenResp = c.call::<ops::IpcOpenMemHandle>(&IpcOpenReq {
        handle: *handle,
        flags,
        reserved: 0,
    })?;
    // The mirror only tells copies which side is the device (the backend checks every
    // access); a length the address space cannot hold is cut to what it can.
    let len = r.len.min(u64::MAX - r.ptr).max(1);
    c.mirror.insert(Range {
        base: r.ptr,
        len,
        kind: Kind::Device,
        device: device as i32,
    });
    *opens.entry(r.ptr).or_default() += 1;
    Ok(r.ptr)
}

/// Closes one open of the shared allocation at `ptr`; the last one forgets its range.
pub(crate) fn close_mem_handle(ptr: u64) -> Result<()> {
    let c = client::client()?;
    c.check_sticky()?;
    let mut opens = opens();
    c.call::<ops::IpcCloseMemHandle>(&PtrReq { ptr })?;
    if let Some(n) = opens.get_mut(&ptr) {
        *n -= 1;
        if *n == 0 {
            opens.remove(&ptr);
            c.mirror.remove(ptr, |k| k == Kind::Device);
        }
    }
    Ok(())
}

/// Opens of each shared allocation in this process (the backend counts them too; this
/// tells the last close, which removes the range from the mirror). Held across an open's or
/// close's call and mirror update, so the two stay in step.
pub(crate) static OPENS: LazyLock<Mutex<HashMap<u64, u32>>> = LazyLock::new(Default::default);

pub(crate) fn opens() -> std::sync::MutexGuard<'static, HashMap<u64, u32>> {
    OPENS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether `ptr` is an open shared allocation (`cudaFree` refuses it).
pub(crate) fn is_open(ptr: u64) -> bool {
    opens().contains_key(&ptr)
}

/// After a device reset: nothing is open any more.
pub(crate) fn on_reset() {
    opens().clear();
}

/// The handle of `event` (created with `cudaEventInterprocess`).
pub(crate) fn get_event_handle(event: cudaEvent_t) -> Result<[u8; 64]> {
    let c = client::client()?;
    c.check_sticky()?;
    let handle = crate::core::handle::event_handle(c, event)?;
    let h: IpcHandle = c.call::<ops::IpcGetEventHandle>(&HandleReq { handle })?;
    Ok(h.bytes)
}

/// Opens the event another process exported as `handle`: an event of this process.
pub(crate) fn open_event_handle(handle: &[u8; 64]) -> Result<cudaEvent_t> {
    let c = client::client()?;
    c.check_sticky()?;
    let device = c.check_device(state::device())?;
    let r: HandleResp = c.call::<ops::IpcOpenEventHandle>(&IpcOpenReq {
        handle: *handle,
        flags: 0,
        reserved: 0,
    })?;
    c.events.lock().unwrap_or_else(|e| e.into_inner()).insert(
        r.handle,
        EventInfo {
            device: device as i32,
            flags: EVENT_IPC_FLAGS,
        },
    );
    Ok(r.handle as cudaEvent_t)
}
