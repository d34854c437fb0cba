// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Device and page-locked memory, copies and memsets.

use std::ffi::{c_int, c_uint, c_void};

use super::out;
use crate::client;
use crate::core::context::{current, disown, own};
use crate::core::ipc::{self, cudaIpcEventHandle_t, cudaIpcMemHandle_t};
use crate::core::managed as m;
use crate::error::CuError;
use crate::ffi::{cudaEvent_t, cudaStream_t, memcpy_kind};

pub use crate::ffi::CUdeviceptr;

/// `CUmemorytype`.
const MEMORYTYPE_HOST: u32 = 1;
const MEMORYTYPE_DEVICE: u32 = 2;
const MEMORYTYPE_UNIFIED: u32 = 4;

/// `CUDA_MEMCPY2D`.
#[repr(C)]
pub struct CUDA_MEMCPY2D {
    src_x_in_bytes: usize,
    src_y: usize,
    src_memory_type: u32,
    src_host: *const c_void,
    src_device: CUdeviceptr,
    src_array: *mut c_void,
    src_pitch: usize,
    dst_x_in_bytes: usize,
    dst_y: usize,
    dst_memory_type: u32,
    dst_host: *mut c_void,
    dst_device: CUdeviceptr,
    dst_array: *mut c_void,
    dst_pitch: usize,
    width_in_bytes: usize,
    height: usize,
}

fn alloc(dptr: *mut CUdeviceptr, size: usize) -> Result<(), CuError> {
    current()?;
    if size == 0 {
        return Err(CuError::INVALID_VALUE);
    }
    let p = crate::core::memory::malloc_call(true, size).map_err(crate::error::CuError::from)?;
    own(|o| o.allocs.push(p as u64))?;
    // SAFETY: the caller's output pointer.
    unsafe { out(dptr, p as u64) }
}

fn free(dptr: CUdeviceptr) -> Result<(), CuError> {
    current()?;
    crate::core::memory::free_call(dptr as *mut c_void).map_err(crate::error::CuError::from)?;
    disown(|o| o.allocs.retain(|&p| p != dptr));
    Ok(())
}

fn ipc_open(
    dptr: *mut CUdeviceptr,
    handle: cudaIpcMemHandle_t,
    flags: c_uint,
) -> Result<(), CuError> {
    current()?;
    if dptr.is_null() {
        return Err(CuError::INVALID_VALUE);
    }
    let p = ipc::open_mem_handle(&handle.reserved, flags)?;
    // SAFETY: the caller's output pointer (checked for null).
    unsafe { out(dptr, p) }
}

fn host_alloc(pp: *mut *mut c_void, size: usize, flags: c_uint) -> Result<(), CuError> {
    current()?;
    // CU_MEMHOSTALLOC_* and cudaHostAlloc* flags have the same values.
    let p = crate::core::host_memory::host_alloc_call(true, size, flags)
        .map_err(crate::error::CuError::from)? as *mut c_void;
    own(|o| o.host.push(p as usize))?;
    // SAFETY: the caller's output pointer.
    unsafe { out(pp, p) }
}

/// A 1-D copy of `n` bytes in direction `kind`, on `stream` (`None`: synchronous).
fn copy(
    dst: u64,
    src: u64,
    n: usize,
    kind: i32,
    stream: Option<cudaStream_t>,
) -> Result<(), CuError> {
    current()?;
    match stream {
        Some(s) => {
            crate::core::memory::memcpy_async(dst as *mut c_void, src as *const c_void, n, kind, s)
        }
        // The synchronous calls are cudaMemcpy's: on the legacy stream, a copy to the host
        // complete on return, in one round trip (the reply carries the bytes).
        None => crate::core::memory::memcpy_call(dst as *mut c_void, src as *const c_void, n, kind),
    }
    .map_err(crate::error::CuError::from)
}

fn copy_2d(p: *const CUDA_MEMCPY2D, stream: Option<cudaStream_t>) -> Result<(), CuError> {
    current()?;
    // SAFETY: the caller's descriptor, checked for null.
    let p = unsafe { p.as_ref() }.ok_or(CuError::INVALID_VALUE)?;
    if super::texture::is_array_copy(p.src_memory_type, p.dst_memory_type) {
        let ptr = |ty: u32, host: usize, dev: u64| {
            if ty == MEMORYTYPE_HOST {
                host as u64
            } else {
                dev
            }
        };
        return super::texture::copy_2d_array(
            (
                p.src_memory_type,
                ptr(p.src_memory_type, p.src_host as usize, p.src_device),
                p.src_array,
                p.src_x_in_bytes,
                p.src_y,
                p.src_pitch,
            ),
            (
                p.dst_memory_type,
                ptr(p.dst_memory_type, p.dst_host as usize, p.dst_device),
                p.dst_array,
                p.dst_x_in_bytes,
                p.dst_y,
                p.dst_pitch,
            ),
            p.width_in_bytes,
            p.height,
            stream,
        );
    }
    let side = |ty: u32, host: usize, dev: u64, x: usize, y: usize, pitch: usize| {
        let base = match ty {
            MEMORYTYPE_HOST => host as u64,
            MEMORYTYPE_DEVICE | MEMORYTYPE_UNIFIED => dev,
            _ => return Err(CuError::NOT_SUPPORTED),
        };
        y.checked_mul(pitch)
            .and_then(|o| o.checked_add(x))
            .and_then(|o| base.checked_add(o as u64))
            .ok_or(CuError::INVALID_VALUE)
    };
    let src = side(
        p.src_memory_type,
        p.src_host as usize,
        p.src_device,
        p.src_x_in_bytes,
        p.src_y,
        p.src_pitch,
    )?;
    let dst = side(
        p.dst_memory_type,
        p.dst_host as usize,
        p.dst_device,
        p.dst_x_in_bytes,
        p.dst_y,
        p.dst_pitch,
    )?;
    let kind = match (
        p.src_memory_type == MEMORYTYPE_HOST,
        p.dst_memory_type == MEMORYTYPE_HOST,
    ) {
        (true, true) => memcpy_kind::H2H,
        (true, false) => memcpy_kind::H2D,
        (false, true) => memcpy_kind::D2H,
        (false, false) => memcpy_kind::D2D,
    };
    let cp = crate::core::memory::Copy2D {
        dst,
        dpitch: p.dst_pitch as u64,
        src,
        spitch: p.src_pitch as u64,
        width: p.width_in_bytes as u64,
        height: p.height as u64,
    };
    let c = client::client().map_err(CuError::from)?;
    // No stream: cudaMemcpy2D's synchronous copy, one request.
    let sh = match stream {
        Some(s) => Some(crate::core::capture::capture_stream_handle(c, s, false)?),
        None => None,
    };
    Ok(crate::core::memory::memcpy(c, cp, kind, sh)?)
}

/// `cuMemsetD{8,16,32}[2D][Async]`: `height` rows of `width` elements of `elem` bytes.
fn memset(
    dst: CUdeviceptr,
    pitch: usize,
    value: u32,
    elem: u32,
    width: usize,
    height: usize,
    stream: Option<cudaStream_t>,
) -> Result<(), CuError> {
    current()?;
    let c = client::client().map_err(CuError::from)?;
    // An asynchronous memset on a capturing stream becomes a memset node, as the runtime's.
    let sh = match stream {
        Some(s) => Some(crate::core::capture::capture_stream_handle(c, s, false)?),
        None => None,
    };
    let pitch = if height == 1 {
        (width as u64)
            .checked_mul(u64::from(elem))
            .ok_or(CuError::INVALID_VALUE)?
    } else {
        pitch as u64
    };
    crate::core::memory::memset_elems(c, dst, pitch, value, elem, width as u64, height as u64, sh)?;
    Ok(())
}

entry_lib! {
    fn cuStreamAttachMemAsync(s: cudaStream_t, dptr: CUdeviceptr, length: usize, flags: c_uint) -> Result<(), CuError> {
        current()?;
        // CU_MEM_ATTACH_* are the runtime's cudaMemAttach* values.
        Ok(m::attach(s, dptr as *mut c_void, length, flags, false)?)
    }

    fn cuStreamAttachMemAsync_ptsz(s: cudaStream_t, dptr: CUdeviceptr, length: usize, flags: c_uint) -> Result<(), CuError> {
        current()?;
        Ok(m::attach(s, dptr as *mut c_void, length, flags, true)?)
    }

    fn cuMemAlloc_v2(dptr: *mut CUdeviceptr, size: usize) -> Result<(), CuError> {
        alloc(dptr, size)
    }

    fn cuIpcGetMemHandle(handle: *mut cudaIpcMemHandle_t, dptr: CUdeviceptr) -> Result<(), CuError> {
        current()?;
        if handle.is_null() {
            return Err(CuError::INVALID_VALUE);
        }
        let bytes = ipc::get_mem_handle(dptr)?;
        // SAFETY: the caller's output pointer (checked for null).
        unsafe { out(handle, cudaIpcMemHandle_t { reserved: bytes }) }
    }

    fn cuIpcOpenMemHandle(dptr: *mut CUdeviceptr, handle: cudaIpcMemHandle_t, flags: c_uint) -> Result<(), CuError> {
        ipc_open(dptr, handle, flags)
    }

    fn cuIpcOpenMemHandle_v2(dptr: *mut CUdeviceptr, handle: cudaIpcMemHandle_t, flags: c_uint) -> Result<(), CuError> {
        ipc_open(dptr, handle, flags)
    }

    fn cuIpcGetEventHandle(handle: *mut cudaIpcEventHandle_t, event: cudaEvent_t) -> Result<(), CuError> {
        current()?;
        if handle.is_null() {
            return Err(CuError::INVALID_VALUE);
        }
        let bytes = ipc::get_event_handle(event)?;
        // SAFETY: the caller's output pointer (checked for null).
        unsafe { out(handle, cudaIpcEventHandle_t { reserved: bytes }) }
    }

    fn cuIpcOpenEventHandle(event: *mut cudaEvent_t, handle: cudaIpcEventHandle_t) -> Result<(), CuError> {
        current()?;
        if event.is_null() {
            return Err(CuError::INVALID_VALUE);
        }
        let e = ipc::open_event_handle(&handle.reserved)?;
        own(|o| o.events.push(e as usize))?;
        // SAFETY: the caller's output pointer (checked for null).
        unsafe { out(event, e) }
    }

    fn cuIpcCloseMemHandle(dptr: CUdeviceptr) -> Result<(), CuError> {
        current()?;
        Ok(ipc::close_mem_handle(dptr)?)
    }

    fn cuMemFree_v2(dptr: CUdeviceptr) -> Result<(), CuError> {
        free(dptr)
    }

    fn cuMemAllocPitch_v2(dptr: *mut CUdeviceptr, pitch: *mut usize, width: usize, height: usize, elem: c_uint) -> Result<(), CuError> {
        if !matches!(elem, 4 | 8 | 16) || pitch.is_null() {
            return Err(CuError::INVALID_VALUE);
        }
        let p = width.checked_next_multiple_of(512).ok_or(CuError::INVALID_VALUE)?;
        alloc(dptr, p.checked_mul(height).ok_or(CuError::INVALID_VALUE)?)?;
        // SAFETY: the caller's output pointer (checked).
        unsafe { out(pitch, p) }
    }

    fn cuMemHostAlloc(pp: *mut *mut c_void, size: usize, flags: c_uint) -> Result<(), CuError> {
        host_alloc(pp, size, flags)
    }

    fn cuMemAllocHost_v2(pp: *mut *mut c_void, size: usize) -> Result<(), CuError> {
        host_alloc(pp, size, 0)
    }

    fn cuMemHostGetDevicePointer_v2(pdptr: *mut CUdeviceptr, p: *mut c_void, flags: c_uint) -> Result<(), CuError> {
        current()?;
        // The runtime checks `p` against its host memory.
        let d = crate::core::host_memory::host_get_device_pointer(true, p, flags).map_err(crate::error::CuError::from)?;
        // SAFETY: the caller's output pointer (checked).
        unsafe { out(pdptr, d as u64) }
    }

    fn cuMemHostGetFlags(pflags: *mut c_uint, p: *mut c_void) -> Result<(), CuError> {
        current()?;
        // CU_MEMHOSTALLOC_* equal cudaHostAlloc*.
        let f = crate::core::host_memory::host_get_flags(p).map_err(crate::error::CuError::from)?;
        // SAFETY: the caller's output pointer, checked for null by `write_out`.
        unsafe { crate::ffi::write_out(pflags, f) }.map_err(crate::error::CuError::from)
    }

    fn cuMemAllocManaged(dptr: *mut CUdeviceptr, size: usize, flags: c_uint) -> Result<(), CuError> {
        current()?;
        if size == 0 {
            return Err(CuError::INVALID_VALUE);
        }
        // CU_MEM_ATTACH_GLOBAL/HOST equal cudaMemAttachGlobal/Host.
        let p = crate::core::alloc::malloc_managed(true, size, flags).map_err(crate::error::CuError::from)?;
        own(|o| o.allocs.push(p as u64))?;
        // SAFETY: the caller's output pointer.
        unsafe { out(dptr, p as u64) }
    }

    fn cuMemFreeHost(p: *mut c_void) -> Result<(), CuError> {
        current()?;
        crate::core::host_memory::free_host(p).map_err(crate::error::CuError::from)?;
        disown(|o| o.host.retain(|&h| h != p as usize));
        Ok(())
    }

    fn cuMemHostRegister_v2(p: *mut c_void, size: usize, flags: c_uint) -> Result<(), CuError> {
        current()?;
        // CU_MEMHOSTREGISTER_* and cudaHostRegister* flags have the same values.
        crate::core::host_memory::host_register(p, size, flags).map_err(crate::error::CuError::from)
    }

    fn cuMemHostUnregister(p: *mut c_void) -> Result<(), CuError> {
        current()?;
        crate::core::host_memory::host_unregister(p).map_err(crate::error::CuError::from)
    }

    fn cuMemcpyHtoD_v2(dst: CUdeviceptr, src: *const c_void, n: usize) -> Result<(), CuError> {
        copy(dst, src as u64, n, memcpy_kind::H2D, None)
    }

    fn cuMemcpyDtoH_v2(dst: *mut c_void, src: CUdeviceptr, n: usize) -> Result<(), CuError> {
        copy(dst as u64, src, n, memcpy_kind::D2H, None)
    }

    fn cuMemcpyDtoD_v2(dst: CUdeviceptr, src: CUdeviceptr, n: usize) -> Result<(), CuError> {
        copy(dst, src, n, memcpy_kind::D2D, None)
    }

    fn cuMemcpyHtoDAsync_v2(dst: CUdeviceptr, src: *const c_void, n: usize, s: cudaStream_t) -> Result<(), CuError> {
        copy(dst, src as u64, n, memcpy_kind::H2D, Some(s))
    }

    fn cuMemcpyDtoHAsync_v2(dst: *mut c_void, src: CUdeviceptr, n: usize, s: cudaStream_t) -> Result<(), CuError> {
        copy(dst as u64, src, n, memcpy_kind::D2H, Some(s))
    }

    fn cuMemcpyDtoDAsync_v2(dst: CUdeviceptr, src: CUdeviceptr, n: usize, s: cudaStream_t) -> Result<(), CuError> {
        copy(dst, src, n, memcpy_kind::D2D, Some(s))
    }

    fn cuMemcpy2D_v2(p: *const CUDA_MEMCPY2D) -> Result<(), CuError> {
        copy_2d(p, None)
    }

    fn cuMemcpy2DUnaligned_v2(p: *const CUDA_MEMCPY2D) -> Result<(), CuError> {
        copy_2d(p, None)
    }

    fn cuMemcpy(dst: CUdeviceptr, src: CUdeviceptr, n: usize) -> Result<(), CuError> {
        current()?;
        // Unified addressing: the direction from the addresses (cudaMemcpyDefault).
        crate::core::memory::memcpy_call(dst as *mut c_void, src as *const c_void, n, 4).map_err(crate::error::CuError::from)
    }

    fn cuMemcpyAsync(dst: CUdeviceptr, src: CUdeviceptr, n: usize, s: cudaStream_t) -> Result<(), CuError> {
        current()?;
        crate::core::memory::memcpy_async(dst as *mut c_void, src as *const c_void, n, 4, s).map_err(crate::error::CuError::from)
    }

    fn cuMemcpy2DAsync_v2(p: *const CUDA_MEMCPY2D, s: cudaStream_t) -> Result<(), CuError> {
        copy_2d(p, Some(s))
    }

    fn cuMemsetD8_v2(dst: CUdeviceptr, v: u8, n: usize) -> Result<(), CuError> {
        memset(dst, 0, u32::from(v), 1, n, 1, None)
    }

    fn cuMemsetD16_v2(dst: CUdeviceptr, v: u16, n: usize) -> Result<(), CuError> {
        memset(dst, 0, u32::from(v), 2, n, 1, None)
    }

    fn cuMemsetD32_v2(dst: CUdeviceptr, v: u32, n: usize) -> Result<(), CuError> {
        memset(dst, 0, v, 4, n, 1, None)
    }

    fn cuMemAdvise(ptr: CUdeviceptr, count: usize, advice: c_int, device: c_int) -> Result<(), CuError> {
        current()?;
        // The runtime checks the range (a CUdevice is a device ordinal, CU_DEVICE_CPU is
        // cudaCpuDeviceId).
        crate::core::managed::v12_mem_advise(ptr as *const c_void, count, advice, device).map_err(crate::error::CuError::from)
    }

    fn cuMemAdvise_v2(ptr: CUdeviceptr, count: usize, advice: c_int, loc: m::cudaMemLocation) -> Result<(), CuError> {
        current()?;
        crate::core::managed::mem_advise(ptr as *const c_void, count, advice, loc).map_err(crate::error::CuError::from)
    }

    fn cuMemPrefetchAsync(ptr: CUdeviceptr, count: usize, device: c_int, s: cudaStream_t) -> Result<(), CuError> {
        current()?;
        crate::core::managed::v12_mem_prefetch_async(ptr as *const c_void, count, device, s).map_err(crate::error::CuError::from)
    }

    fn cuMemPrefetchAsync_ptsz(ptr: CUdeviceptr, count: usize, device: c_int, s: cudaStream_t) -> Result<(), CuError> {
        current()?;
        crate::core::managed::v12_mem_prefetch_async_ptsz(ptr as *const c_void, count, device, s).map_err(crate::error::CuError::from)
    }

    fn cuMemPrefetchAsync_v2(ptr: CUdeviceptr, count: usize, loc: m::cudaMemLocation, flags: c_uint, s: cudaStream_t) -> Result<(), CuError> {
        current()?;
        crate::core::managed::mem_prefetch_async(ptr as *const c_void, count, loc, flags, s).map_err(crate::error::CuError::from)
    }

    fn cuMemPrefetchAsync_v2_ptsz(ptr: CUdeviceptr, count: usize, loc: m::cudaMemLocation, flags: c_uint, s: cudaStream_t) -> Result<(), CuError> {
        current()?;
        crate::core::managed::mem_prefetch_async_ptsz(ptr as *const c_void, count, loc, flags, s).map_err(crate::error::CuError::from)
    }

    fn cuMemRangeGetAttribute(data: *mut c_void, size: usize, attr: c_int, ptr: CUdeviceptr, count: usize) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's buffer; CUmem_range_attribute has the runtime's values.
        unsafe { crate::abi::managed_args::mem_range_get_attribute(data, size, attr, ptr as *const c_void, count) }.map_err(crate::error::CuError::from)
    }

    fn cuMemRangeGetAttributes(data: *mut *mut c_void, sizes: *mut usize, attrs: *mut c_int, n: usize, ptr: CUdeviceptr, count: usize) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's arrays.
        unsafe { crate::abi::managed_args::mem_range_get_attributes(data, sizes, attrs, n, ptr as *const c_void, count) }.map_err(crate::error::CuError::from)
    }

    fn cuMemsetD8Async(dst: CUdeviceptr, v: u8, n: usize, s: cudaStream_t) -> Result<(), CuError> {
        memset(dst, 0, u32::from(v), 1, n, 1, Some(s))
    }

    fn cuMemsetD16Async(dst: CUdeviceptr, v: u16, n: usize, s: cudaStream_t) -> Result<(), CuError> {
        memset(dst, 0, u32::from(v), 2, n, 1, Some(s))
    }

    fn cuMemsetD32Async(dst: CUdeviceptr, v: u32, n: usize, s: cudaStream_t) -> Result<(), CuError> {
        memset(dst, 0, v, 4, n, 1, Some(s))
    }

    fn cuMemsetD2D8_v2(dst: CUdeviceptr, pitch: usize, v: u8, w: usize, h: usize) -> Result<(), CuError> {
        memset(dst, pitch, u32::from(v), 1, w, h, None)
    }

    fn cuMemsetD2D16_v2(dst: CUdeviceptr, pitch: usize, v: u16, w: usize, h: usize) -> Result<(), CuError> {
        memset(dst, pitch, u32::from(v), 2, w, h, None)
    }

    fn cuMemsetD2D32_v2(dst: CUdeviceptr, pitch: usize, v: u32, w: usize, h: usize) -> Result<(), CuError> {
        memset(dst, pitch, v, 4, w, h, None)
    }

    fn cuMemsetD2D8Async(dst: CUdeviceptr, pitch: usize, v: u8, w: usize, h: usize, s: cudaStream_t) -> Result<(), CuError> {
        memset(dst, pitch, u32::from(v), 1, w, h, Some(s))
    }

    fn cuMemsetD2D16Async(dst: CUdeviceptr, pitch: usize, v: u16, w: usize, h: usize, s: cudaStream_t) -> Result<(), CuError> {
        memset(dst, pitch, u32::from(v), 2, w, h, Some(s))
    }

    fn cuMemsetD2D32Async(dst: CUdeviceptr, pitch: usize, v: u32, w: usize, h: usize, s: cudaStream_t) -> Result<(), CuError> {
        memset(dst, pitch, v, 4, w, h, Some(s))
    }
}

/// `cuMemcpyBatchAsync` (all four forms): the runtime's batch (`CUmemcpyAttributes` is laid
/// out as `cudaMemcpyAttributes`); `fail_idx` (CUDA 12's form) gets the failing copy's
/// index, or `usize::MAX` where no one copy failed.
/// `cuMemcpy3DBatchAsync[_v2]`: the runtime's 3-D batch; CUDA 12.8's form also says which
/// operation failed (`SIZE_MAX` for an error not tied to one).
fn batch_3d(
    n: usize,
    ops: *const crate::core::memory3d::cudaMemcpy3DBatchOp,
    fail_idx: Option<*mut usize>,
    flags: u64,
    stream: cudaStream_t,
    ptsz: bool,
) -> Result<(), CuError> {
    current()?;
    let mut failed = None;
    // SAFETY: the caller's array of `n` operations (the API's contract).
    let r =
        unsafe { crate::abi::memory_args::copy_3d_batch(n, ops, flags, stream, ptsz, &mut failed) };
    if let Some(f) = fail_idx.filter(|f| !f.is_null()) {
        // SAFETY: the caller's output, checked for null.
        unsafe { out(f, failed.unwrap_or(usize::MAX))? };
    }
    Ok(r?)
}

#[allow(clippy::too_many_arguments)]
fn batch(
    dsts: *const u64,
    srcs: *const u64,
    sizes: *const usize,
    count: usize,
    attrs: *const crate::core::memcpy_batch::cudaMemcpyAttributes,
    idxs: *const usize,
    num_attrs: usize,
    fail_idx: Option<*mut usize>,
    stream: cudaStream_t,
    ptsz: bool,
) -> Result<(), CuError> {
    current()?;
    let mut failed = None;
    // SAFETY: the caller's arrays (the API's contract); device pointers are addresses.
    let b = unsafe {
        crate::abi::memory_args::batch(
            dsts.cast(),
            srcs.cast(),
            sizes,
            count,
            (attrs, idxs, num_attrs),
        )
    };
    let r = crate::core::memcpy_batch::memcpy_batch(b, stream, ptsz, &mut failed);
    if let Some(f) = fail_idx.filter(|f| !f.is_null()) {
        // SAFETY: the caller's output, checked for null.
        unsafe { out(f, failed.unwrap_or(usize::MAX))? };
    }
    Ok(r?)
}

entry_lib! {
    fn cuMemcpyBatchAsync(dsts: *const u64, srcs: *const u64, sizes: *const usize, count: usize, attrs: *const crate::core::memcpy_batch::cudaMemcpyAttributes, idxs: *const usize, num_attrs: usize, fail_idx: *mut usize, s: cudaStream_t) -> Result<(), CuError> {
        batch(dsts, srcs, sizes, count, attrs, idxs, num_attrs, Some(fail_idx), s, false)
    }

    fn cuMemcpyBatchAsync_ptsz(dsts: *const u64, srcs: *const u64, sizes: *const usize, count: usize, attrs: *const crate::core::memcpy_batch::cudaMemcpyAttributes, idxs: *const usize, num_attrs: usize, fail_idx: *mut usize, s: cudaStream_t) -> Result<(), CuError> {
        batch(dsts, srcs, sizes, count, attrs, idxs, num_attrs, Some(fail_idx), s, true)
    }

    fn cuMemcpyBatchAsync_v2(dsts: *const u64, srcs: *const u64, sizes: *const usize, count: usize, attrs: *const crate::core::memcpy_batch::cudaMemcpyAttributes, idxs: *const usize, num_attrs: usize, s: cudaStream_t) -> Result<(), CuError> {
        batch(dsts, srcs, sizes, count, attrs, idxs, num_attrs, None, s, false)
    }

    fn cuMemcpy3DBatchAsync(n: usize, ops: *const crate::core::memory3d::cudaMemcpy3DBatchOp, fail_idx: *mut usize, flags: u64, s: cudaStream_t) -> Result<(), CuError> {
        batch_3d(n, ops, Some(fail_idx), flags, s, false)
    }

    fn cuMemcpy3DBatchAsync_ptsz(n: usize, ops: *const crate::core::memory3d::cudaMemcpy3DBatchOp, fail_idx: *mut usize, flags: u64, s: cudaStream_t) -> Result<(), CuError> {
        batch_3d(n, ops, Some(fail_idx), flags, s, true)
    }

    fn cuMemcpy3DBatchAsync_v2(n: usize, ops: *const crate::core::memory3d::cudaMemcpy3DBatchOp, flags: u64, s: cudaStream_t) -> Result<(), CuError> {
        batch_3d(n, ops, None, flags, s, false)
    }

    fn cuMemcpy3DBatchAsync_v2_ptsz(n: usize, ops: *const crate::core::memory3d::cudaMemcpy3DBatchOp, flags: u64, s: cudaStream_t) -> Result<(), CuError> {
        batch_3d(n, ops, None, flags, s, true)
    }

    fn cuMemcpyBatchAsync_v2_ptsz(dsts: *const u64, srcs: *const u64, sizes: *const usize, count: usize, attrs: *const crate::core::memcpy_batch::cudaMemcpyAttributes, idxs: *const usize, num_attrs: usize, s: cudaStream_t) -> Result<(), CuError> {
        batch(dsts, srcs, sizes, count, attrs, idxs, num_attrs, None, s, true)
    }
}
