// SPDX-License-Identifier: Apache-2.0 OR MIT
//! User objects: `cudaUserObjectCreate`, `Retain`, `Release`, and the references graphs own
//! (`cudaGraphRetainUserObject`, `cudaGraphReleaseUserObject`); the driver's `cuUserObject*`
//! and `cuGraph*UserObject` are the same objects.
//!
//! An object counts references. The program's come from `cudaUserObjectCreate` and
//! `Retain`; a graph's from `cudaGraphRetainUserObject` (with `cudaGraphUserObjectMove`,
//! taken over from the program's), and a graph's clone and each executable graph made from
//! it (child graphs included) hold copies of them. Destroying a graph or an executable
//! graph releases what it holds. When the last reference goes, the destructor runs on a
//! thread of the library's, after the device finished the work submitted before that
//! (as CUDA defers it until the graph's launches completed); it must not call CUDA.

use crate::core::graph::cudaGraph_t;
use crate::core::graph_state::HostFn;
use crate::core::user_object::*;
use std::ffi::{c_uint, c_void};

entry! {
    fn cudaUserObjectCreate(out: *mut cudaUserObject_t, ptr: *mut c_void, destroy: Option<HostFn>, initial: c_uint, flags: c_uint) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { crate::abi::graph_args::user_object_create(out, ptr, destroy, initial, flags) }
    }

    fn cudaUserObjectRetain(obj: cudaUserObject_t, count: c_uint) {
        user_object_retain(obj, count)
    }

    fn cudaUserObjectRelease(obj: cudaUserObject_t, count: c_uint) {
        user_object_release(obj, count)
    }

    fn cudaGraphRetainUserObject(g: cudaGraph_t, obj: cudaUserObject_t, count: c_uint, flags: c_uint) {
        graph_retain_user_object(g, obj, count, flags)
    }

    fn cudaGraphReleaseUserObject(g: cudaGraph_t, obj: cudaUserObject_t, count: c_uint) {
        graph_release_user_object(g, obj, count)
    }
}
