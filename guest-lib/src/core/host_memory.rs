// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Page-locked host memory: `cudaHostAlloc`/`cudaMallocHost`, `cudaFreeHost`,
//! `cudaHostRegister`/`Unregister` and their queries (the driver's `cuMemHostAlloc`, ...).
//!
//! Page-locked memory neither shared with the backend nor kept coherent is an anonymous
//! mapping this module makes and unmaps (its `unsafe`: the system calls).

use super::memory::*;
use crate::client::{self, Client};
use crate::error::{Error, Result};
use crate::mirror::{Kind, Range};
use crate::shared::{self};
use crate::{coherent, state};
use std::ffi::c_void;
use vcuda_protocol::{DeviceReq, ops};

/// `cudaHostAlloc` (`has_out`: whether the caller gave somewhere to put the address): the
/// address, null for 0 bytes.
pub(crate) fn host_alloc(c: &Client, has_out: bool, size: usize, flags: u32) -> Result<u64> {
    if !has_out || flags & !HOST_ALLOC_FLAGS != 0 {
        return Err(Error::INVALID_VALUE);
    }
    // Page-locked memory is mapped for kernels where the session can (see `shared::maps`).
    // Elsewhere `cudaHostAllocMapped` memory is kept coherent by the library, as managed
    // memory is (see `crate::coherent`), and the rest is plain page-locked memory.
    let coherent = || -> Result<*mut c_void> {
        let device = c.check_device(state::device())?;
        let p = coherent::alloc(c, device, size as u64)? as *mut c_void;
        c.mirror.insert(Range {
            base: p as u64,
            len: size as u64,
            kind: Kind::HostAlloc(flags),
            device: device as i32,
        });
        Ok(p)
    };
    // Page-locked memory the backend could not map for kernels (a GPU backend finds the
    // program's address taken in its own process, say) still serves copies; memory asked
    // for as mapped is then kept coherent instead.
    let shared = if size == 0 || flags & MAPPED != 0 && !shared::maps(c) {
        None
    } else {
        shared::alloc(c, size).and_then(|p| {
            if flags & MAPPED != 0 && !shared::is_mapped(p) {
                shared::free(c, p);
                None
            } else {
                Some(p)
            }
        })
    };
    let p = if size == 0 {
        std::ptr::null_mut()
    } else if let Some(p) = shared {
        c.mirror.insert(Range {
            base: p as u64,
            len: size as u64,
            kind: Kind::HostAlloc(flags),
            device: state::device(),
        });
        p
    } else if flags & MAPPED != 0 {
        coherent()?
    } else {
        // SAFETY: an anonymous private mapping at an address the kernel chooses.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::MEMORY_ALLOCATION);
        }
        c.mirror.insert(Range {
            base: p as u64,
            len: size as u64,
            kind: Kind::HostAlloc(flags),
            device: state::device(),
        });
        p
    };
    Ok(p as u64)
}

pub(crate) fn host_free(c: &Client, p: *mut c_void) -> Result<()> {
    if p.is_null() {
        return Ok(());
    }
    if coherent::owns(p as u64) {
        let r = c
            .mirror
            .find(p as u64)
            .filter(|r| r.base == p as u64 && matches!(r.kind, Kind::HostAlloc(_)))
            .ok_or(Error::INVALID_VALUE)?;
        // As `cudaFreeHost` does, after the device's work (which may use it).
        c.call::<ops::DeviceSynchronize>(&DeviceReq {
            device: c.check_device(r.device)?,
            reserved: 0,
        })?;
        c.mirror
            .remove(p as u64, |k| matches!(k, Kind::HostAlloc(_)));
        coherent::free(c, p as u64)?;
        return Ok(());
    }
    let r = c
        .mirror
        .remove(p as u64, |k| matches!(k, Kind::HostAlloc(_)))
        .ok_or(Error::INVALID_VALUE)?;
    if shared::free(c, p) {
        return Ok(());
    }
    // SAFETY: `r` is a mapping host_alloc made with this base and length; it is removed from
    // the mirror, so it is unmapped once.
    unsafe { libc::munmap(p, r.len as usize) };
    Ok(())
}

/// `cudaFreeHost`.
pub(crate) fn free_host(ptr: *mut c_void) -> Result<()> {
    host_free(client::client()?, ptr)
}

/// `cudaHostAlloc` (see [`host_alloc`]).
pub(crate) fn host_alloc_call(has_out: bool, size: usize, flags: u32) -> Result<u64> {
    host_alloc(client::client()?, has_out, size, flags)
}

/// `cudaHostGetDevicePointer` (`has_out`: whether the caller gave somewhere to put it).
pub(crate) fn host_get_device_pointer(has_out: bool, host: *mut c_void, flags: u32) -> Result<u64> {
    let c = client::client()?;
    if !has_out || flags != 0 || c.mirror.find(host as u64).is_none() {
        return Err(Error::INVALID_VALUE);
    }
    // With unified addressing the device pointer is the host pointer. Memory kernels
    // cannot reach (no mapping on this transport, or registered memory the library
    // could not share) fails as where CUDA did not map it for the device.
    shared::device_pointer(host as u64).ok_or(Error::MEMORY_ALLOCATION)
}

/// `cudaHostGetFlags`.
pub(crate) fn host_get_flags(host: *mut c_void) -> Result<u32> {
    let c = client::client()?;
    // As NVIDIA's runtime answers (CUDA 13.0, measured): cudaHostAlloc's flags as given,
    // cudaHostRegister's Portable flag alone (not ReadOnly, IoMemory), plus Mapped for
    // memory kernels can reach, which with unified addressing is all page-locked memory
    // on a GPU; here, what the executor maps.
    let mapped = || shared::device_pointer(host as u64).map_or(0, |_| MAPPED);
    let f = match c.mirror.find(host as u64).map(|r| r.kind) {
        Some(Kind::HostAlloc(f)) => f | mapped(),
        Some(Kind::HostRegistered(f)) => (f & PORTABLE) | mapped(),
        _ => return Err(Error::INVALID_VALUE),
    };
    Ok(f)
}

/// `cudaHostRegister`.
pub(crate) fn host_register(ptr: *mut c_void, size: usize, flags: u32) -> Result<()> {
    let c = client::client()?;
    if ptr.is_null() || size == 0 || flags & !HOST_REGISTER_FLAGS != 0 {
        return Err(Error::INVALID_VALUE);
    }
    if c.mirror.find(ptr as u64).is_some() {
        return Err(Error(
            vcuda_protocol::status::HOST_MEMORY_ALREADY_REGISTERED,
        ));
    }
    if flags & MAPPED != 0 {
        // Kernels reach it in place: its pages move onto memory shared with the backend.
        shared::register_mapped(c, ptr as u64, size as u64)?;
    }
    c.mirror.insert(Range {
        base: ptr as u64,
        len: size as u64,
        kind: Kind::HostRegistered(flags),
        device: state::device(),
    });
    Ok(())
}

/// `cudaHostUnregister`.
pub(crate) fn host_unregister(ptr: *mut c_void) -> Result<()> {
    let c = client::client()?;
    let r = c
        .mirror
        .remove(ptr as u64, |k| matches!(k, Kind::HostRegistered(_)))
        .ok_or(Error(vcuda_protocol::status::HOST_MEMORY_NOT_REGISTERED))?;
    if matches!(r.kind, Kind::HostRegistered(f) if f & MAPPED != 0) {
        shared::unregister_mapped(c, r.base, r.len);
    }
    Ok(())
}
