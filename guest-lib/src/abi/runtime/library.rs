// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The runtime's library API (CUDA 12.5+): `cudaLibraryLoadData` and
//! `cudaLibraryLoadFromFile` load code for the whole process, as the driver's `cuLibrary*`
//! calls do (`driver/exec.rs`): a `cudaLibrary_t` is the driver's `CUlibrary` (a module
//! here) and a `cudaKernel_t` from it the driver's `CUkernel` (a function), which the
//! runtime's launches, function attribute calls and graph kernel nodes take in place of a
//! kernel's host stub. `cudaGetKernel` gives the `cudaKernel_t` of a kernel the program
//! registered: the driver function `cudaGetFuncBySymbol` gives (nvcc's own launch stubs
//! keep using the host stub, `__cudaGetKernel`). `cudaLibraryGetManaged` and
//! `cudaLibraryGetUnifiedFunction` are not supported.

use crate::abi::driver::module::{self, Module};
use crate::client;
use crate::core::function::Function;
use crate::core::library::*;
use crate::error::Error;
use crate::ffi::write_out;
use std::ffi::{c_char, c_int, c_uint, c_void};

entry! {
    fn cudaLibraryLoadData(lib: *mut *mut c_void, code: *const c_void, jit_opts: *mut c_int, jit_vals: *mut *mut c_void, n_jit: c_uint, lib_opts: *mut c_int, lib_vals: *mut *mut c_void, n_lib: c_uint) {
        client::client()?;
        // SAFETY: the same contract as the driver's.
        cu(unsafe { module::cuLibraryLoadData(lib.cast(), code, jit_opts, jit_vals, n_jit, lib_opts, lib_vals, n_lib) })
    }

    fn cudaLibraryLoadFromFile(lib: *mut *mut c_void, file: *const c_char, jit_opts: *mut c_int, jit_vals: *mut *mut c_void, n_jit: c_uint, lib_opts: *mut c_int, lib_vals: *mut *mut c_void, n_lib: c_uint) {
        client::client()?;
        // SAFETY: the same contract as the driver's.
        cu(unsafe { module::cuLibraryLoadFromFile(lib.cast(), file, jit_opts, jit_vals, n_jit, lib_opts, lib_vals, n_lib) })
    }

    fn cudaLibraryUnload(lib: *mut c_void) {
        client::client()?;
        // SAFETY: the same contract as the driver's (whose unload forgets the kernels).
        cu(unsafe { module::cuLibraryUnload(lib.cast::<Module>()) })
    }

    fn cudaLibraryGetKernel(k: *mut *const c_void, lib: *mut c_void, name: *const c_char) {
        client::client()?;
        let mut f: *const Function = std::ptr::null();
        // SAFETY: the same contract as the driver's, with our own output.
        cu(unsafe { module::cuLibraryGetKernel(&mut f, lib.cast(), name) })?;
        kernels(|t| t.insert(f as usize, lib as usize));
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(k, f.cast::<c_void>()) }
    }

    fn cudaLibraryGetGlobal(dptr: *mut *mut c_void, bytes: *mut usize, lib: *mut c_void, name: *const c_char) {
        client::client()?;
        // SAFETY: the same contract as the driver's; a device pointer is 64 bits either way.
        cu(unsafe { module::cuLibraryGetGlobal(dptr.cast(), bytes, lib.cast(), name) })
    }

    fn cudaLibraryGetKernelCount(count: *mut c_uint, lib: *mut c_void) {
        client::client()?;
        // SAFETY: the same contract as the driver's.
        cu(unsafe { module::cuLibraryGetKernelCount(count, lib.cast()) })
    }

    fn cudaLibraryEnumerateKernels(ks: *mut *const c_void, num: c_uint, lib: *mut c_void) {
        client::client()?;
        // SAFETY: the same contract as the driver's.
        cu(unsafe { module::cuLibraryEnumerateKernels(ks.cast(), num, lib.cast()) })?;
        let mut n: c_uint = 0;
        // SAFETY: our own output; the library was just used.
        cu(unsafe { module::cuLibraryGetKernelCount(&mut n, lib.cast()) })?;
        for i in 0..n.min(num) as usize {
            // SAFETY: the driver wrote the first min(n, num) handles of the caller's array.
            let f = unsafe { *ks.add(i) };
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
