// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CUDA driver API (`libcuda.so.1`), over the same session as the runtime.
//!
//! A process has one session with the backend, shared by libcudart, libcuda, libcublas and
//! libcurand: device pointers, streams (`CUstream` is `cudaStream_t`) and events are the
//! same values in both APIs. Most driver calls share the runtime's logic in `crate::core` and
//! answer with the driver's error numbering ([`CuError`]); no driver call goes through a
//! runtime export, so none touches the runtime's last error.
//!
//! # Contexts
//!
//! Contexts live in the library (`context`): the backend has one device per session, and
//! every context of a process shares it. `cuCtxCreate` makes a context current on the
//! calling thread; memory, streams, events and modules made while it is current belong to
//! it and are freed when it is destroyed, as the driver does. Unlike separate contexts on a
//! GPU, contexts here share one address space (a pointer from one works in another) and one
//! sticky-error state: a fault in one fails the others too (and a new context, as NVIDIA's
//! driver fails a context's reset), until the last created context is destroyed, which
//! resets the session. The primary context is a context like the others that is never
//! destroyed; the runtime's calls use the session directly, so a context from
//! `cuCtxGetCurrent` works with the runtime, as in CUDA.
//!
//! # What is not here
//!
//! Every name of `cuda.h` is exported; those not implemented (README.md's status table
//! counts them) return `CUDA_ERROR_NOT_SUPPORTED`. `cuGetProcAddress` (and the runtime's
//! `cudaGetDriverEntryPoint`) hand out this library's own entry points, the variant each
//! CUDA version declared (`procs`).

pub mod context;
pub mod exec;
pub mod export;
pub mod extra;
pub mod graph;
pub mod link;
pub mod memory;
pub mod module;
pub mod procs;
mod procs_gen;
pub mod ptsz;
pub mod queries;
pub mod stream;
pub mod texture;
pub mod vmm;

use crate::error::CuError;

/// Writes `v` through a driver API output pointer (`CUDA_ERROR_INVALID_VALUE` if null).
///
/// # Safety
///
/// `p` is null or valid for a write of `T`.
unsafe fn out<T>(p: *mut T, v: T) -> Result<(), CuError> {
    if p.is_null() {
        return Err(CuError::INVALID_VALUE);
    }
    // SAFETY: non-null (checked) and valid for writes (the caller's guarantee).
    unsafe { p.write(v) };
    Ok(())
}
