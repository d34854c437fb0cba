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

use crate::core::function::{self, Function};
use crate::core::registry::LoadedFunc;
use crate::error::{CuError, Error};
use std::collections::HashMap;
use std::sync::Mutex;

/// Kernels handed out as `cudaKernel_t`, and the library of each (0: `cudaGetKernel`).
pub(crate) static KERNELS: Mutex<Option<HashMap<usize, usize>>> = Mutex::new(None);

pub(crate) fn kernels<R>(f: impl FnOnce(&mut HashMap<usize, usize>) -> R) -> R {
    f(KERNELS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new))
}

/// The loaded form of `k` if it is a kernel handed out to the program as a `cudaKernel_t`.
pub(crate) fn kernel(k: usize) -> Option<LoadedFunc> {
    kernels(|t| {
        // SAFETY: a function handed out by `cudaGetKernel` (kept for the process's life)
        // or by `cudaLibraryGetKernel`/`EnumerateKernels` whose library is loaded: a
        // library's kernels leave the table (under this lock) before it is freed.
        t.contains_key(&k)
            .then(|| unsafe { function::loaded_of(k as *const Function) })
    })
}

/// Forgets the kernels of module `m`, which is being freed (by whichever call unloads it).
pub(crate) fn forget_module(m: usize) {
    kernels(|t| t.retain(|_, l| *l != m));
}

/// The runtime error for a driver error of the module layer (`core::module`).
pub(crate) fn cu(e: CuError) -> Error {
    // The two numberings agree (CUDA_ERROR_NOT_FOUND is cudaErrorSymbolNotFound, ...).
    Error(e.0)
}
