// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The rest of what driver API users commonly call: address ranges and pointer attributes,
//! host functions on streams, cache configuration, PCI bus ids, compute capability and
//! module files.

use std::ffi::{c_char, c_int, c_uint, c_void};

use super::out;
use crate::core::context::current;
use crate::core::module::Module;
use crate::ffi::CUdeviceptr;
// `CUstreamCallback` is the runtime's `cudaStreamCallback_t` (CUresult and cudaError_t
// agree on the codes a stream's status takes).
use crate::client;
use crate::core::misc::StreamCallback;
use crate::error::CuError;
use crate::ffi::cudaStream_t;
use crate::mirror::Kind;

/// `CUpointer_attribute` values answered.
const POINTER_ATTRIBUTE_CONTEXT: c_int = 1;
const POINTER_ATTRIBUTE_MEMORY_TYPE: c_int = 2;
const POINTER_ATTRIBUTE_DEVICE_POINTER: c_int = 3;
const POINTER_ATTRIBUTE_HOST_POINTER: c_int = 4;
const POINTER_ATTRIBUTE_IS_MANAGED: c_int = 8;
const POINTER_ATTRIBUTE_DEVICE_ORDINAL: c_int = 9;
const POINTER_ATTRIBUTE_RANGE_START_ADDR: c_int = 11;
const POINTER_ATTRIBUTE_RANGE_SIZE: c_int = 12;
const POINTER_ATTRIBUTE_MAPPED: c_int = 13;
/// `CUmemorytype`.
const MEMORYTYPE_HOST: c_uint = 1;
const MEMORYTYPE_DEVICE: c_uint = 2;

pub(crate) type HostFn = Option<unsafe extern "C" fn(*mut c_void)>;

/// The size of a `CUpointer_attribute`'s value (cuda.h's descriptions), or `None` for an
/// unknown attribute. Where cuda.h does not name a type (the allowed handle types' bitmask),
/// the smaller choice, so that a default value never writes past the caller's storage.
fn pointer_attribute_size(a: c_int) -> Option<usize> {
    Some(match a {
        // Context, device and host pointers, buffer id, range start, memory pool, mapping
        // size and base, memory block id.
        1 | 3 | 4 | 7 | 11 | 17 | 18 | 19 | 20 => 8,
        // Range size (size_t).
        12 => size_of::<usize>(),
        // P2P tokens: an unsigned long long and an unsigned int.
        5 => 16,
        // Memory type, sync memops, is managed, device ordinal, IPC capable, mapped, allowed
        // handle types, RDMA capable, access flags, hardware decompression.
        2 | 6 | 8 | 9 | 10 | 13 | 14 | 15 | 16 | 21 => 4,
        _ => return None,
    })
}

/// Both contexts of a peer copy must be live (every context is on this session's one
/// device, so the copy is a device-to-device copy).
fn peer_contexts(dst: *mut c_void, src: *mut c_void) -> Result<(), CuError> {
    current()?;
    if crate::core::context::is_context(dst as usize)
        && crate::core::context::is_context(src as usize)
    {
        Ok(())
    } else {
        Err(CuError::INVALID_CONTEXT)
    }
}

/// `CUarray_format`: bytes per channel of the formats a 1-D linear texture takes.
fn format_channel_bytes(format: c_uint) -> Option<u64> {
    match format {
        // UNSIGNED_INT8, SIGNED_INT8.
        0x01 | 0x08 => Some(1),
        // UNSIGNED_INT16, SIGNED_INT16, HALF.
        0x02 | 0x09 | 0x10 => Some(2),
        // UNSIGNED_INT32, SIGNED_INT32, FLOAT.
        0x03 | 0x0a | 0x20 => Some(4),
        _ => None,
    }
}

/// `cuStreamGetCtx`: the context stream `s` (checked) belongs to.
fn stream_ctx(s: cudaStream_t, ctx: *mut crate::core::context::CUcontext) -> Result<(), CuError> {
    current()?;
    let mut device = 0;
    // SAFETY: a local output; the call checks the stream handle.
    unsafe { crate::abi::stream_args::stream_get_device(s, &mut device) }?;
    let c = crate::core::context::stream_context(s as usize)?;
    // SAFETY: the caller's output pointer.
    unsafe { out(ctx, c as crate::core::context::CUcontext) }
}

/// `cuStreamGetCtx_v2`'s green context: none (vcuda has no green contexts); null allowed.
fn no_green(green: *mut *mut c_void) -> Result<(), CuError> {
    if !green.is_null() {
        // SAFETY: the caller's output pointer, non-null.
        unsafe { green.write(std::ptr::null_mut()) };
    }
    Ok(())
}

entry_lib! {
    fn cuStreamGetDevice(s: cudaStream_t, dev: *mut c_int) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's arguments.
        Ok(unsafe { crate::abi::stream_args::stream_get_device(s, dev) }?)
    }

    fn cuStreamGetDevice_ptsz(s: cudaStream_t, dev: *mut c_int) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's arguments.
        Ok(unsafe { crate::abi::stream_args::stream_get_device(crate::core::ptsz::per_thread(s), dev) }?)
    }

    fn cuStreamGetCtx(s: cudaStream_t, ctx: *mut crate::core::context::CUcontext) -> Result<(), CuError> {
        stream_ctx(s, ctx)
    }

    fn cuStreamGetCtx_ptsz(s: cudaStream_t, ctx: *mut crate::core::context::CUcontext) -> Result<(), CuError> {
        stream_ctx(crate::core::ptsz::per_thread(s), ctx)
    }

    fn cuStreamGetCtx_v2(s: cudaStream_t, ctx: *mut crate::core::context::CUcontext, green: *mut *mut c_void) -> Result<(), CuError> {
        stream_ctx(s, ctx)?;
        no_green(green)
    }

    fn cuStreamGetCtx_v2_ptsz(s: cudaStream_t, ctx: *mut crate::core::context::CUcontext, green: *mut *mut c_void) -> Result<(), CuError> {
        stream_ctx(crate::core::ptsz::per_thread(s), ctx)?;
        no_green(green)
    }

    fn cuModuleGetLoadingMode(mode: *mut c_int) -> Result<(), CuError> {
        // CU_MODULE_EAGER_LOADING: a module is loaded whole when it is loaded.
        // SAFETY: the caller's output pointer.
        unsafe { out(mode, 1) }
    }

    fn cuMemGetAddressRange_v2(base: *mut CUdeviceptr, size: *mut usize, ptr: CUdeviceptr) -> Result<(), CuError> {
        current()?;
        let c = client::client()?;
        let r = c
            .mirror
            .find(ptr)
            .ok_or(CuError::NOT_FOUND)?;
        // SAFETY: the caller's output pointers, each optional.
        unsafe {
            if !base.is_null() {
                out(base, r.base)?;
            }
            if !size.is_null() {
                out(size, r.len as usize)?;
            }
        }
        Ok(())
    }

    fn cuPointerGetAttribute(data: *mut c_void, attr: c_int, ptr: CUdeviceptr) -> Result<(), CuError> {
        current()?;
        let c = client::client()?;
        let r = c.mirror.find(ptr).ok_or(CuError::INVALID_VALUE)?;
        let device = r.kind == Kind::Device;
        let managed = r.kind == Kind::Managed;
        // SAFETY: `data` points to storage of the attribute's type (the driver API's
        // contract): a context, unsigned int, pointer, int or size_t.
        unsafe {
            match attr {
                POINTER_ATTRIBUTE_CONTEXT => out(data.cast::<*mut c_void>(), crate::core::context::current()? as *mut c_void),
                // Managed memory is device memory that is also managed.
                POINTER_ATTRIBUTE_MEMORY_TYPE => out(data.cast::<c_uint>(), if device || managed { MEMORYTYPE_DEVICE } else { MEMORYTYPE_HOST }),
                // Unified addressing: page-locked and managed memory is reached from the
                // device at its own address (an offset into a range keeps its offset).
                POINTER_ATTRIBUTE_DEVICE_POINTER => out(data.cast::<u64>(), ptr),
                POINTER_ATTRIBUTE_HOST_POINTER if !device => out(data.cast::<u64>(), ptr),
                POINTER_ATTRIBUTE_IS_MANAGED => out(data.cast::<c_int>(), c_int::from(managed)),
                POINTER_ATTRIBUTE_MAPPED => out(data.cast::<c_int>(), 0),
                POINTER_ATTRIBUTE_DEVICE_ORDINAL => out(data.cast::<c_int>(), r.device),
                POINTER_ATTRIBUTE_RANGE_START_ADDR => out(data.cast::<u64>(), r.base),
                POINTER_ATTRIBUTE_RANGE_SIZE => out(data.cast::<usize>(), r.len as usize),
                _ => Err(CuError::INVALID_VALUE),
            }
        }
    }

    fn cuPointerGetAttributes(n: c_uint, attrs: *const c_int, data: *mut *mut c_void, ptr: CUdeviceptr) -> Result<(), CuError> {
        if n == 0 || attrs.is_null() || data.is_null() {
            return Err(CuError::INVALID_VALUE);
        }
        for i in 0..n as usize {
            // SAFETY: the caller's arrays of `n` attributes and `n` result pointers.
            let (a, d) = unsafe { (*attrs.add(i), *data.add(i)) };
            if d.is_null() {
                return Err(CuError::INVALID_VALUE);
            }
            // SAFETY: forwarding one attribute and its storage.
            if unsafe { cuPointerGetAttribute(d, a, ptr) } != 0 {
                // Unlike cuPointerGetAttribute, a pointer CUDA does not know (or an
                // attribute that does not apply) reads as the attribute's zero value.
                let size = pointer_attribute_size(a).ok_or(CuError::INVALID_VALUE)?;
                // SAFETY: `d` points to storage of the attribute's type, `size` bytes.
                unsafe { std::ptr::write_bytes(d.cast::<u8>(), 0, size) };
            }
        }
        Ok(())
    }

    fn cuStreamAddCallback(s: cudaStream_t, cb: StreamCallback, data: *mut c_void, flags: c_uint) -> Result<(), CuError> {
        current()?;
        crate::core::misc::stream_add_callback(s, cb, data, flags).map_err(crate::error::CuError::from)
    }

    fn cuMemcpyPeer(dst: CUdeviceptr, dst_ctx: *mut c_void, src: CUdeviceptr, src_ctx: *mut c_void, n: usize) -> Result<(), CuError> {
        peer_contexts(dst_ctx, src_ctx)?;
        crate::core::misc::memcpy_peer(dst as *mut c_void, 0, src as *const c_void, 0, n).map_err(crate::error::CuError::from)
    }

    fn cuMemcpyPeerAsync(dst: CUdeviceptr, dst_ctx: *mut c_void, src: CUdeviceptr, src_ctx: *mut c_void, n: usize, s: cudaStream_t) -> Result<(), CuError> {
        peer_contexts(dst_ctx, src_ctx)?;
        crate::core::misc::memcpy_peer_async(dst as *mut c_void, 0, src as *const c_void, 0, n, s).map_err(crate::error::CuError::from)
    }

    fn cuLaunchHostFunc(s: cudaStream_t, f: HostFn, data: *mut c_void) -> Result<(), CuError> {
        current()?;
        crate::core::misc::launch_host_func_call(s, f, data).map_err(crate::error::CuError::from)
    }

    fn cuCtxSetCacheConfig(config: c_int) -> Result<(), CuError> {
        current()?;
        // CUfunc_cache and cudaFuncCache number alike.
        crate::core::device::device_set_cache_config(config).map_err(crate::error::CuError::from)
    }

    fn cuCtxGetCacheConfig(config: *mut c_int) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointer.
        unsafe { crate::abi::device_args::device_get_cache_config(config) }.map_err(crate::error::CuError::from)
    }

    fn cuDeviceGetByPCIBusId(dev: *mut c_int, bus_id: *const c_char) -> Result<(), CuError> {
        // SAFETY: the caller's string, NUL-terminated (the API's contract), checked for null.
        let id = unsafe { crate::abi::runtime::attrs::bus_id_in(dev, bus_id) }?;
        let d = crate::core::attrs::device_get_by_pci_bus_id(id)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { out(dev, d) }
    }

    fn cuDeviceGetPCIBusId(bus_id: *mut c_char, len: c_int, dev: c_int) -> Result<(), CuError> {
        let id = crate::core::misc::pci_bus_id(dev)?;
        // SAFETY: the caller's buffer of `len` bytes.
        unsafe { crate::ffi::write_c_string(bus_id, len, &id) }.map_err(crate::error::CuError::from)
    }

    fn cuDeviceComputeCapability(major: *mut c_int, minor: *mut c_int, dev: c_int) -> Result<(), CuError> {
        let c = client::client()?;
        let info = c.device_info(dev).map_err(|_| CuError::INVALID_DEVICE)?;
        let a = |n| info.attr(n).unwrap_or(0);
        // SAFETY: the caller's output pointers.
        unsafe {
            out(major, a(vcuda_protocol::attr::COMPUTE_CAPABILITY_MAJOR))?;
            out(minor, a(vcuda_protocol::attr::COMPUTE_CAPABILITY_MINOR))
        }
    }

    fn cuModuleLoad(m: *mut *mut Module, path: *const c_char) -> Result<(), CuError> {
        // SAFETY: the caller's path, under cuModuleLoad's contract.
        let module = unsafe { crate::abi::module_args::load_file(path, false) }?;
        // SAFETY: the caller's output pointer.
        unsafe { out(m, module) }
    }
}

entry_lib! {
    fn cuStreamGetId(s: cudaStream_t, id: *mut u64) -> Result<(), CuError> {
        current()?;
        let v = crate::core::attrs::stream_id(s, false)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { out(id, v) }
    }

    fn cuStreamGetId_ptsz(s: cudaStream_t, id: *mut u64) -> Result<(), CuError> {
        current()?;
        let v = crate::core::attrs::stream_id(s, true)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { out(id, v) }
    }

    fn cuStreamGetPriority_ptsz(s: cudaStream_t, priority: *mut c_int) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointer; the runtime checks the handle.
        unsafe { crate::abi::stream_args::stream_get_priority_ptsz(s, priority) }.map_err(crate::error::CuError::from)
    }

    fn cuStreamGetFlags_ptsz(s: cudaStream_t, flags: *mut c_uint) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointer; the runtime checks the handle.
        unsafe { crate::abi::stream_args::stream_get_flags_ptsz(s, flags) }.map_err(crate::error::CuError::from)
    }

    // `CUstreamAttrValue` is the runtime's `cudaStreamAttrValue` (one `CUlaunchAttributeValue`
    // union), and the attribute ids number alike.
    fn cuStreamGetAttribute(s: cudaStream_t, id: c_int, value: *mut crate::core::attr_table::cudaLaunchAttributeValue) -> Result<(), CuError> {
        current()?;
        let v = crate::core::attrs::get_attribute(s, id, false)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { out(value, v) }
    }

    fn cuStreamGetAttribute_ptsz(s: cudaStream_t, id: c_int, value: *mut crate::core::attr_table::cudaLaunchAttributeValue) -> Result<(), CuError> {
        current()?;
        let v = crate::core::attrs::get_attribute(s, id, true)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { out(value, v) }
    }

    fn cuStreamSetAttribute(s: cudaStream_t, id: c_int, value: *const crate::core::attr_table::cudaLaunchAttributeValue) -> Result<(), CuError> {
        current()?;
        // SAFETY: the caller's value (the API's contract), checked for null.
        Ok(crate::core::attrs::set_attribute(s, id, unsafe { value.as_ref() }, false)?)
    }

    fn cuStreamSetAttribute_ptsz(s: cudaStream_t, id: c_int, value: *const crate::core::attr_table::cudaLaunchAttributeValue) -> Result<(), CuError> {
        current()?;
        // SAFETY: the caller's value (the API's contract), checked for null.
        Ok(crate::core::attrs::set_attribute(s, id, unsafe { value.as_ref() }, true)?)
    }

    fn cuStreamCopyAttributes(dst: cudaStream_t, src: cudaStream_t) -> Result<(), CuError> {
        current()?;
        Ok(crate::core::attrs::copy_attributes(dst, src, false)?)
    }

    fn cuStreamCopyAttributes_ptsz(dst: cudaStream_t, src: cudaStream_t) -> Result<(), CuError> {
        current()?;
        Ok(crate::core::attrs::copy_attributes(dst, src, true)?)
    }

    fn cuDeviceGetTexture1DLinearMaxWidth(out_width: *mut usize, format: c_uint, channels: c_uint, dev: c_int) -> Result<(), CuError> {
        crate::core::context::check_device(dev)?;
        let size = format_channel_bytes(format).ok_or(CuError::INVALID_VALUE)?;
        if !matches!(channels, 1 | 2 | 4) {
            return Err(CuError::INVALID_VALUE);
        }
        // As the runtime's answer (see `cudaDeviceGetTexture1DLinearMaxWidth`).
        let width = (1u64 << 30).min((1u64 << 32) / (size * u64::from(channels)));
        // SAFETY: the caller's output pointer.
        unsafe { out(out_width, width as usize) }
    }

    // `CUatomicOperation` numbers as the runtime's `cudaAtomicOperation`.
    fn cuDeviceGetHostAtomicCapabilities(caps: *mut c_uint, ops: *const c_int, count: c_uint, dev: c_int) -> Result<(), CuError> {
        crate::core::context::check_device(dev)?;
        // SAFETY: `count` operations at `ops` (the API's contract), checked for null.
        let ops = unsafe { crate::abi::runtime::attrs::ops_in(caps, ops, count) };
        let n = crate::core::attrs::device_get_host_atomic_capabilities(ops, dev)?;
        // SAFETY: room for one capability set per operation at `caps` (checked for null).
        Ok(unsafe { crate::abi::runtime::attrs::caps_out(caps, n) }?)
    }

    fn cuDeviceGetP2PAtomicCapabilities(caps: *mut c_uint, ops: *const c_int, count: c_uint, src: c_int, dst: c_int) -> Result<(), CuError> {
        crate::core::context::check_device(src)?;
        // SAFETY: `count` operations at `ops` (the API's contract), checked for null.
        let ops = unsafe { crate::abi::runtime::attrs::ops_in(caps, ops, count) };
        let n = crate::core::attrs::device_get_p2p_atomic_capabilities(ops, src, dst)?;
        // SAFETY: room for one capability set per operation at `caps` (checked for null).
        Ok(unsafe { crate::abi::runtime::attrs::caps_out(caps, n) }?)
    }

    fn cuArrayGetMemoryRequirements(req: *mut c_void, array: *mut c_void, dev: c_int) -> Result<(), CuError> {
        crate::core::context::check_device(dev)?;
        crate::core::array::array_get_memory_requirements(req, array.cast(), dev).map_err(crate::error::CuError::from)
    }

    fn cuMipmappedArrayGetMemoryRequirements(req: *mut c_void, m: *mut c_void, dev: c_int) -> Result<(), CuError> {
        crate::core::context::check_device(dev)?;
        crate::core::array::mipmapped_get_memory_requirements(req, m as u64, dev).map_err(crate::error::CuError::from)
    }
}
