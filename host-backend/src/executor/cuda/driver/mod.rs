// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Every CUDA driver call the executor makes, as thin wrappers over the entry points of
//! [`super::ffi`] (cudarc's types, our own `u32`-returning function pointers).
//!
//! [`load`] runs first: it checks the library with cudarc's `is_culib_present`, checks
//! that every entry point in [`REQUIRED`] exists, then initializes the driver. A test scans
//! the executor for `ffi::cu*` calls and fails if one is in neither [`REQUIRED`] nor
//! [`OPTIONAL`], or not declared in `ffi.rs`, or if cudarc's enum-returning `sys::cu*`
//! wrappers are called anywhere, so a new call cannot slip past the checks. It also fails
//! if any file but `lib_ffi.rs` calls cudarc's cuBLAS or cuRAND wrappers.
//!
//! Wrappers that take a driver handle (context, stream, event, module, function, device or
//! host pointer) are `unsafe`: the caller guarantees the handle is live and that the
//! session's context is current. The driver validates everything else and reports misuse as
//! an error, not undefined behavior. For contexts, streams, events, modules, kernels and
//! pinned buffers the caller is `owned.rs`, whose types keep their handles live and free
//! them on drop; the rest of the executor calls these wrappers directly only where the
//! contract is about memory (copies, memsets, device and registered host memory).
//!
//! The wrappers are grouped by API the way cudarc lays out its driver result layer:
//! `init` (loading and checking the library), `context` (devices and contexts), `memory`
//! (allocations, host memory, copies, memsets), `vmm`, `ipc`, `stream` (streams and
//! events), `module` (modules and functions), `launch`, `graph` and `array` (arrays and
//! texture and surface objects). All of them are re-exported here: callers name
//! `driver::mem_alloc`, not the group.

use cudarc::driver::sys::CUresult;

mod array;
mod context;
mod graph;
mod init;
mod ipc;
mod launch;
mod memory;
mod module;
mod stream;
mod vmm;

pub use self::array::*;
pub use self::context::*;
pub use self::graph::*;
pub use self::init::*;
pub use self::ipc::*;
pub use self::launch::*;
pub use self::memory::*;
pub use self::module::*;
pub use self::stream::*;
pub use self::vmm::*;

/// A raw driver result.
pub type DrvResult<T> = Result<T, CUresult>;

fn ok(r: u32) -> DrvResult<()> {
    match r {
        0 => Ok(()),
        e => Err(super::error::result(e)),
    }
}

#[cfg(test)]
mod tests;
