// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The runtime's library API (CUDA 12.5+): `cudaLibraryLoadData` and
//! `cudaLibraryLoadFromFile` load code for the whole process, as the driver's `cuLibrary*`
//! calls do (both are shims over `core::module`): a `cudaLibrary_t` is the driver's `CUlibrary` (a module
//! here) and a `cudaKernel_t` from it the driver's `CUkernel` (a function), which the
//! runtime's launches, function attribute calls and graph kernel nodes take in place of a
//! kernel's host stub. `cudaGetKernel` gives the `cudaKernel_t` of a kernel the program
//! registered: the driver function `cudaGetFuncBySymbol` gives (nvcc's own launch stubs
//! keep using the host stub, `__cudaGetKernel`). `cudaLibraryGetManaged` and
//! `cudaLibraryGetUnifiedFunction` are not supported.

use crate::abi::module_args::c_name;
use crate::client;
use crate::core::library::*;
use crate::core::module::{self, Module};
use crate::error::Error;
use crate::ffi::write_out;
use std::ffi::{c_char, c_int, c_uint, c_void};

entry! {
    fn cudaLibraryLoadData(lib: *mut *mut c_void, code: *const c_void, _jit_opts: *mut c_int, _jit_vals: *mut *mut c_void, _n_jit: c_uint, _lib_opts: *mut c_int, _lib_vals: *mut *mut c_void, _n_lib: c_uint) {
        client::client()?;
        // SAFETY: the caller's module image (the API's contract).
        let m = unsafe { crate::abi::module_args::load(code, true) }.map_err(cu)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(lib, m.cast::<c_void>()) }
    }

    fn cudaLibraryLoadFromFile(lib: *mut *mut c_void, file: *const c_char, _jit_opts: *mut c_int, _jit_vals: *mut *mut c_void, _n_jit: c_uint, _lib_opts: *mut c_int, _lib_vals: *mut *mut c_void, _n_lib: c_uint) {
        client::client()?;
        // SAFETY: the caller's path, null or NUL-terminated (the API's contract).
        let m = unsafe { crate::abi::module_args::load_file(file, true) }.map_err(cu)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(lib, m.cast::<c_void>()) }
    }

    fn cudaLibraryUnload(lib: *mut c_void) {
        client::client()?;
        // The unload forgets the library's kernels.
        module::unload_library(lib.cast::<Module>()).map_err(cu)
    }

    fn cudaLibraryGetKernel(k: *mut *const c_void, lib: *mut c_void, name: *const c_char) {
        client::client()?;
        // SAFETY: the caller's NUL-terminated name (the API's contract).
        let f = module::get_function(lib.cast(), unsafe { c_name(name) }.map_err(cu)?).map_err(cu)?;
        kernels(|t| t.insert(f as usize, lib as usize));
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(k, f.cast::<c_void>()) }
    }

    fn cudaLibraryGetGlobal(dptr: *mut *mut c_void, bytes: *mut usize, lib: *mut c_void, name: *const c_char) {
        client::client()?;
        // SAFETY: the caller's NUL-terminated name (the API's contract).
        let (addr, size) = module::get_global(lib.cast(), unsafe { c_name(name) }.map_err(cu)?).map_err(cu)?;
        // SAFETY: the caller's output pointers, each optional.
        unsafe {
            if !dptr.is_null() {
                write_out(dptr, addr as *mut c_void)?;
            }
            if !bytes.is_null() {
                write_out(bytes, size as usize)?;
            }
        }
        Ok(())
    }

    fn cudaLibraryGetKernelCount(count: *mut c_uint, lib: *mut c_void) {
        client::client()?;
        let n = module::function_count(lib.cast()).map_err(cu)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(count, n) }
    }

    fn cudaLibraryEnumerateKernels(ks: *mut *const c_void, num: c_uint, lib: *mut c_void) {
        client::client()?;
        // SAFETY: the caller's array of `num` handles (the API's contract).
        let fs = unsafe { crate::abi::module_args::enumerate(ks.cast(), num, lib.cast()) }.map_err(cu)?;
        for f in fs {
            kernels(|t| t.insert(f as usize, lib as usize));
        }
        Ok(())
    }

    fn cudaGetKernel(k: *mut *const c_void, entry: *const c_void) {
        // A driver function, as CUDA's `cudaKernel_t` is a `CUkernel` the driver API takes.
        let f = crate::core::launch::driver_function(entry)?;
        kernels(|t| t.insert(f, 0));
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(k, f as *const c_void) }
    }

    fn cudaKernelSetAttributeForDevice(k: *const c_void, attr: c_int, value: c_int, device: c_int) {
        let c = client::client()?;
        if device < 0 || device >= c.device_count() {
            return Err(Error::INVALID_DEVICE);
        }
        let f = crate::core::launch::loaded(c, k)?;
        crate::core::launch::set_attribute(c, f.handle, attr, value)
    }
}
