// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Modules and their functions and globals (`cuModule*`, `cuLink*`, `cuFunc*`).

use std::ffi::{CStr, c_uint, c_void};

use cudarc::driver::sys::{
    self, CUdeviceptr, CUfunction, CUfunction_attribute, CUmodule, CUresult,
};

use super::{DrvResult, ok};
use crate::executor::cuda::ffi;

/// Bytes of the JIT compiler's error log kept when a module fails to load.
pub const JIT_LOG_LEN: usize = 16 << 10;

/// Loads a module image (fat binary, cubin or NUL-terminated PTX) into the current context.
/// On failure the JIT compiler's error log (PTX that does not compile) is logged.
///
/// # Safety
///
/// `image` points to a well-formed image ([`super::super::image::check`]) that stays alive and
/// unchanged during the call, 8-byte aligned.
pub unsafe fn module_load_data(image: *const u8) -> DrvResult<CUmodule> {
    use sys::CUjit_option::{CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    let mut m = std::ptr::null_mut();
    let mut log = vec![0u8; JIT_LOG_LEN];
    let mut options = [CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
    // The driver reads option values as pointer-sized words: a pointer, then a size.
    let mut values: [*mut c_void; 2] = [log.as_mut_ptr().cast(), JIT_LOG_LEN as *mut c_void];
    // SAFETY: `image` is a well-formed, 8-byte aligned image that stays alive and unchanged
    // during the call (the caller's guarantee); `m` is a valid out pointer; the two options
    // and their values are matching arrays of 2, and the log buffer holds the size given.
    let r = ok(unsafe {
        ffi::cuModuleLoadDataEx(
            &mut m,
            image.cast(),
            options.len() as c_uint,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        )
    });
    if r.is_err() {
        let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
        if end > 0 {
            log::warn!(
                "the driver could not load a module: {}",
                String::from_utf8_lossy(&log[..end]).trim_end()
            );
        }
    }
    r.map(|()| m)
}

/// Links PTX translation units (relocatable device code, `-rdc`) with the driver's JIT
/// linker and loads the result into the current context. On failure the linker's error log
/// is logged.
///
/// # Safety
///
/// A context is current and [`Loaded::linker`](super::Loaded::linker) said the entry points exist.
/// Each unit is NUL-terminated PTX.
pub unsafe fn module_link_ptx(units: &[&[u8]]) -> DrvResult<CUmodule> {
    use sys::CUjit_option::{CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    let mut log = vec![0u8; JIT_LOG_LEN];
    let mut options = [CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
    let mut values: [*mut c_void; 2] = [log.as_mut_ptr().cast(), JIT_LOG_LEN as *mut c_void];
    let mut state = std::ptr::null_mut();
    // SAFETY: matching option and value arrays of 2; the log buffer holds the size given and
    // outlives the link state (destroyed below, before `log` drops).
    ok(unsafe {
        ffi::cuLinkCreate_v2(
            options.len() as c_uint,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
            &mut state,
        )
    })?;
    let linked = (|| {
        for (i, unit) in units.iter().enumerate() {
            if unit.last() != Some(&0) {
                return Err(CUresult::CUDA_ERROR_INVALID_PTX);
            }
            let name = format!("unit{i}\0");
            // SAFETY: `state` is the live link state; `unit` is NUL-terminated PTX of the
            // given size and `name` a NUL-terminated string, both alive during the call,
            // which copies them; no per-input options.
            ok(unsafe {
                ffi::cuLinkAddData_v2(
                    state,
                    sys::CUjitInputType::CU_JIT_INPUT_PTX,
                    unit.as_ptr().cast_mut().cast(),
                    unit.len(),
                    name.as_ptr().cast(),
                    0,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                )
            })?;
        }
        let mut cubin = std::ptr::null_mut();
        let mut size = 0usize;
        // SAFETY: `state` is live; the out pointers are valid. The cubin it returns lives
        // until the state is destroyed, which happens after the load below.
        ok(unsafe { ffi::cuLinkComplete(state, &mut cubin, &mut size) })?;
        let mut m = std::ptr::null_mut();
        // SAFETY: `cubin` is the linker's own image, alive until cuLinkDestroy below; a
        // context is current (the caller's guarantee); `m` is a valid out pointer.
        ok(unsafe {
            ffi::cuModuleLoadDataEx(&mut m, cubin, 0, std::ptr::null_mut(), std::ptr::null_mut())
        })?;
        Ok(m)
    })();
    // SAFETY: `state` came from cuLinkCreate and is destroyed once.
    let _ = unsafe { ffi::cuLinkDestroy(state) };
    if linked.is_err() {
        let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
        if end > 0 {
            log::warn!(
                "the driver could not link the PTX units of a module: {}",
                String::from_utf8_lossy(&log[..end]).trim_end()
            );
        }
    }
    linked
}

/// Unloads a module.
///
/// # Safety
///
/// `m` is live; nothing uses it or its functions afterwards.
pub unsafe fn module_unload(m: CUmodule) -> DrvResult<()> {
    // SAFETY: `m` is a live module that the caller, its functions and its variables use no
    // more, so it is unloaded once.
    ok(unsafe { ffi::cuModuleUnload(m) })
}

/// A kernel by mangled name.
///
/// # Safety
///
/// `m` is live.
pub unsafe fn module_get_function(m: CUmodule, name: &CStr) -> DrvResult<CUfunction> {
    let mut f = std::ptr::null_mut();
    // SAFETY: `m` is a live module (the caller's guarantee); `name` is NUL-terminated;
    // `f` is a valid out pointer.
    ok(unsafe { ffi::cuModuleGetFunction(&mut f, m, name.as_ptr()) })?;
    Ok(f)
}

/// The mangled names of a module's kernels (`cuModuleGetFunctionCount`,
/// `cuModuleEnumerateFunctions` and `cuFuncGetName`, driver 12.4+; `CUDA_ERROR_NOT_FOUND`
/// where the driver lacks them).
///
/// # Safety
///
/// `m` is live.
pub unsafe fn module_function_names(m: CUmodule) -> DrvResult<Vec<String>> {
    let mut n: std::ffi::c_uint = 0;
    // SAFETY: `m` is a live module (the caller's guarantee); `n` a valid out pointer.
    ok(unsafe { ffi::cuModuleGetFunctionCount(&mut n, m) })?;
    let mut fs: Vec<CUfunction> = vec![std::ptr::null_mut(); n as usize];
    // SAFETY: `fs` has room for `n` handles.
    ok(unsafe { ffi::cuModuleEnumerateFunctions(fs.as_mut_ptr(), n, m) })?;
    fs.iter()
        .map(|&f| {
            let mut name: *const std::ffi::c_char = std::ptr::null();
            // SAFETY: `f` is a function of the live module; `name` a valid out pointer.
            ok(unsafe { ffi::cuFuncGetName(&mut name, f) })?;
            if name.is_null() {
                return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
            }
            // SAFETY: the driver returns a NUL-terminated name that lives with the module.
            let s = unsafe { std::ffi::CStr::from_ptr(name) };
            Ok(s.to_string_lossy().into_owned())
        })
        .collect()
}

/// A module variable by mangled name: `(address, size)`.
///
/// # Safety
///
/// `m` is live.
pub unsafe fn module_get_global(m: CUmodule, name: &CStr) -> DrvResult<(CUdeviceptr, usize)> {
    let (mut p, mut n) = (0, 0usize);
    // SAFETY: `m` is a live module (the caller's guarantee); `name` is NUL-terminated;
    // `p` and `n` are valid out pointers.
    ok(unsafe { ffi::cuModuleGetGlobal_v2(&mut p, &mut n, m, name.as_ptr()) })?;
    Ok((p, n))
}

/// One function attribute.
///
/// # Safety
///
/// `f` is live.
pub unsafe fn func_get_attribute(f: CUfunction, a: CUfunction_attribute) -> DrvResult<i32> {
    let mut v = 0;
    // SAFETY: `f` is a live function (the caller's guarantee); `v` is a valid out pointer.
    ok(unsafe { ffi::cuFuncGetAttribute(&mut v, a, f) })?;
    Ok(v)
}

/// Sets a function attribute.
///
/// # Safety
///
/// `f` is live.
pub unsafe fn func_set_attribute(f: CUfunction, a: CUfunction_attribute, v: i32) -> DrvResult<()> {
    // SAFETY: `f` is a live function (the caller's guarantee); the driver validates the
    // attribute and value.
    ok(unsafe { ffi::cuFuncSetAttribute(f, a, v) })
}

/// `(offset, size)` of parameter `index`; `Err(CUDA_ERROR_INVALID_VALUE)` past the last.
///
/// # Safety
///
/// `f` is live and [`Loaded::param_info`](super::Loaded::param_info) said the entry point exists.
pub unsafe fn func_param_info(f: CUfunction, index: usize) -> DrvResult<(usize, usize)> {
    let (mut off, mut size) = (0usize, 0usize);
    // SAFETY: `f` is a live function and the entry point exists (the caller's guarantee,
    // so cudarc finds the symbol); `off` and `size` are valid out pointers.
    ok(unsafe { ffi::cuFuncGetParamInfo(f, index, &mut off, &mut size) })?;
    Ok((off, size))
}

/// `cuTensorMapEncodeTiled` of `req` (whose arrays hold the five entries the driver may
/// read): the map's 128 bytes. The driver checks every value.
pub fn tensor_map_encode_tiled(req: &vcuda_protocol::TensorMapEncodeReq) -> DrvResult<[u64; 16]> {
    if !(1..=5).contains(&req.rank) {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    let mut m = sys::CUtensorMap { opaque: [0; 16] };
    // SAFETY: `m` is a writable, suitably aligned tensor map; the arrays hold 5 (dimensions,
    // boxes, element strides) and 4 (strides) entries and the driver reads `rank` (at most
    // 5, checked) and `rank - 1` of them; the address is only encoded, never dereferenced
    // here; the enumerations are plain `u32`s the driver checks.
    ok(unsafe {
        ffi::cuTensorMapEncodeTiled(
            &mut m,
            req.data_type,
            req.rank,
            req.address as *mut c_void,
            req.global_dim.as_ptr(),
            req.global_strides.as_ptr(),
            req.box_dim.as_ptr(),
            req.element_strides.as_ptr(),
            req.interleave,
            req.swizzle,
            req.l2_promotion,
            req.oob_fill,
        )
    })?;
    Ok(m.opaque)
}

/// `cuTensorMapReplaceAddress` on a copy of `map`.
pub fn tensor_map_replace_address(map: [u64; 16], address: u64) -> DrvResult<[u64; 16]> {
    let mut m = sys::CUtensorMap { opaque: map };
    // SAFETY: `m` is a writable, suitably aligned tensor map (its contents are the guest's,
    // which the driver checks); the address is only encoded.
    ok(unsafe { ffi::cuTensorMapReplaceAddress(&mut m, address as *mut c_void) })?;
    Ok(m.opaque)
}
