// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Initialization, versions, devices, contexts, limits and error names.

use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::sync::Mutex;

use vcuda_protocol::status;

use super::out;
use crate::client;
pub use crate::core::context::CUcontext;
use crate::core::context::{
    CURRENT, Ctx, NONE, Owned, check_device, connected, current, current_raw, is_context, primary,
    with,
};
use crate::error::CuError;
use crate::ffi::{cudaEvent_t, cudaStream_t};

/// Frees what a destroyed context owned (best effort: each failure is logged).
fn free_owned(o: Owned) {
    let logged = |what: &str, r: crate::error::Result<()>| {
        if let Err(e) = r {
            log::debug!("freeing a destroyed context's {what}: {e:?}");
        }
    };
    for m in o.modules {
        crate::core::module::unload(m);
    }
    for s in o.streams {
        // A stream this context created and nobody destroyed.
        logged(
            "stream",
            crate::core::stream::stream_destroy(s as cudaStream_t),
        );
    }
    for e in o.events {
        // An event this context created and nobody destroyed.
        logged(
            "event",
            crate::core::stream::event_destroy(e as cudaEvent_t),
        );
    }
    for p in o.allocs {
        logged(
            "allocation",
            crate::core::memory::free_call(p as *mut c_void),
        );
    }
    for h in o.host {
        logged(
            "host allocation",
            crate::core::host_memory::free_host(h as *mut c_void),
        );
    }
}

/// `cuDevicePrimaryCtxReset`: what the primary context kept in its local storage goes (its
/// destructors run), then what it owns, then the session is reset as `cudaDeviceReset`
/// does. Contexts share the session, so the others lose their device memory too.
fn reset_primary(dev: c_int) -> Result<(), CuError> {
    check_device(dev)?;
    let p = primary();
    crate::core::context::release_storage(p);
    let owned = with(|m| m.get_mut(&p).map(|c| std::mem::take(&mut c.owned))).unwrap_or_default();
    free_owned(owned);
    crate::core::device::device_reset().map_err(CuError::from)
}

/// `CUctxCreateParams`: execution affinity and CIG parameters (none supported).
#[repr(C)]
pub struct CUctxCreateParams {
    exec_affinity_params: *mut c_void,
    num_exec_affinity_params: c_int,
    cig_params: *mut c_void,
}

pub(super) fn create(pctx: *mut CUcontext, flags: c_uint, dev: c_int) -> Result<(), CuError> {
    check_device(dev)?;
    // A fault is the whole process's on a GPU: NVIDIA's driver fails the reset of another
    // context with it too (H100, driver 580: the CUDA executor's `a_fault_is_sticky`). Here
    // the session is reset once the last created context is destroyed (`cuCtxDestroy`);
    // until then a new context would be broken from its start, so it is refused.
    connected()?.check_sticky().map_err(CuError::from)?;
    let h = Box::into_raw(Box::new(0u8)) as usize;
    with(|m| {
        m.insert(
            h,
            Ctx {
                flags,
                ..Ctx::default()
            },
        )
    });
    CURRENT.set(h);
    // SAFETY: the caller's output pointer.
    unsafe { out(pctx, h as CUcontext) }
}

entry_lib! {
    fn cuInit(flags: c_uint) -> Result<(), CuError> {
        if flags != 0 {
            return Err(CuError::INVALID_VALUE);
        }
        connected().map(drop)
    }

    fn cuDriverGetVersion(version: *mut c_int) -> Result<(), CuError> {
        // SAFETY: the caller's output pointer, checked for null by `write_out`.
        unsafe { crate::ffi::write_out(version, crate::core::error::driver_version()) }.map_err(crate::error::CuError::from)
    }

    fn cuDeviceGetCount(count: *mut c_int) -> Result<(), CuError> {
        connected()?;
        // SAFETY: forwarding the caller's output pointer.
        unsafe { crate::abi::device_args::get_device_count(count) }.map_err(crate::error::CuError::from)
    }

    fn cuDeviceGet(device: *mut c_int, ordinal: c_int) -> Result<(), CuError> {
        check_device(ordinal)?;
        // SAFETY: the caller's output pointer.
        unsafe { out(device, ordinal) }
    }

    fn cuDeviceGetName(name: *mut c_char, len: c_int, dev: c_int) -> Result<(), CuError> {
        check_device(dev)?;
        let info = connected()?.device_info(dev)?;
        if name.is_null() || len <= 0 {
            return Err(CuError::INVALID_VALUE);
        }
        let n = info.name.iter().position(|&b| b == 0).unwrap_or(info.name.len());
        let n = n.min(len as usize - 1);
        // SAFETY: `name` holds `len` bytes (the caller's contract); we write n + 1 <= len.
        unsafe {
            std::ptr::copy_nonoverlapping(info.name.as_ptr().cast::<c_char>(), name, n);
            *name.add(n) = 0;
        }
        Ok(())
    }

    fn cuDeviceGetUuid(uuid: *mut [u8; 16], dev: c_int) -> Result<(), CuError> {
        check_device(dev)?;
        let info = connected()?.device_info(dev)?;
        // SAFETY: the caller's output pointer.
        unsafe { out(uuid, info.uuid) }
    }

    fn cuDeviceGetUuid_v2(uuid: *mut [u8; 16], dev: c_int) -> Result<(), CuError> {
        check_device(dev)?;
        let info = connected()?.device_info(dev)?;
        // SAFETY: the caller's output pointer.
        unsafe { out(uuid, info.uuid) }
    }

    fn cuDeviceTotalMem_v2(bytes: *mut usize, dev: c_int) -> Result<(), CuError> {
        check_device(dev)?;
        let info = connected()?.device_info(dev)?;
        // SAFETY: the caller's output pointer.
        unsafe { out(bytes, info.total_global_mem as usize) }
    }

    fn cuDeviceGetAttribute(value: *mut c_int, attr: c_int, dev: c_int) -> Result<(), CuError> {
        check_device(dev)?;
        // The driver's CUdevice_attribute and the runtime's cudaDeviceAttr number alike.
        // SAFETY: forwarding the caller's output pointer.
        unsafe { crate::abi::device_args::device_get_attribute(value, attr, dev) }.map_err(crate::error::CuError::from)
    }

    fn cuDevicePrimaryCtxRetain(pctx: *mut CUcontext, dev: c_int) -> Result<(), CuError> {
        check_device(dev)?;
        // SAFETY: the caller's output pointer.
        unsafe { out(pctx, primary() as CUcontext) }
    }

    fn cuDevicePrimaryCtxRelease_v2(dev: c_int) -> Result<(), CuError> {
        check_device(dev)
    }

    fn cuDevicePrimaryCtxRelease(dev: c_int) -> Result<(), CuError> {
        check_device(dev)
    }

    fn cuDevicePrimaryCtxReset_v2(dev: c_int) -> Result<(), CuError> {
        reset_primary(dev)
    }

    fn cuDevicePrimaryCtxReset(dev: c_int) -> Result<(), CuError> {
        reset_primary(dev)
    }

    fn cuDevicePrimaryCtxSetFlags(dev: c_int, flags: c_uint) -> Result<(), CuError> {
        check_device(dev)?;
        with(|m| m.get_mut(&primary()).map(|c| c.flags = flags));
        Ok(())
    }

    fn cuDevicePrimaryCtxGetState(dev: c_int, flags: *mut c_uint, active: *mut c_int) -> Result<(), CuError> {
        check_device(dev)?;
        let f = with(|m| m.get(&primary()).map_or(0, |c| c.flags));
        // SAFETY: the caller's output pointers.
        unsafe {
            out(flags, f)?;
            out(active, 1)
        }
    }

    fn cuDevicePrimaryCtxSetFlags_v2(dev: c_int, flags: c_uint) -> Result<(), CuError> {
        check_device(dev)?;
        with(|m| m.get_mut(&primary()).map(|c| c.flags = flags));
        Ok(())
    }

    fn cuCtxCreate_v2(pctx: *mut CUcontext, flags: c_uint, dev: c_int) -> Result<(), CuError> {
        create(pctx, flags, dev)
    }

    fn cuCtxCreate_v4(pctx: *mut CUcontext, params: *mut CUctxCreateParams, flags: c_uint, dev: c_int) -> Result<(), CuError> {
        if !params.is_null() {
            // SAFETY: a non-null pointer to the caller's parameters.
            let p = unsafe { &*params };
            if p.num_exec_affinity_params != 0 || !p.cig_params.is_null() {
                return Err(CuError::NOT_SUPPORTED);
            }
        }
        create(pctx, flags, dev)
    }

    fn cuCtxDestroy_v2(ctx: CUcontext) -> Result<(), CuError> {
        let h = ctx as usize;
        if h == primary() {
            return Err(CuError::INVALID_CONTEXT);
        }
        // What the runtime kept in the context goes first, while the context still works.
        crate::core::context::release_storage(h).ok_or(CuError::INVALID_CONTEXT)?;
        let gone = with(|m| m.remove(&h)).ok_or(CuError::INVALID_CONTEXT)?;
        crate::core::context::destroyed();
        if CURRENT.get() == h {
            CURRENT.set(0);
        }
        free_owned(gone.owned);
        // SAFETY: `h` came from `Box::into_raw` in `create` and left the table above, so it
        // is freed once.
        drop(unsafe { Box::from_raw(h as *mut u8) });
        // Contexts share the session, and so its sticky error: once the last created one is
        // gone, a broken session is reset, so the next context starts clean, as a new
        // context on a GPU does.
        let last = with(|m| m.len() == 1);
        if last && client::client().is_ok_and(|c| c.check_sticky().is_err()) {
            crate::core::device::device_reset().map_err(crate::error::CuError::from)?;
        }
        Ok(())
    }

    fn cuCtxSetCurrent(ctx: CUcontext) -> Result<(), CuError> {
        let h = ctx as usize;
        if h != 0 && !is_context(h) {
            return Err(CuError::INVALID_CONTEXT);
        }
        // NULL: no context current on this thread (cuCtxGetCurrent then says NULL).
        CURRENT.set(if h == 0 { NONE } else { h });
        Ok(())
    }

    fn cuCtxGetCurrent(pctx: *mut CUcontext) -> Result<(), CuError> {
        // SAFETY: the caller's output pointer.
        unsafe { out(pctx, current_raw() as CUcontext) }
    }

    fn cuCtxPushCurrent_v2(ctx: CUcontext) -> Result<(), CuError> {
        let h = ctx as usize;
        if !is_context(h) {
            return Err(CuError::INVALID_CONTEXT);
        }
        STACK.with_borrow_mut(|s| s.push(current_raw()));
        CURRENT.set(h);
        Ok(())
    }

    fn cuCtxPopCurrent_v2(pctx: *mut CUcontext) -> Result<(), CuError> {
        let c = current()?;
        // The context pushed over comes back; popping the last leaves none current, so a
        // loop that pops until cuCtxGetCurrent says NULL ends (Numba's reset does).
        let prev = STACK.with_borrow_mut(Vec::pop).unwrap_or(0);
        CURRENT.set(if prev == 0 { NONE } else { prev });
        if pctx.is_null() {
            return Ok(());
        }
        // SAFETY: the caller's output pointer.
        unsafe { out(pctx, c as CUcontext) }
    }

    fn cuCtxGetDevice(device: *mut c_int) -> Result<(), CuError> {
        current()?;
        // SAFETY: the caller's output pointer.
        unsafe { out(device, 0) }
    }

    fn cuCtxGetDevice_v2(device: *mut c_int, ctx: CUcontext) -> Result<(), CuError> {
        let h = if ctx.is_null() { current()? } else { ctx as usize };
        if !is_context(h) {
            return Err(CuError::INVALID_CONTEXT);
        }
        // SAFETY: the caller's output pointer.
        unsafe { out(device, 0) }
    }

    fn cuCtxGetStreamPriorityRange(least: *mut c_int, greatest: *mut c_int) -> Result<(), CuError> {
        current()?;
        // SAFETY: the caller's output pointers; either may be null.
        Ok(unsafe { crate::abi::device_args::stream_priority_range(least, greatest) }?)
    }

    fn cuCtxGetSharedMemConfig(config: *mut c_int) -> Result<(), CuError> {
        current()?;
        // CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE, fixed, as the runtime reports.
        // SAFETY: the caller's output pointer.
        unsafe { out(config, 1) }
    }

    fn cuCtxSetSharedMemConfig(config: c_int) -> Result<(), CuError> {
        current()?;
        // Default, four- or eight-byte banks: the bank size is fixed (deprecated hint).
        if !(0..=2).contains(&config) {
            return Err(CuError::INVALID_VALUE);
        }
        Ok(())
    }

    fn cuCtxResetPersistingL2Cache() -> Result<(), CuError> {
        // No line is ever persisting (the persisting L2 size is 0).
        current().map(drop)
    }

    fn cuCtxEnablePeerAccess(peer: CUcontext, flags: c_uint) -> Result<(), CuError> {
        current()?;
        if !is_context(peer as usize) {
            return Err(CuError::INVALID_CONTEXT);
        }
        if flags != 0 {
            return Err(CuError::INVALID_VALUE);
        }
        // Every context is on the one device: no peer to reach (as the runtime answers).
        Err(CuError(vcuda_protocol::status::PEER_ACCESS_UNSUPPORTED))
    }

    fn cuCtxDisablePeerAccess(peer: CUcontext) -> Result<(), CuError> {
        current()?;
        if !is_context(peer as usize) {
            return Err(CuError::INVALID_CONTEXT);
        }
        // CUDA_ERROR_PEER_ACCESS_NOT_ENABLED: it never was.
        Err(CuError(705))
    }

    fn cuDeviceCanAccessPeer(can: *mut c_int, dev: c_int, peer: c_int) -> Result<(), CuError> {
        check_device(dev)?;
        check_device(peer)?;
        // A device and itself: no (and no error), as the runtime answers.
        // SAFETY: the caller's output pointer.
        unsafe { out(can, 0) }
    }

    fn cuCtxGetFlags(flags: *mut c_uint) -> Result<(), CuError> {
        let c = current()?;
        let f = with(|m| m.get(&c).map_or(0, |c| c.flags));
        // SAFETY: the caller's output pointer.
        unsafe { out(flags, f) }
    }

    fn cuCtxGetApiVersion(ctx: CUcontext, version: *mut c_uint) -> Result<(), CuError> {
        let h = if ctx.is_null() { current()? } else { ctx as usize };
        if !is_context(h) {
            return Err(CuError::INVALID_CONTEXT);
        }
        // SAFETY: the caller's output pointer.
        unsafe { out(version, 3020) }
    }

    fn cuFlushGPUDirectRDMAWrites(target: c_int, scope: c_int) -> Result<(), CuError> {
        // As cudaDeviceFlushGPUDirectRDMAWrites (CU_FLUSH_GPU_DIRECT_RDMA_WRITES_* equal
        // the runtime's values): nothing writes device memory that way here.
        current()?;
        Ok(crate::core::device::flush_rdma_args(target, scope)?)
    }

    fn cuCtxSynchronize() -> Result<(), CuError> {
        current()?;
        crate::core::device::device_synchronize().map_err(crate::error::CuError::from)
    }

    fn cuCtxSynchronize_v2(ctx: CUcontext) -> Result<(), CuError> {
        // Contexts share the session: synchronizing one waits for all of them.
        let h = if ctx.is_null() { current()? } else { ctx as usize };
        if !is_context(h) {
            return Err(CuError::INVALID_CONTEXT);
        }
        crate::core::device::device_synchronize().map_err(crate::error::CuError::from)
    }

    fn cuCtxSetLimit(limit: c_int, value: usize) -> Result<(), CuError> {
        current()?;
        // CUlimit and cudaLimit number alike.
        crate::core::device::device_set_limit(limit, value).map_err(crate::error::CuError::from)
    }

    fn cuCtxGetLimit(value: *mut usize, limit: c_int) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointer.
        unsafe { crate::abi::device_args::device_get_limit(value, limit) }.map_err(crate::error::CuError::from)
    }

    fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointers.
        unsafe { crate::abi::device_args::mem_get_info(free, total) }.map_err(crate::error::CuError::from)
    }

    fn cuGetErrorName(error: u32, name: *mut *const c_char) -> Result<(), CuError> {
        let n = crate::cu_names::name(error);
        // SAFETY: the caller's output pointer; the names are static.
        unsafe { out(name, n.map_or(std::ptr::null(), CStr::as_ptr))? };
        n.map(drop).ok_or(CuError::INVALID_VALUE)
    }

    fn cuGetErrorString(error: u32, text: *mut *const c_char) -> Result<(), CuError> {
        // The runtime's descriptions, under the same numbers.
        let t = crate::cu_names::name(error).and_then(|_| describe(error));
        // SAFETY: the caller's output pointer; the texts are static.
        unsafe { out(text, t.map_or(std::ptr::null(), CStr::as_ptr))? };
        t.map(drop).ok_or(CuError::INVALID_VALUE)
    }

    fn cuProfilerStart() -> Result<(), CuError> {
        Ok(())
    }

    fn cuProfilerStop() -> Result<(), CuError> {
        Ok(())
    }
}

thread_local! {
    /// Contexts pushed over (`cuCtxPushCurrent`), innermost last.
    static STACK: std::cell::RefCell<Vec<usize>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The runtime's description of `code` as a C string (kept for the process's life).
fn describe(code: u32) -> Option<&'static CStr> {
    static TEXTS: Mutex<Option<HashMap<u32, &'static CStr>>> = Mutex::new(None);
    let text = status::describe(code)?.1;
    let mut g = TEXTS.lock().unwrap_or_else(|e| e.into_inner());
    let m = g.get_or_insert_with(HashMap::new);
    Some(*m.entry(code).or_insert_with(|| {
        let s = std::ffi::CString::new(text).unwrap_or_default();
        Box::leak(s.into_boxed_c_str())
    }))
}
