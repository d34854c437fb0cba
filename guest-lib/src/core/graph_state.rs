// SPDX-License-Identifier: Apache-2.0 OR MIT
//! What the graph registry ([`super::graph::Registry`]) holds besides graphs and nodes:
//! executable graphs' steps and the backend's copies of them, the accounting of graph
//! memory, and user objects with the destructors their last references queue. Plain data
//! and the work done once the registry is unlocked; the calls that make and use them are
//! [`super::graph_exec`], [`super::graph_mem`] and [`super::user_object`].

use crate::client;
use crate::core::graph_node::Kind;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Arc;
use vcuda_protocol::{DeviceReq, ops};

/// One step of a launch: a node's parameters, the node it came from, whether it runs
/// (`cudaGraphNodeSetEnabled`) and the earlier steps it depends on. Empty nodes are steps
/// too, and so is the end of each child graph (an empty step with the child-graph node as
/// origin, after the child's steps), so that dependencies keep the graph's shape.
#[derive(Clone)]
pub(crate) struct Step {
    pub(crate) origin: u64,
    pub(crate) kind: Kind,
    pub(crate) enabled: bool,
    pub(crate) deps: Vec<u32>,
}

/// A graph's topology: per node (in the order added) its type, its dependencies (indices,
/// sorted) and, for a child-graph node, the child's.
#[derive(PartialEq, Eq, Debug, Clone)]
pub(crate) struct Shape(pub(crate) Vec<(u32, Vec<usize>, Option<Shape>)>);

/// An executable graph.
pub(crate) struct Exec {
    pub(crate) steps: Arc<Vec<Step>>,
    pub(crate) shape: Shape,
    pub(crate) flags: u64,
    /// References to user objects, copied from the graph's (and its child graphs') when
    /// instantiated (or updated), released when destroyed.
    pub(crate) users: HashMap<u64, u32>,
    /// The graph it was made from.
    pub(crate) graph: u64,
    /// Per child-graph node: its child's shape when instantiated and the nodes its steps
    /// came from, in order (for `cudaGraphExecChildGraphNodeSetParams`).
    pub(crate) children: HashMap<u64, (Shape, Vec<u64>)>,
    /// The backend's copy of the steps (see [`Remote`]).
    pub(crate) remote: Remote,
}

/// Where the backend's copy of an executable graph stands. A launch sends the whole graph
/// as one message (`GraphLaunch`) once the backend holds it: it is made (`GraphCreate`, one
/// round trip) at the first launch or upload, and dropped when the executable graph
/// changes. A launch right after a change replays the steps one by one instead, so a
/// program that changes a graph before every launch sends no round trip for it; the next
/// launch without a change makes the backend's copy again. A graph the backend cannot take
/// (host nodes, copies to or from host memory, memory the library does not know as device
/// memory) is always replayed.
#[derive(Default)]
pub(crate) struct Remote {
    /// The backend's graph.
    pub(crate) handle: Option<u64>,
    /// Changed since the last launch.
    pub(crate) changed: bool,
    /// The backend cannot take these steps.
    pub(crate) refused: bool,
    /// Counts changes (a copy made from older steps is not kept).
    pub(crate) version: u64,
}

impl Exec {
    /// Records a change of the steps: the backend's copy goes (destroyed at the next
    /// launch, see `Registry::stale_graphs`).
    pub(crate) fn touch(&mut self, stale: &mut Vec<u64>) {
        let r = &mut self.remote;
        stale.extend(r.handle.take());
        r.changed = true;
        r.refused = false;
        r.version += 1;
    }
}

/// One graph allocation.
#[derive(Clone, Copy)]
pub(crate) struct Live {
    pub(crate) bytes: u64,
    /// Graphs' nodes and executable graphs that hold it.
    pub(crate) holders: u32,
    /// A launch allocated it and nothing freed it since.
    pub(crate) outstanding: bool,
}

/// What graph allocations the process holds.
#[derive(Default)]
pub(crate) struct GraphMemory {
    /// Address -> its allocation.
    pub(crate) live: HashMap<u64, Live>,
    /// Memory no graph allocation holds, kept for the next ones: (address, bytes).
    pub(crate) cached: Vec<(u64, u64)>,
    /// Bytes of `live` allocations, and with `cached` ones.
    pub(crate) used: u64,
    pub(crate) reserved: u64,
    pub(crate) used_high: u64,
    pub(crate) reserved_high: u64,
    /// Allocations to free once the registry is unlocked (trimmed).
    pub to_free: Vec<u64>,
}

/// Most allocations the cache keeps; beyond, released ones are freed.
pub(crate) const MAX_CACHED: usize = 1024;

/// Frees graph allocations whose last holder went (with the registry unlocked).
pub(crate) fn free_released(ptrs: Vec<u64>) {
    if ptrs.is_empty() {
        return;
    }
    let Some(c) = client::connected() else { return };
    for p in ptrs {
        if let Err(e) = crate::core::alloc::free_device_posted(c, p) {
            log::debug!("freeing graph memory {p:#x}: error {}", e.0);
        }
    }
}

impl GraphMemory {
    /// Takes the kept memory out of the reserve: its addresses.
    pub(crate) fn take_cached(&mut self) -> Vec<u64> {
        let cached = std::mem::take(&mut self.cached);
        let bytes: u64 = cached.iter().map(|&(_, b)| b).sum();
        self.reserved = self.reserved.saturating_sub(bytes);
        cached.into_iter().map(|(ptr, _)| ptr).collect()
    }

    /// `ptr` now holds a new graph allocation `live`, taken from the reserve (`fresh`:
    /// memory allocated for it, which joins the reserve).
    pub(crate) fn hold_new(&mut self, ptr: u64, live: Live, fresh: bool) {
        self.live.insert(ptr, live);
        self.used += live.bytes;
        self.used_high = self.used_high.max(self.used);
        if fresh {
            self.reserved += live.bytes;
            self.reserved_high = self.reserved_high.max(self.reserved);
        }
    }
}

pub(crate) use crate::core::callback::HostFn;

/// One user object.
pub(crate) struct UserObject {
    pub(crate) ptr: usize,
    pub(crate) destroy: HostFn,
    pub(crate) refs: u32,
}

/// A destructor to run: the function and its argument.
pub(crate) struct Destructor(pub(crate) HostFn, pub(crate) usize);

/// Runs destructors whose objects lost their last reference (with no lock held), on a
/// thread of their own, after the device finished the work submitted so far.
pub(crate) fn run(destructors: Vec<Destructor>) {
    if destructors.is_empty() {
        return;
    }
    let r = std::thread::Builder::new()
        .name("vcuda-destroy".into())
        .spawn(move || {
            if let Some(c) = crate::client::connected() {
                for device in 0..c.device_count().max(0) as u32 {
                    let _ = c.internal(|| {
                        c.call::<ops::DeviceSynchronize>(&DeviceReq {
                            device,
                            reserved: 0,
                        })
                    });
                }
            }
            for Destructor(f, p) in destructors {
                // Once, as CUDA does when the object's last reference goes.
                crate::core::callback::host(f, p as *mut c_void);
            }
        });
    if let Err(e) = r {
        log::warn!("cannot start a thread for user object destructors: {e}");
    }
}
