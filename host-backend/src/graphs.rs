// SPDX-License-Identifier: Apache-2.0 OR MIT
//! A session's graphs of device work (`GraphCreate`, `GraphLaunch`, `GraphDestroy`): one
//! message launches a whole graph.
//!
//! A graph arrives as a list of nodes in a topological order ([`vcuda_protocol::graph`]).
//! Where the executor can, it makes them one graph the device runs whole (the CUDA
//! executor: a CUDA graph, instantiated once, launched with one driver call); otherwise the
//! session keeps the nodes and a launch replays them, in order, on the launch stream,
//! through the same executor calls the requests they stand for would make. Either way every
//! dependency is honoured, since the order is topological and one stream runs the replay.
//!
//! Copies from and to memory the guest shares with the host (page-locked memory over the
//! Unix socket) are replayed by the session, with the guest's region as it is at launch (a
//! region the guest gave up since fails the launch).
//!
//! Limits: [`MAX_GRAPHS`] graphs and [`MAX_GRAPH_BYTES`] bytes of kept nodes per session.
//! A device reset drops the executor's graphs; the session replays them from then on.

use std::collections::HashMap;

use log::debug;
use vcuda_protocol::graph::{self, NodeWork};
use vcuda_protocol::op::{
    COPY_ASYNC, LaunchReq, MemcpyDtoDReq, MemcpyDtoHSharedReq, MemcpyHtoDSharedReq, MemsetReq,
};

use crate::executor::{ExecResult, Executor, GraphNode, Status};
use crate::migrate::MigrateError;
use crate::migrate::state::{GraphState, GraphsState};
use crate::shared::SharedRegions;

/// Most graphs a session holds at once.
pub const MAX_GRAPHS: usize = 4096;
/// Most bytes of graph descriptions a session holds at once.
pub const MAX_GRAPH_BYTES: u64 = 256 << 20;

struct Graph {
    nodes: Vec<GraphNode>,
    /// The executor's graph, if it made one.
    native: Option<u64>,
    /// Bytes of the description (for the session's limit).
    bytes: u64,
}

/// A session's graphs, by handle.
#[derive(Default)]
pub struct Graphs {
    graphs: HashMap<u64, Graph>,
    bytes: u64,
    next: u64,
}

/// Handles of graphs start here (tagged, so a stray value of another kind is not one).
const HANDLE_BASE: u64 = 0x6a00_0000_0000_0000;

impl Graphs {
    /// `GraphCreate`: decodes `desc` (`node_count` nodes) and keeps it; returns the handle.
    pub fn create(
        &mut self,
        e: &mut dyn Executor,
        desc: &[u8],
        node_count: u32,
    ) -> ExecResult<u64> {
        let h = HANDLE_BASE | (self.next + 1);
        self.insert(e, h, desc, node_count)?;
        self.next += 1;
        Ok(h)
    }

    /// Keeps graph `desc` (`node_count` nodes) as `h`.
    fn insert(
        &mut self,
        e: &mut dyn Executor,
        h: u64,
        desc: &[u8],
        node_count: u32,
    ) -> ExecResult<()> {
        let bytes = desc.len() as u64;
        if self.graphs.len() >= MAX_GRAPHS || self.bytes.saturating_add(bytes) > MAX_GRAPH_BYTES {
            return Err(Status::MEMORY_ALLOCATION);
        }
        let nodes = graph::decode(desc, node_count).map_err(|err| {
            debug!("graph refused: {err}");
            Status::INVALID_VALUE
        })?;
        let native = match e.graph_instantiate(&nodes) {
            Ok(n) => n,
            // The replay meets whatever failed here at launch, where CUDA reports it.
            Err(s) => {
                debug!("graph left to the replay: {s}");
                None
            }
        };
        self.bytes += bytes;
        self.graphs.insert(
            h,
            Graph {
                nodes,
                native,
                bytes,
            },
        );
        Ok(())
    }

    /// The graphs, described as the guest described them (a saved session's).
    pub fn save_state(&self) -> GraphsState {
        let mut graphs: Vec<GraphState> = self
            .graphs
            .iter()
            .map(|(&handle, g)| {
                let mut desc = Vec::new();
                for n in &g.nodes {
                    graph::encode_node(&mut desc, n);
                }
                GraphState {
                    handle,
                    node_count: g.nodes.len() as u32,
                    desc,
                }
            })
            .collect();
        graphs.sort_unstable_by_key(|g| g.handle);
        GraphsState {
            next: self.next,
            graphs,
        }
    }

    /// Re-creates saved graphs (see [`Graphs::save_state`]) in this session, which has
    /// none, on executor `e` (whose state is loaded already), through `GraphCreate`'s
    /// checks and limits.
    pub fn load_state(&mut self, e: &mut dyn Executor, s: GraphsState) -> Result<(), MigrateError> {
        if !self.graphs.is_empty() || s.next >= 1 << 48 {
            return Err(MigrateError::invalid("graph counter"));
        }
        for g in s.graphs {
            let n = g.handle & !HANDLE_BASE;
            if g.handle & HANDLE_BASE != HANDLE_BASE
                || !(1..=s.next).contains(&n)
                || self.graphs.contains_key(&g.handle)
            {
                return Err(MigrateError::invalid(format_args!("graph {:#x}", g.handle)));
            }
            self.insert(e, g.handle, &g.desc, g.node_count)
                .map_err(|st| MigrateError::invalid(format_args!("graph {:#x}: {st}", g.handle)))?;
        }
        self.next = s.next;
        Ok(())
    }

    /// `GraphLaunch`: runs graph `h` on `stream`; copies from and to shared memory reach
    /// the guest's regions in `shared`.
    pub fn launch(
        &mut self,
        e: &mut dyn Executor,
        shared: &SharedRegions,
        h: u64,
        stream: u64,
    ) -> ExecResult<()> {
        let g = self.graphs.get(&h).ok_or(Status::INVALID_VALUE)?;
        if let Some(n) = g.native {
            return e.graph_launch(n, stream);
        }
        for node in &g.nodes {
            replay(e, shared, &node.work, stream)?;
        }
        Ok(())
    }

    /// `GraphDestroy`.
    pub fn destroy(&mut self, e: &mut dyn Executor, h: u64) -> ExecResult<()> {
        let g = self.graphs.remove(&h).ok_or(Status::INVALID_VALUE)?;
        self.bytes -= g.bytes;
        match g.native {
            Some(n) => e.graph_destroy(n),
            None => Ok(()),
        }
    }

    /// After a device reset: the executor's graphs are gone; replay them from now on.
    pub fn reset(&mut self) {
        for g in self.graphs.values_mut() {
            g.native = None;
        }
    }
}

/// Runs one node on `stream` through the call it stands for.
fn replay(
    e: &mut dyn Executor,
    shared: &SharedRegions,
    work: &NodeWork,
    stream: u64,
) -> ExecResult<()> {
    match work {
        NodeWork::Empty => Ok(()),
        NodeWork::Kernel(l, params, coop) => {
            let l = LaunchReq { stream, ..*l };
            if *coop {
                e.launch_cooperative(&l, params)
            } else {
                e.launch(&l, params)
            }
        }
        NodeWork::KernelCluster(l, params, cluster) => {
            e.launch_cluster(&LaunchReq { stream, ..*l }, *cluster, params)
        }
        NodeWork::Copy(c) => e.memcpy_dtod(&MemcpyDtoDReq {
            stream,
            flags: c.flags | COPY_ASYNC,
            ..*c
        }),
        NodeWork::Memset(m) => e.memset(&MemsetReq {
            stream,
            flags: m.flags | COPY_ASYNC as u16,
            ..*m
        }),
        NodeWork::EventRecord(r) => e.event_record(r.event, stream, r.flags),
        NodeWork::EventWait(w) => e.stream_wait_event(stream, w.event, w.flags),
        NodeWork::CopyToDeviceShared(c) => {
            let c = MemcpyHtoDSharedReq {
                stream,
                flags: c.flags | COPY_ASYNC,
                ..*c
            };
            shared.copy_to_device(e, &c)
        }
        NodeWork::CopyToHostShared(c) => {
            let c = MemcpyDtoHSharedReq {
                stream,
                flags: c.flags | COPY_ASYNC,
                ..*c
            };
            shared.copy_to_host(e, &c)
        }
    }
}
