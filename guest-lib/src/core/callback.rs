// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The program's host functions and callbacks, and the one place the library calls them:
//! host functions (`cudaLaunchHostFunc`, graph host nodes), stream callbacks
//! (`cudaStreamAddCallback`), user-object destructors and context-local storage
//! destructors. Each is called with the argument the program registered with it, where and
//! as often as CUDA calls it; that the function is callable so is the program's promise to
//! CUDA, which this module relies on.

use std::ffi::c_void;

/// `cudaHostFn_t` (non-null).
pub type HostFn = unsafe extern "C" fn(*mut c_void);

/// `cudaStreamCallback_t` (non-null).
pub type StreamCallback = unsafe extern "C" fn(*mut c_void, u32, *mut c_void);

/// A context-local storage destructor (`CUcontext`, key, value).
pub type StorageDtor = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_void);

/// Calls host function `f` with the argument registered with it.
pub(crate) fn host(f: HostFn, data: *mut c_void) {
    // SAFETY: the program's host function, called with its own argument, as CUDA does.
    unsafe { f(data) }
}

/// Calls stream callback `f` for `stream` with its status and the argument registered with
/// it.
pub(crate) fn stream(f: StreamCallback, stream: *mut c_void, status: u32, data: *mut c_void) {
    // SAFETY: the program's callback, called with the stream, its status and the callback's
    // own argument, as CUDA does.
    unsafe { f(stream, status, data) }
}

/// Calls storage destructor `d` once with the context, key and value it was registered
/// with.
pub(crate) fn storage(d: StorageDtor, ctx: *mut c_void, key: *mut c_void, value: *mut c_void) {
    // SAFETY: the destructor the storage's owner registered with this value, called once
    // with the context, key and value it was registered with.
    unsafe { d(ctx, key, value) }
}
