// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The driver's module and library calls (`cuModule*`, `cuLibrary*`, `cuKernel*`,
//! `cuFunc*`): shims over `core::module`.
//!
//! The library API (CUDA 12): a library is a module loaded for the whole process, a kernel
//! the function it holds; cuda-python's `cuda.core` and Numba load code this way.
//! `CUlibrary` is a `CUmodule` here and `CUkernel` a `CUfunction`, which `cuLaunchKernel`
//! takes either way (as on CUDA 12).

use std::ffi::{c_char, c_int, c_uint, c_void};

use super::out;
use crate::abi::module_args::{c_name, enumerate, load, load_file};
use crate::core::function::Function;
use crate::core::module::{
    Module, check_module, function, function_count, get_function, get_global, get_managed,
    tensor_map_encode, tensor_map_replace_address, unload_library, unload_module,
};
use crate::error::CuError;
use crate::ffi::CUdeviceptr;

/// Writes a variable's address and size through the caller's optional output pointers.
///
/// # Safety
///
/// Each pointer is null or valid for a write.
unsafe fn global_out(
    dptr: *mut CUdeviceptr,
    bytes: *mut usize,
    (addr, size): (u64, u64),
) -> Result<(), CuError> {
    if !dptr.is_null() {
        // SAFETY: the caller's output pointer (non-null).
        unsafe { out(dptr, addr)? };
    }
    if !bytes.is_null() {
        // SAFETY: the caller's output pointer (non-null).
        unsafe { out(bytes, size as usize)? };
    }
    Ok(())
}

/// `CUtensorMap`: 128 bytes, 64-byte aligned (128 from CUDA 13's headers on).
type TensorMap = [u64; 16];

/// Copies the first `n` (at most `N`) entries of a C array into a zeroed `[T; N]`.
///
/// # Safety
///
/// `p` is null or valid for reads of `n` entries.
unsafe fn array<T: Copy + Default, const N: usize>(
    p: *const T,
    n: usize,
) -> Result<[T; N], CuError> {
    let mut a = [T::default(); N];
    if n == 0 {
        return Ok(a);
    }
    if p.is_null() || n > N {
        return Err(CuError::INVALID_VALUE);
    }
    // SAFETY: non-null (checked) and valid for `n` reads (the caller's guarantee).
    a[..n].copy_from_slice(unsafe { std::slice::from_raw_parts(p, n) });
    Ok(a)
}

/// Checks a tensor map pointer as the driver does (non-null, 64-byte aligned).
fn map_ptr(m: *mut TensorMap) -> Result<*mut TensorMap, CuError> {
    if m.is_null() || !(m as usize).is_multiple_of(64) {
        return Err(CuError::INVALID_VALUE);
    }
    Ok(m)
}

entry_lib! {
    fn cuTensorMapEncodeTiled(m: *mut TensorMap, data_type: c_uint, rank: c_uint, address: *mut c_void, global_dim: *const u64, global_strides: *const u64, box_dim: *const u32, element_strides: *const u32, interleave: c_uint, swizzle: c_uint, l2_promotion: c_uint, oob_fill: c_uint) -> Result<(), CuError> {
        let m = map_ptr(m)?;
        if !(1..=5).contains(&rank) {
            return Err(CuError::INVALID_VALUE);
        }
        let n = rank as usize;
        // SAFETY: the caller's arrays of `rank` (strides: `rank - 1`) entries (the API's
        // contract); `rank` is at most 5 (checked).
        let req = unsafe {
            vcuda_protocol::TensorMapEncodeReq {
                data_type,
                rank,
                address: address as u64,
                global_dim: array(global_dim, n)?,
                global_strides: array(global_strides, n - 1)?,
                box_dim: array(box_dim, n)?,
                element_strides: array(element_strides, n)?,
                interleave,
                swizzle,
                l2_promotion,
                oob_fill,
            }
        };
        let map = tensor_map_encode(&req)?;
        // SAFETY: the caller's output tensor map (non-null and aligned, checked).
        unsafe { out(m, map) }
    }

    fn cuTensorMapReplaceAddress(m: *mut TensorMap, address: *mut c_void) -> Result<(), CuError> {
        let m = map_ptr(m)?;
        // SAFETY: the caller's tensor map (non-null and aligned, checked; the API's contract
        // makes it readable).
        let map = tensor_map_replace_address(unsafe { m.read() }, address as u64)?;
        // SAFETY: as above, writable.
        unsafe { out(m, map) }
    }

    fn cuModuleLoadData(m: *mut *mut Module, image: *const c_void) -> Result<(), CuError> {
        // SAFETY: the caller's module image (the API's contract).
        let module = unsafe { load(image, false) }?;
        // SAFETY: the caller's output pointer.
        unsafe { out(m, module) }
    }

    fn cuModuleLoadFatBinary(m: *mut *mut Module, image: *const c_void) -> Result<(), CuError> {
        // SAFETY: the caller's module image (the API's contract).
        let module = unsafe { load(image, false) }?;
        // SAFETY: the caller's output pointer.
        unsafe { out(m, module) }
    }

    fn cuModuleLoadDataEx(m: *mut *mut Module, image: *const c_void, _n: c_uint, _opts: *mut c_int, _vals: *mut *mut c_void) -> Result<(), CuError> {
        // JIT options (log buffers, optimization level) ask for nothing the backend needs;
        // its JIT log stays on the backend.
        // SAFETY: the caller's module image (the API's contract).
        let module = unsafe { load(image, false) }?;
        // SAFETY: the caller's output pointer.
        unsafe { out(m, module) }
    }

    fn cuModuleUnload(m: *mut Module) -> Result<(), CuError> {
        unload_module(m)
    }

    fn cuModuleGetFunction(pf: *mut *const Function, mp: *mut Module, name: *const c_char) -> Result<(), CuError> {
        // SAFETY: the caller's NUL-terminated name (the API's contract).
        let f = get_function(mp, unsafe { c_name(name)? })?;
        // SAFETY: the caller's output pointer; the function lives as long as its module.
        unsafe { out(pf, f) }
    }

    fn cuModuleGetGlobal_v2(dptr: *mut CUdeviceptr, bytes: *mut usize, m: *mut Module, name: *const c_char) -> Result<(), CuError> {
        // SAFETY: the caller's NUL-terminated name (the API's contract).
        let g = get_global(m, unsafe { c_name(name)? })?;
        // SAFETY: the caller's output pointers, each optional.
        unsafe { global_out(dptr, bytes, g) }
    }

    fn cuLibraryLoadData(lib: *mut *mut Module, code: *const c_void, _jit_opts: *mut c_int, _jit_vals: *mut *mut c_void, _n_jit: c_uint, _lib_opts: *mut c_int, _lib_vals: *mut *mut c_void, _n_lib: c_uint) -> Result<(), CuError> {
        // SAFETY: the caller's module image (the API's contract).
        let module = unsafe { load(code, true) }?;
        // SAFETY: the caller's output pointer.
        unsafe { out(lib, module) }
    }

    fn cuLibraryUnload(lib: *mut Module) -> Result<(), CuError> {
        unload_library(lib)
    }

    fn cuLibraryGetModule(m: *mut *mut Module, lib: *mut Module) -> Result<(), CuError> {
        check_module(lib)?;
        // SAFETY: the caller's output pointer.
        unsafe { out(m, lib) }
    }

    fn cuLibraryGetKernel(k: *mut *const Function, lib: *mut Module, name: *const c_char) -> Result<(), CuError> {
        // SAFETY: the caller's NUL-terminated name (the API's contract).
        let f = get_function(lib, unsafe { c_name(name)? })?;
        // SAFETY: the caller's output pointer; the kernel lives as long as its library.
        unsafe { out(k, f) }
    }

    fn cuKernelGetFunction(f: *mut *const Function, k: *const Function) -> Result<(), CuError> {
        function(k)?;
        // SAFETY: the caller's output pointer.
        unsafe { out(f, k) }
    }

    fn cuLibraryGetManaged(dptr: *mut CUdeviceptr, bytes: *mut usize, lib: *mut Module, name: *const c_char) -> Result<(), CuError> {
        // SAFETY: the caller's NUL-terminated name (the API's contract).
        let g = get_managed(lib, unsafe { c_name(name)? })?;
        // SAFETY: the caller's output pointers, each optional.
        unsafe { global_out(dptr, bytes, g) }
    }

    fn cuLibraryGetGlobal(dptr: *mut CUdeviceptr, bytes: *mut usize, lib: *mut Module, name: *const c_char) -> Result<(), CuError> {
        // SAFETY: the caller's NUL-terminated name (the API's contract).
        let g = get_global(lib, unsafe { c_name(name)? })?;
        // SAFETY: the caller's output pointers, each optional.
        unsafe { global_out(dptr, bytes, g) }
    }

    fn cuLibraryLoadFromFile(lib: *mut *mut Module, file: *const c_char, _jit_opts: *mut c_int, _jit_vals: *mut *mut c_void, _n_jit: c_uint, _lib_opts: *mut c_int, _lib_vals: *mut *mut c_void, _n_lib: c_uint) -> Result<(), CuError> {
        // SAFETY: the caller's path, null or NUL-terminated (the API's contract).
        let module = unsafe { load_file(file, true) }?;
        // SAFETY: the caller's output pointer.
        unsafe { out(lib, module) }
    }

    fn cuLibraryGetKernelCount(count: *mut c_uint, lib: *mut Module) -> Result<(), CuError> {
        let n = function_count(lib)?;
        // SAFETY: the caller's output pointer.
        unsafe { out(count, n) }
    }

    fn cuLibraryEnumerateKernels(ks: *mut *const Function, num: c_uint, lib: *mut Module) -> Result<(), CuError> {
        // SAFETY: the caller's array of `num` handles (the API's contract).
        unsafe { enumerate(ks, num, lib) }.map(drop)
    }

    fn cuModuleGetFunctionCount(count: *mut c_uint, m: *mut Module) -> Result<(), CuError> {
        let n = function_count(m)?;
        // SAFETY: the caller's output pointer.
        unsafe { out(count, n) }
    }

    fn cuModuleEnumerateFunctions(fs: *mut *const Function, num: c_uint, m: *mut Module) -> Result<(), CuError> {
        // SAFETY: the caller's array of `num` handles (the API's contract).
        unsafe { enumerate(fs, num, m) }.map(drop)
    }

    fn cuFuncGetName(name: *mut *const c_char, f: *const Function) -> Result<(), CuError> {
        let f = function(f)?;
        // SAFETY: the caller's output pointer; the name lives as long as the function.
        unsafe { out(name, f.name.as_ptr()) }
    }

    fn cuKernelGetName(name: *mut *const c_char, k: *const Function) -> Result<(), CuError> {
        let f = function(k)?;
        // SAFETY: the caller's output pointer; the name lives as long as the kernel.
        unsafe { out(name, f.name.as_ptr()) }
    }

    fn cuFuncGetModule(m: *mut *mut Module, f: *const Function) -> Result<(), CuError> {
        let f = function(f)?;
        if f.module == 0 {
            // A kernel of the runtime's registered code: its module is the runtime's own.
            return Err(CuError::NOT_FOUND);
        }
        // SAFETY: the caller's output pointer.
        unsafe { out(m, f.module as *mut Module) }
    }

    fn cuKernelGetLibrary(lib: *mut *mut Module, k: *const Function) -> Result<(), CuError> {
        let f = function(k)?;
        if f.module == 0 {
            // A kernel of the runtime's registered code: its library is the runtime's own.
            return Err(CuError::NOT_FOUND);
        }
        // SAFETY: the caller's output pointer.
        unsafe { out(lib, f.module as *mut Module) }
    }
}
