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

use crate::core::graph::{cudaGraph_t, with};
use crate::core::graph_state::HostFn;
use crate::core::graph_state::UserObject;
use crate::error::{Error, Result};
use std::ffi::{c_uint, c_void};

/// `cudaUserObject_t`.
pub type cudaUserObject_t = *mut c_void;

/// `cudaUserObjectNoDestructorSync`: the only flag `cudaUserObjectCreate` takes (and must).
pub(crate) const NO_DESTRUCTOR_SYNC: c_uint = 1;
/// `cudaGraphUserObjectMove`.
pub(crate) const GRAPH_USER_OBJECT_MOVE: c_uint = 1;

/// `cudaUserObjectCreate`: the new object's handle. `out_is_null`: the program gave no
/// place for it (`cudaErrorInvalidValue`, nothing made).
pub(crate) fn create(
    out_is_null: bool,
    ptr: *mut c_void,
    destroy: Option<HostFn>,
    initial: c_uint,
    flags: c_uint,
) -> Result<u64> {
    let destroy = destroy.ok_or(Error::INVALID_VALUE)?;
    if out_is_null || initial == 0 || flags != NO_DESTRUCTOR_SYNC {
        return Err(Error::INVALID_VALUE);
    }
    let id = with(|r| {
        let id = r.id();
        r.user_objects.insert(
            id,
            UserObject {
                ptr: ptr as usize,
                destroy,
                refs: initial,
            },
        );
        id
    });
    Ok(id)
}

pub(crate) fn graph_retain(
    g: cudaGraph_t,
    obj: cudaUserObject_t,
    count: c_uint,
    flags: c_uint,
) -> Result<()> {
    if count == 0 || flags & !GRAPH_USER_OBJECT_MOVE != 0 {
        return Err(Error::INVALID_VALUE);
    }
    with(|r| {
        r.graph(g as u64)?;
        if !r.user_objects.contains_key(&(obj as u64)) {
            return Err(Error::INVALID_VALUE);
        }
        // Moved references are the program's, already counted.
        if flags & GRAPH_USER_OBJECT_MOVE == 0 {
            r.retain_user(obj as u64, count)?;
        }
        let graph = r.graphs.get_mut(&(g as u64)).ok_or(Error::INVALID_VALUE)?;
        let e = graph.user_refs.entry(obj as u64).or_default();
        *e = e.checked_add(count).ok_or(Error::INVALID_VALUE)?;
        Ok(())
    })
}

pub(crate) fn graph_release(g: cudaGraph_t, obj: cudaUserObject_t, count: c_uint) -> Result<()> {
    if count == 0 {
        return Err(Error::INVALID_VALUE);
    }
    with(|r| {
        let graph = r.graphs.get_mut(&(g as u64)).ok_or(Error::INVALID_VALUE)?;
        let held = graph
            .user_refs
            .get_mut(&(obj as u64))
            .ok_or(Error::INVALID_VALUE)?;
        if count > *held {
            return Err(Error::INVALID_VALUE);
        }
        *held -= count;
        if *held == 0 {
            graph.user_refs.remove(&(obj as u64));
        }
        r.release_user(obj as u64, count)
    })
}

pub(crate) fn count_op(obj: cudaUserObject_t, count: c_uint, retain: bool) -> Result<()> {
    if count == 0 {
        return Err(Error::INVALID_VALUE);
    }
    with(|r| {
        if retain {
            r.retain_user(obj as u64, count)
        } else {
            r.release_user(obj as u64, count)
        }
    })
}

/// `cudaGraphReleaseUserObject`.
pub(crate) fn graph_release_user_object(
    g: cudaGraph_t,
    obj: cudaUserObject_t,
    count: c_uint,
) -> Result<()> {
    graph_release(g, obj, count)
}

/// `cudaGraphRetainUserObject`.
pub(crate) fn graph_retain_user_object(
    g: cudaGraph_t,
    obj: cudaUserObject_t,
    count: c_uint,
    flags: c_uint,
) -> Result<()> {
    graph_retain(g, obj, count, flags)
}

/// `cudaUserObjectRelease`.
pub(crate) fn user_object_release(obj: cudaUserObject_t, count: c_uint) -> Result<()> {
    count_op(obj, count, false)
}

/// `cudaUserObjectRetain`.
pub(crate) fn user_object_retain(obj: cudaUserObject_t, count: c_uint) -> Result<()> {
    count_op(obj, count, true)
}
