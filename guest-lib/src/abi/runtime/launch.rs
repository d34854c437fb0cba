// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Registration of fat binaries, kernels and variables, and kernel launches.
//!
//! Per launch, nvcc's stub calls `__cudaPushCallConfiguration`, `__cudaGetKernel` (first
//! launch only; it must succeed without the backend, so the kernel handle is the host stub's
//! address), `__cudaPopCallConfiguration` and `__cudaLaunchKernel` (CUDA 13) or
//! `cudaLaunchKernel` (CUDA 12). A launch is checked here (known kernel, valid
//! configuration, parameter layout) and sent without waiting; failures while it runs
//! surface later, as on a GPU.

use crate::client::{self};
use crate::core::launch::*;
use crate::core::registry;
use crate::error::Error;
use crate::ffi::{KernelArgs, cudaFuncAttributes, cudaStream_t, dim3, write_out};
use crate::state::{self, CallConfig};
use std::ffi::{c_char, c_int, c_uint, c_void};

entry_raw! {
    fn __cudaRegisterFatBinary(wrapper: *mut c_void) -> *mut *mut c_void {
        crate::logging::init();
        registry::register_fatbin(wrapper)
    }

    fn __cudaRegisterFatBinaryEnd(_handle: *mut *mut c_void) -> () {}

    fn __cudaUnregisterFatBinary(_handle: *mut *mut c_void) -> () {
        // Modules go away with the session; the registry stays valid for late callers.
    }

    fn __cudaRegisterFunction(
        handle: *mut *mut c_void,
        host_fun: *const c_char,
        device_fun: *mut c_char,
        _device_name: *const c_char,
        _thread_limit: c_int,
        _tid: *mut c_void,
        _bid: *mut c_void,
        _bdim: *mut dim3,
        _gdim: *mut dim3,
        _wsize: *mut c_int,
    ) -> () {
        // SAFETY: `handle` is what __cudaRegisterFatBinary returned.
        let Some(fb) = (unsafe { registry::fatbin(handle) }) else { return };
        // SAFETY: nvcc's registration code passes NUL-terminated names from the program image.
        match unsafe { crate::ffi::c_str(device_fun) }.map(|s| s.to_string_lossy().into_owned()) {
            Ok(name) => registry::register_function(fb, host_fun as usize, name),
            Err(_) => log::warn!("__cudaRegisterFunction without a name"),
        }
    }

    fn __cudaRegisterVar(
        handle: *mut *mut c_void,
        host_var: *mut c_char,
        device_address: *mut c_char,
        _device_name: *const c_char,
        _ext: c_int,
        _size: usize,
        _constant: c_int,
        _global: c_int,
    ) -> () {
        // SAFETY: `handle` is what __cudaRegisterFatBinary returned.
        let Some(fb) = (unsafe { registry::fatbin(handle) }) else { return };
        // SAFETY: nvcc's registration code passes NUL-terminated names from the program image.
        match unsafe { crate::ffi::c_str(device_address) }.map(|s| s.to_string_lossy().into_owned()) {
            Ok(name) => registry::register_var(fb, host_var as usize, name),
            Err(_) => log::warn!("__cudaRegisterVar without a name"),
        }
    }

    fn __cudaRegisterManagedVar(
        handle: *mut *mut c_void,
        host_var_ptr: *mut *mut c_void,
        device_address: *mut c_char,
        _device_name: *const c_char,
        _ext: c_int,
        size: usize,
        _constant: c_int,
        _global: c_int,
    ) -> () {
        // The variable moves to managed memory when its module loads (which
        // __cudaInitModule does before the host code's first access): see
        // `registry::FatbinReg::module`. Until then, and where managed memory is not
        // supported, the host side gets zeroed memory of its own, so host code reading
        // the variable does not crash.
        // SAFETY: `handle` is what __cudaRegisterFatBinary returned.
        let Some(fb) = (unsafe { registry::fatbin(handle) }) else { return };
        // SAFETY: nvcc's registration code passes NUL-terminated names from the program image.
        match unsafe { crate::ffi::c_str(device_address) }.map(|s| s.to_string_lossy().into_owned()) {
            Ok(name) if !host_var_ptr.is_null() => {
                registry::register_managed_var(&fb, host_var_ptr as usize, name, size)
            }
            _ => log::warn!("__cudaRegisterManagedVar without a name or host pointer"),
        }
        if !host_var_ptr.is_null() {
            let mem: &'static mut [u64] = Vec::leak(vec![0u64; size.div_ceil(8).max(1)]);
            // SAFETY: nvcc passes the address of the variable's host pointer, which the
            // runtime fills in at registration.
            unsafe { *host_var_ptr = mem.as_mut_ptr().cast() };
        }
    }

    fn __cudaPushCallConfiguration(grid: dim3, block: dim3, shmem: usize, stream: cudaStream_t) -> c_uint {
        state::push_config(CallConfig { grid, block, shmem, stream });
        0
    }

    fn __cudaInitModule(handle: *mut *mut c_void) -> c_char {
        // nvcc's host code calls this before its first access to a `__managed__` variable:
        // load the module now, which moves the variables to managed memory. On failure
        // (logged) the host code keeps its private zeroed copy.
        // SAFETY: `handle` is what __cudaRegisterFatBinary returned.
        if let Some(fb) = unsafe { registry::fatbin(handle) }
            && let Ok(c) = crate::client::client()
        {
            let _ = fb.module(c);
        }
        1
    }
}

entry! {
    fn __cudaPopCallConfiguration(grid: *mut dim3, block: *mut dim3, shmem: *mut usize, stream: *mut cudaStream_t) {
        let cfg = state::pop_config().ok_or(Error::MISSING_CONFIGURATION)?;
        // SAFETY: nvcc's stub passes pointers to its locals.
        unsafe {
            write_out(grid, cfg.grid)?;
            write_out(block, cfg.block)?;
            write_out(shmem, cfg.shmem)?;
            write_out(stream, cfg.stream)
        }
    }

    fn __cudaGetKernel(kernel: *mut *const c_void, host_fun: *const c_void) {
        // The kernel handle is the host stub: no backend round trip, and the stub caches it.
        func(host_fun)?;
        // SAFETY: nvcc's stub passes a pointer to its static.
        unsafe { write_out(kernel, host_fun) }
    }

    fn __cudaLaunchKernel(kernel: *const c_void, grid: dim3, block: dim3, args: *mut *mut c_void, shmem: usize, stream: cudaStream_t) {
        // SAFETY: the caller's kernel arguments (the API's contract).
        let args = unsafe { KernelArgs::new(args, std::ptr::null_mut()) };
        launch(kernel, grid, block, args, shmem, stream, false)
    }

    fn __cudaLaunchKernel_ptsz(kernel: *const c_void, grid: dim3, block: dim3, args: *mut *mut c_void, shmem: usize, stream: cudaStream_t) {
        // SAFETY: the caller's kernel arguments (the API's contract).
        let args = unsafe { KernelArgs::new(args, std::ptr::null_mut()) };
        launch(kernel, grid, block, args, shmem, stream, true)
    }

    fn cudaLaunchKernel(func: *const c_void, grid: dim3, block: dim3, args: *mut *mut c_void, shmem: usize, stream: cudaStream_t) {
        // SAFETY: the caller's kernel arguments (the API's contract).
        let args = unsafe { KernelArgs::new(args, std::ptr::null_mut()) };
        launch(func, grid, block, args, shmem, stream, false)
    }

    fn cudaLaunchKernel_ptsz(func: *const c_void, grid: dim3, block: dim3, args: *mut *mut c_void, shmem: usize, stream: cudaStream_t) {
        // SAFETY: the caller's kernel arguments (the API's contract).
        let args = unsafe { KernelArgs::new(args, std::ptr::null_mut()) };
        launch(func, grid, block, args, shmem, stream, true)
    }

    fn __v12_cudaLaunchKernel(func: *const c_void, grid: dim3, block: dim3, args: *mut *mut c_void, shmem: usize, stream: cudaStream_t) {
        // SAFETY: the caller's kernel arguments (the API's contract).
        let args = unsafe { KernelArgs::new(args, std::ptr::null_mut()) };
        as_v12(|| launch(func, grid, block, args, shmem, stream, false))
    }

    fn __v12_cudaLaunchKernel_ptsz(func: *const c_void, grid: dim3, block: dim3, args: *mut *mut c_void, shmem: usize, stream: cudaStream_t) {
        // SAFETY: the caller's kernel arguments (the API's contract).
        let args = unsafe { KernelArgs::new(args, std::ptr::null_mut()) };
        as_v12(|| launch(func, grid, block, args, shmem, stream, true))
    }

    fn __v12_cudaLaunchCooperativeKernel(func: *const c_void, grid: dim3, block: dim3, args: *mut *mut c_void, shmem: usize, stream: cudaStream_t) {
        // SAFETY: the caller's kernel arguments (the API's contract).
        let args = unsafe { KernelArgs::new(args, std::ptr::null_mut()) };
        as_v12(|| launch_as(func, grid, block, args, shmem, stream, false, Shape::Cooperative))
    }

    fn __v12_cudaLaunchCooperativeKernel_ptsz(func: *const c_void, grid: dim3, block: dim3, args: *mut *mut c_void, shmem: usize, stream: cudaStream_t) {
        // SAFETY: the caller's kernel arguments (the API's contract).
        let args = unsafe { KernelArgs::new(args, std::ptr::null_mut()) };
        as_v12(|| launch_as(func, grid, block, args, shmem, stream, true, Shape::Cooperative))
    }

    fn cudaLaunchCooperativeKernel(func: *const c_void, grid: dim3, block: dim3, args: *mut *mut c_void, shmem: usize, stream: cudaStream_t) {
        // SAFETY: the caller's kernel arguments (the API's contract).
        let args = unsafe { KernelArgs::new(args, std::ptr::null_mut()) };
        launch_as(func, grid, block, args, shmem, stream, false, Shape::Cooperative)
    }

    fn cudaLaunchCooperativeKernel_ptsz(func: *const c_void, grid: dim3, block: dim3, args: *mut *mut c_void, shmem: usize, stream: cudaStream_t) {
        // SAFETY: the caller's kernel arguments (the API's contract).
        let args = unsafe { KernelArgs::new(args, std::ptr::null_mut()) };
        launch_as(func, grid, block, args, shmem, stream, true, Shape::Cooperative)
    }

    fn cudaFuncGetParamInfo(host_fun: *const c_void, index: usize, offset: *mut usize, size: *mut usize) {
        let c = client::client()?;
        let f = func(host_fun)?.load(c)?;
        let &(off, len) = f.params.get(index).ok_or(Error::INVALID_VALUE)?;
        if offset.is_null() || size.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        // SAFETY: the caller's output pointers, checked for null.
        unsafe {
            write_out(offset, off as usize)?;
            write_out(size, len as usize)
        }
    }

    fn cudaFuncGetAttributes(attrs: *mut cudaFuncAttributes, host_fun: *const c_void) {
        let c = client::client()?;
        let f = loaded(c, host_fun)?;
        // SAFETY: output pointer from the caller, checked for null.
        unsafe { write_out(attrs, to_cuda(&current_attrs(f.handle, &f.attrs))) }
    }

    fn cudaFuncSetCacheConfig(host_fun: *const c_void, config: c_int) {
        // Not for a `cudaKernel_t` (CUDA's documentation says so).
        func(host_fun)?;
        if !(0..=3).contains(&config) {
            return Err(Error::INVALID_VALUE);
        }
        Ok(())
    }

    fn cudaFuncSetAttribute(host_fun: *const c_void, attribute: c_int, value: c_int) {
        let c = client::client()?;
        let f = loaded(c, host_fun)?;
        set_attribute(c, f.handle, attribute, value)
    }
}

entry! {
    fn cudaLaunchKernelExC(config: *const cudaLaunchConfig_t, func: *const c_void, args: *mut *mut c_void) {
        // SAFETY: the caller's kernel arguments (the API's contract).
        let args = unsafe { KernelArgs::new(args, std::ptr::null_mut()) };
        // SAFETY: the caller's configuration (the API's contract).
        unsafe { launch_ex_c(config, func, args, false) }
    }

    fn cudaLaunchKernelExC_ptsz(config: *const cudaLaunchConfig_t, func: *const c_void, args: *mut *mut c_void) {
        // SAFETY: the caller's kernel arguments (the API's contract).
        let args = unsafe { KernelArgs::new(args, std::ptr::null_mut()) };
        // SAFETY: the caller's configuration (the API's contract).
        unsafe { launch_ex_c(config, func, args, true) }
    }

    fn __v12_cudaLaunchKernelExC(config: *const cudaLaunchConfig_t, func: *const c_void, args: *mut *mut c_void) {
        // SAFETY: the caller's kernel arguments (the API's contract).
        let args = unsafe { KernelArgs::new(args, std::ptr::null_mut()) };
        // SAFETY: the caller's configuration (the API's contract).
        as_v12(|| unsafe { launch_ex_c(config, func, args, false) })
    }

    fn __v12_cudaLaunchKernelExC_ptsz(config: *const cudaLaunchConfig_t, func: *const c_void, args: *mut *mut c_void) {
        // SAFETY: the caller's kernel arguments (the API's contract).
        let args = unsafe { KernelArgs::new(args, std::ptr::null_mut()) };
        // SAFETY: the caller's configuration (the API's contract).
        as_v12(|| unsafe { launch_ex_c(config, func, args, true) })
    }

    fn cudaFuncGetName(name: *mut *const c_char, func: *const c_void) {
        let f = registry::function(func as usize).ok_or(Error::INVALID_DEVICE_FUNCTION)?;
        let mut g = NAMES.lock().unwrap_or_else(|e| e.into_inner());
        let s = g
            .get_or_insert_with(Default::default)
            .entry(func as usize)
            .or_insert_with(|| std::ffi::CString::new(f.name.clone()).unwrap_or_default());
        // SAFETY: the caller's output pointer, checked for null; the string lives on.
        unsafe { write_out(name, s.as_ptr()) }
    }

    fn cudaGetFuncBySymbol(out: *mut *const c_void, func: *const c_void) {
        let p = driver_function(func)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(out, p as *const c_void) }
    }
}

/// `cudaLaunchKernelExC`: the configuration and its attributes read from C.
///
/// # Safety
///
/// `config` is null or readable, and its `attrs` null or `num_attrs` attributes.
unsafe fn launch_ex_c(
    config: *const cudaLaunchConfig_t,
    func: *const c_void,
    args: KernelArgs,
    ptsz: bool,
) -> crate::error::Result<()> {
    // SAFETY: the caller's configuration, checked for null.
    let cfg = unsafe { config.as_ref() }.ok_or(Error::INVALID_VALUE)?;
    // SAFETY: `num_attrs` attributes at `attrs` (the API's contract).
    let attrs = unsafe { crate::ffi::slice_in(cfg.attrs, cfg.num_attrs as usize)? };
    launch_ex(cfg, attrs, func, args, ptsz)
}
