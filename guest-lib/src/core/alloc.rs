// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Plain allocations: device memory and managed memory as the backend and the mirror of
//! the process's ranges know them, with none of the checks `cudaFree` makes for memory that
//! pools, graphs, IPC or managed variables own. The families above (memory pools, graph
//! memory, arrays' scratch buffers, modules' `__managed__` variables) allocate here.

use crate::client::{self, Client};
use crate::error::{Error, Result};
use crate::mirror::{Kind, Range};
use crate::{shared, state};
use std::ffi::c_void;
use vcuda_protocol::{MallocReq, PtrReq, PtrResp, ops};

pub(crate) fn malloc(c: &Client, size: usize) -> Result<u64> {
    c.check_sticky()?;
    let device = c.check_device(state::device())?;
    let r: PtrResp = c.call::<ops::Malloc>(&MallocReq {
        device,
        flags: 0,
        size: size as u64,
    })?;
    if r.ptr != 0 {
        c.mirror.insert(Range {
            base: r.ptr,
            len: size as u64,
            kind: Kind::Device,
            device: device as i32,
        });
    }
    Ok(r.ptr)
}

/// A device allocation of `size` bytes (for the memory pools, graph memory and scratch
/// buffers).
pub(crate) fn malloc_device(c: &Client, size: usize) -> Result<u64> {
    malloc(c, size)
}

/// Frees a device allocation now: one [`malloc_device`] made (a pool's block, a scratch
/// buffer), which nothing else owns.
pub(crate) fn free_device(c: &Client, ptr: u64) -> Result<()> {
    c.call::<ops::Free>(&PtrReq { ptr })?;
    c.mirror.remove(ptr, |k| k == Kind::Device);
    Ok(())
}

/// Frees a device allocation once the session's earlier calls have run, without waiting.
pub(crate) fn free_device_posted(c: &Client, ptr: u64) -> Result<()> {
    if crate::core::ipc::is_open(ptr) {
        // Memory opened through an IPC handle is closed, not freed.
        return Err(Error::INVALID_VALUE);
    }
    c.mirror
        .remove(ptr, |k| k == Kind::Device)
        .ok_or(Error::INVALID_VALUE)?;
    c.post::<ops::Free>(&PtrReq { ptr })
}

/// `cudaMemAttachGlobal`.
pub(crate) const ATTACH_GLOBAL: u32 = 0x1;

/// `cudaMemAttachHost`.
pub(crate) const ATTACH_HOST: u32 = 0x2;

/// `cudaMemAttachSingle`.
pub(crate) const ATTACH_SINGLE: u32 = 0x4;

/// Managed memory for a `__managed__` variable of `size` bytes (see
/// `registry::FatbinReg::module`).
pub(crate) fn alloc_for_var(size: usize) -> Result<u64> {
    malloc_managed(true, size.max(1), ATTACH_GLOBAL)
}

/// `cudaMallocManaged` (`has_out`: whether the caller gave somewhere to put the address;
/// refused after the sticky error, as CUDA orders it): the address, null for 0 bytes.
pub(crate) fn malloc_managed(has_out: bool, size: usize, flags: u32) -> Result<u64> {
    let c = client::client()?;
    c.check_sticky()?;
    if !has_out || (flags != ATTACH_GLOBAL && flags != ATTACH_HOST) {
        return Err(Error::INVALID_VALUE);
    }
    if size == 0 {
        // As cudaMalloc of 0 bytes (and NVIDIA's runtime, measured on an H100): success,
        // a null pointer.
        return Ok(0);
    }
    let device = c.check_device(state::device())?;
    let p = if shared::maps_managed(c) {
        shared::alloc_managed(c, size)?
    } else {
        crate::coherent::alloc(c, device, size as u64)? as *mut c_void
    };
    c.mirror.insert(Range {
        base: p as u64,
        len: size as u64,
        kind: Kind::Managed,
        device: device as i32,
    });
    Ok(p as u64)
}
