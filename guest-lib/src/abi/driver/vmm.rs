// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The virtual memory management API: `cuMemCreate`, `cuMemRelease`,
//! `cuMemAddressReserve`, `cuMemAddressFree`, `cuMemMap`, `cuMemUnmap`, `cuMemSetAccess`,
//! `cuMemGetAccess`, `cuMemGetAllocationGranularity`,
//! `cuMemGetAllocationPropertiesFromHandle` and `cuMemRetainAllocationHandle`.
//!
//! The backend holds the physical allocations, reservations and mappings of the session
//! (and checks every range against them); the library keeps what the queries answer: each
//! handle's properties and references (`cuMemRetainAllocationHandle` adds one, the backend
//! releases the allocation when the last goes), and each mapping's handle and access.
//! Memory made accessible is device memory in the library's mirror, so runtime copies and
//! `cudaPointerGetAttributes` know it. Only pinned device memory without shareable handle
//! types is made; a mapping covers a whole physical allocation; shareable handles
//! (`cuMemExportToShareableHandle`), multicast and `cuMemMapArrayAsync` are not supported.

use std::collections::{BTreeMap, HashMap};
use std::ffi::{c_int, c_ulonglong, c_void};
use std::sync::Mutex;

use vcuda_protocol::{
    HandleReq, HandleResp, PtrResp, VmmAccessReq, VmmCreateReq, VmmMapReq, VmmRangeReq,
    VmmReserveReq, ops,
};

use super::out;
use crate::client::Client;
use crate::core::module::session;
use crate::error::CuError;
use crate::ffi::CUdeviceptr;
use crate::mirror::{Kind, Range};

/// `CUmemLocation`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CUmemLocation {
    /// `CUmemLocationType` (1: a device).
    pub type_: c_int,
    /// The device's ordinal.
    pub id: c_int,
}

/// `CUmemAllocationProp`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUmemAllocationProp {
    /// `CUmemAllocationType` (1: pinned).
    pub type_: c_int,
    /// `CUmemAllocationHandleType` bits (0: none).
    pub requested_handle_types: c_int,
    /// Where the memory lives.
    pub location: CUmemLocation,
    /// Windows only.
    pub win32_handle_meta_data: *mut c_void,
    /// `allocFlags`: compression type, GPUDirect RDMA capability, usage, reserved.
    pub alloc_flags: [u8; 8],
}
const _: () = assert!(size_of::<CUmemAllocationProp>() == 32);

/// `CUmemAccessDesc`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUmemAccessDesc {
    /// Which device.
    pub location: CUmemLocation,
    /// `CUmemAccess_flags`: 0 none, 1 read, 3 read-write.
    pub flags: c_int,
}

/// Allocation granularity (minimum and recommended), as the backend's executors use it.
const GRANULARITY: usize = 2 << 20;
/// `CU_MEM_ALLOCATION_TYPE_PINNED`.
const PINNED: c_int = 1;
/// `CU_MEM_LOCATION_TYPE_DEVICE`.
const DEVICE: c_int = 1;

#[derive(Debug)]
struct Handle {
    device: c_int,
    /// The program's references: the creation and each retain (each `cuMemRelease` takes
    /// one back).
    refs: u32,
    /// Its mappings, which keep it too.
    maps: u32,
}

#[derive(Debug, Clone, Copy)]
struct Map {
    len: u64,
    handle: u64,
    access: c_int,
}

#[derive(Debug, Default)]
struct State {
    handles: HashMap<u64, Handle>,
    maps: BTreeMap<u64, Map>,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

fn with<R>(f: impl FnOnce(&mut State) -> R) -> R {
    f(STATE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(State::default))
}

/// Checks a pinned device allocation's properties: its device.
fn check_prop(c: &Client, prop: *const CUmemAllocationProp) -> Result<c_int, CuError> {
    // SAFETY: the caller's properties (the API's contract), checked for null.
    let p = unsafe { prop.as_ref() }.ok_or(CuError::INVALID_VALUE)?;
    if p.type_ != PINNED || p.location.type_ != DEVICE {
        return Err(CuError::INVALID_VALUE);
    }
    if p.location.id < 0 || p.location.id >= c.device_count() {
        return Err(CuError::INVALID_DEVICE);
    }
    if p.requested_handle_types != 0 {
        // POSIX descriptors, fabric handles: not exported here.
        return Err(CuError::NOT_SUPPORTED);
    }
    Ok(p.location.id)
}

/// Drops a program reference to `handle` (`program`) or a mapping's; the last of both
/// releases it in the backend.
fn unref(c: &Client, handle: u64, program: bool) -> Result<(), CuError> {
    let last = with(|s| {
        let h = s.handles.get_mut(&handle).ok_or(CuError::INVALID_VALUE)?;
        let n = if program { &mut h.refs } else { &mut h.maps };
        *n = n.checked_sub(1).ok_or(CuError::INVALID_VALUE)?;
        let last = h.refs == 0 && h.maps == 0;
        if last {
            s.handles.remove(&handle);
        }
        Ok::<bool, CuError>(last)
    })?;
    if last {
        c.call::<ops::VmmRelease>(&HandleReq { handle })?;
    }
    Ok(())
}

entry_lib! {
    fn cuMemGetAllocationGranularity(g: *mut usize, prop: *const CUmemAllocationProp, _option: c_int) -> Result<(), CuError> {
        let c = session()?;
        check_prop(c, prop)?;
        // SAFETY: the caller's output pointer.
        unsafe { out(g, GRANULARITY) }
    }

    fn cuMemCreate(handle: *mut u64, size: usize, prop: *const CUmemAllocationProp, flags: c_ulonglong) -> Result<(), CuError> {
        let c = session()?;
        let device = check_prop(c, prop)?;
        if flags != 0 || size == 0 || !size.is_multiple_of(GRANULARITY) || handle.is_null() {
            return Err(CuError::INVALID_VALUE);
        }
        let r: HandleResp = c.call::<ops::VmmCreate>(&VmmCreateReq {
            size: size as u64,
            device: device as u32,
            reserved: 0,
        })?;
        with(|s| s.handles.insert(r.handle, Handle { device, refs: 1, maps: 0 }));
        // SAFETY: the caller's output pointer (non-null).
        unsafe { out(handle, r.handle) }
    }

    fn cuMemRelease(handle: u64) -> Result<(), CuError> {
        let c = session()?;
        unref(c, handle, true)
    }

    fn cuMemRetainAllocationHandle(handle: *mut u64, addr: *mut c_void) -> Result<(), CuError> {
        session()?;
        let addr = addr as u64;
        let h = with(|s| {
            let (_, m) = s.maps.range(..=addr).next_back().filter(|(b, m)| addr - **b < m.len)?;
            let h = s.handles.get_mut(&m.handle)?;
            h.refs += 1;
            Some(m.handle)
        })
        .ok_or(CuError::INVALID_VALUE)?;
        // SAFETY: the caller's output pointer.
        unsafe { out(handle, h) }
    }

    fn cuMemGetAllocationPropertiesFromHandle(prop: *mut CUmemAllocationProp, handle: u64) -> Result<(), CuError> {
        session()?;
        let device = with(|s| s.handles.get(&handle).map(|h| h.device)).ok_or(CuError::INVALID_VALUE)?;
        let p = CUmemAllocationProp {
            type_: PINNED,
            requested_handle_types: 0,
            location: CUmemLocation { type_: DEVICE, id: device },
            win32_handle_meta_data: std::ptr::null_mut(),
            alloc_flags: [0; 8],
        };
        // SAFETY: the caller's output pointer.
        unsafe { out(prop, p) }
    }

    fn cuMemAddressReserve(ptr: *mut CUdeviceptr, size: usize, alignment: usize, addr: CUdeviceptr, flags: c_ulonglong) -> Result<(), CuError> {
        let c = session()?;
        if flags != 0 || size == 0 || !size.is_multiple_of(GRANULARITY) || ptr.is_null() {
            return Err(CuError::INVALID_VALUE);
        }
        let r: PtrResp = c.call::<ops::VmmReserve>(&VmmReserveReq {
            size: size as u64,
            alignment: alignment as u64,
            addr,
        })?;
        // SAFETY: the caller's output pointer (non-null).
        unsafe { out(ptr, r.ptr) }
    }

    fn cuMemAddressFree(ptr: CUdeviceptr, size: usize) -> Result<(), CuError> {
        let c = session()?;
        c.call::<ops::VmmFree>(&VmmRangeReq { ptr, size: size as u64 })?;
        Ok(())
    }

    fn cuMemMap(ptr: CUdeviceptr, size: usize, offset: usize, handle: u64, flags: c_ulonglong) -> Result<(), CuError> {
        let c = session()?;
        if flags != 0 {
            return Err(CuError::INVALID_VALUE);
        }
        // A handle the program still holds (released ones cannot be mapped again).
        with(|s| s.handles.get(&handle).is_some_and(|h| h.refs > 0))
            .then_some(())
            .ok_or(CuError::INVALID_VALUE)?;
        c.call::<ops::VmmMap>(&VmmMapReq {
            ptr,
            size: size as u64,
            offset: offset as u64,
            handle,
        })?;
        with(|s| {
            // A mapping holds its allocation, as in CUDA (released only once unmapped).
            if let Some(h) = s.handles.get_mut(&handle) {
                h.maps += 1;
            }
            s.maps.insert(ptr, Map { len: size as u64, handle, access: 0 })
        });
        Ok(())
    }

    fn cuMemUnmap(ptr: CUdeviceptr, size: usize) -> Result<(), CuError> {
        let c = session()?;
        let size = size as u64;
        // The backend checks that whole mappings cover the range.
        c.call::<ops::VmmUnmap>(&VmmRangeReq { ptr, size })?;
        c.mirror.remove_within(ptr, ptr + size, |k| k == Kind::Device);
        let gone: Vec<Map> = with(|s| {
            let keys: Vec<u64> = s.maps.range(ptr..ptr + size).map(|(&b, _)| b).collect();
            keys.iter().filter_map(|b| s.maps.remove(b)).collect()
        });
        // Every mapping's reference goes, whatever happens to one of them.
        let mut r = Ok(());
        for m in gone {
            if let Err(e) = unref(c, m.handle, false) {
                r = Err(e);
            }
        }
        r
    }

    fn cuMemSetAccess(ptr: CUdeviceptr, size: usize, desc: *const CUmemAccessDesc, count: usize) -> Result<(), CuError> {
        let c = session()?;
        if desc.is_null() || count == 0 {
            return Err(CuError::INVALID_VALUE);
        }
        // SAFETY: `count` descriptors at `desc` (the API's contract).
        let descs = unsafe { std::slice::from_raw_parts(desc, count) };
        let size = size as u64;
        for d in descs {
            if d.location.type_ != DEVICE || !matches!(d.flags, 0 | 1 | 3) {
                return Err(CuError::INVALID_VALUE);
            }
            // The backend checks that whole mappings cover the range.
            c.call::<ops::VmmSetAccess>(&VmmAccessReq {
                ptr,
                size,
                device: u32::try_from(d.location.id).map_err(|_| CuError::INVALID_DEVICE)?,
                flags: d.flags as u32,
            })?;
            with(|s| {
                for (_, m) in s.maps.range_mut(ptr..ptr + size) {
                    m.access = d.flags;
                }
            });
            if d.flags != 0 {
                c.mirror.insert_joining(Range { base: ptr, len: size, kind: Kind::Device, device: d.location.id });
            } else {
                c.mirror.remove_within(ptr, ptr + size, |k| k == Kind::Device);
            }
        }
        Ok(())
    }

    fn cuMemGetAccess(flags: *mut c_ulonglong, location: *const CUmemLocation, ptr: CUdeviceptr) -> Result<(), CuError> {
        session()?;
        // SAFETY: the caller's location, checked for null.
        let loc = unsafe { location.as_ref() }.ok_or(CuError::INVALID_VALUE)?;
        if loc.type_ != DEVICE {
            return Err(CuError::INVALID_VALUE);
        }
        let access = with(|s| {
            s.maps
                .range(..=ptr)
                .next_back()
                .filter(|(b, m)| ptr - **b < m.len)
                .map(|(_, m)| m.access)
        })
        .ok_or(CuError::INVALID_VALUE)?;
        // SAFETY: the caller's output pointer.
        unsafe { out(flags, access as c_ulonglong) }
    }
}
