// SPDX-License-Identifier: Apache-2.0 OR MIT
//! A graph of device work, sent whole (`GraphCreate`) and launched with one message
//! (`GraphLaunch`).
//!
//! The description travels in the request's one out segment: [`GraphCreateReq::node_count`]
//! nodes, one after another, each a [`GraphNodeHeader`], its body (the request struct of the
//! call it stands for, whose `stream` is zero: the launch names the stream) and then its
//! dependencies, `dep_count` little-endian `u32` indices of earlier nodes. A node depends
//! only on nodes before it, so the order is a topological one and no graph sent has a cycle.
//!
//! | kind | body |
//! |---|---|
//! | [`NODE_EMPTY`] | nothing |
//! | [`NODE_KERNEL`], [`NODE_KERNEL_COOPERATIVE`] | [`LaunchReq`] + its `param_len` parameter bytes |
//! | [`NODE_COPY`] | [`MemcpyDtoDReq`] (device to device) |
//! | [`NODE_MEMSET`] | [`MemsetReq`] |
//! | [`NODE_EVENT_RECORD`] | [`EventRecordReq`] |
//! | [`NODE_EVENT_WAIT`] | [`StreamWaitEventReq`] |
//! | [`NODE_COPY_TO_DEVICE_SHARED`] | [`MemcpyHtoDSharedReq`] (from memory shared with the host) |
//! | [`NODE_COPY_TO_HOST_SHARED`] | [`MemcpyDtoHSharedReq`] (to memory shared with the host) |
//! | [`NODE_KERNEL_CLUSTER`] | [`LaunchClusterReq`] + its `param_len` parameter bytes |
//!
//! [`decode`] checks every length, kind, index and reserved field; it allocates only in
//! proportion to the bytes it was given.

use zerocopy::{FromBytes, IntoBytes};

use crate::decode::{DecodeError, limit, take};
use crate::op::*;

/// Most nodes in one graph.
pub const MAX_GRAPH_NODES: u32 = 1 << 16;
/// Most dependencies of one graph, all nodes together.
pub const MAX_GRAPH_DEPS: u64 = 1 << 20;
/// Most bytes of one graph's description.
pub const MAX_GRAPH_LEN: u64 = 32 << 20;

/// A node that does nothing (it joins and orders others).
pub const NODE_EMPTY: u32 = 0;
/// A kernel launch.
pub const NODE_KERNEL: u32 = 1;
/// A cooperative kernel launch (every block resident at once).
pub const NODE_KERNEL_COOPERATIVE: u32 = 2;
/// A device-to-device copy.
pub const NODE_COPY: u32 = 3;
/// A memset of device memory.
pub const NODE_MEMSET: u32 = 4;
/// An event record.
pub const NODE_EVENT_RECORD: u32 = 5;
/// A wait for an event.
pub const NODE_EVENT_WAIT: u32 = 6;
/// A copy from a region of memory the guest shares with the host to device memory.
pub const NODE_COPY_TO_DEVICE_SHARED: u32 = 7;
/// A copy from device memory to a region of memory the guest shares with the host.
pub const NODE_COPY_TO_HOST_SHARED: u32 = 8;
/// A kernel launch in thread-block clusters.
pub const NODE_KERNEL_CLUSTER: u32 = 9;

/// What one node does.
#[derive(Clone, Debug, PartialEq)]
pub enum NodeWork {
    /// Nothing.
    Empty,
    /// A kernel launch (cooperative if the flag is set) and its parameter bytes.
    Kernel(LaunchReq, Vec<u8>, bool),
    /// A kernel launch in clusters of this shape, and its parameter bytes.
    KernelCluster(LaunchReq, Vec<u8>, [u32; 3]),
    /// A device-to-device copy.
    Copy(MemcpyDtoDReq),
    /// A memset.
    Memset(MemsetReq),
    /// An event record.
    EventRecord(EventRecordReq),
    /// A wait for an event.
    EventWait(StreamWaitEventReq),
    /// A copy from shared memory to the device.
    CopyToDeviceShared(MemcpyHtoDSharedReq),
    /// A copy from the device to shared memory.
    CopyToHostShared(MemcpyDtoHSharedReq),
}

/// One node: its work and the earlier nodes it waits for.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// What it does.
    pub work: NodeWork,
    /// Indices of earlier nodes.
    pub deps: Vec<u32>,
}

/// Appends `node` to a description being built (the guest's side of [`decode`]).
pub fn encode_node(out: &mut Vec<u8>, node: &Node) {
    let (kind, body): (u32, Vec<u8>) = match &node.work {
        NodeWork::Empty => (NODE_EMPTY, Vec::new()),
        NodeWork::Kernel(l, p, coop) => {
            let mut b = l.as_bytes().to_vec();
            b.extend_from_slice(p);
            let kind = if *coop {
                NODE_KERNEL_COOPERATIVE
            } else {
                NODE_KERNEL
            };
            (kind, b)
        }
        NodeWork::KernelCluster(l, p, cluster) => {
            let r = LaunchClusterReq {
                launch: *l,
                cluster: *cluster,
                reserved: 0,
            };
            let mut b = r.as_bytes().to_vec();
            b.extend_from_slice(p);
            (NODE_KERNEL_CLUSTER, b)
        }
        NodeWork::Copy(c) => (NODE_COPY, c.as_bytes().to_vec()),
        NodeWork::Memset(m) => (NODE_MEMSET, m.as_bytes().to_vec()),
        NodeWork::EventRecord(e) => (NODE_EVENT_RECORD, e.as_bytes().to_vec()),
        NodeWork::EventWait(w) => (NODE_EVENT_WAIT, w.as_bytes().to_vec()),
        NodeWork::CopyToDeviceShared(c) => (NODE_COPY_TO_DEVICE_SHARED, c.as_bytes().to_vec()),
        NodeWork::CopyToHostShared(c) => (NODE_COPY_TO_HOST_SHARED, c.as_bytes().to_vec()),
    };
    let h = GraphNodeHeader {
        kind,
        dep_count: node.deps.len() as u32,
        body_len: body.len() as u32,
        reserved: 0,
    };
    out.extend_from_slice(h.as_bytes());
    out.extend_from_slice(&body);
    for d in &node.deps {
        out.extend_from_slice(&d.to_le_bytes());
    }
}

/// A stream field that must be zero (the launch names the stream).
fn stream_zero(what: &'static str, stream: u64) -> Result<(), DecodeError> {
    if stream == 0 {
        Ok(())
    } else {
        Err(DecodeError::Inconsistent(what))
    }
}

/// A body that is exactly one `T` whose stream (`stream_of`) is zero.
fn body<T: FromBytes>(
    what: &'static str,
    b: &[u8],
    stream_of: fn(&T) -> u64,
) -> Result<T, DecodeError> {
    let (v, rest) = take::<T>(what, b)?;
    if !rest.is_empty() {
        return Err(DecodeError::Trailing(what));
    }
    stream_zero(what, stream_of(&v))?;
    Ok(v)
}

/// Decodes a description of `node_count` nodes (see the module documentation). Fails on
/// anything out of place: a length or count over its limit, an unknown kind, a body of the
/// wrong size, a stream or reserved field that is not zero, a dependency on a node that is
/// not earlier, a repeated dependency, or bytes left over.
pub fn decode(mut bytes: &[u8], node_count: u32) -> Result<Vec<Node>, DecodeError> {
    limit(
        "graph nodes",
        u64::from(node_count),
        u64::from(MAX_GRAPH_NODES),
    )?;
    limit("graph length", bytes.len() as u64, MAX_GRAPH_LEN)?;
    // Each node takes at least its header: no more nodes than that can be claimed.
    let min = u64::from(node_count) * size_of::<GraphNodeHeader>() as u64;
    if min > bytes.len() as u64 {
        return Err(DecodeError::Truncated {
            what: "graph",
            need: min,
            have: bytes.len() as u64,
        });
    }
    let mut nodes = Vec::with_capacity(node_count as usize);
    let mut edges = 0u64;
    for i in 0..node_count {
        let (h, rest) = take::<GraphNodeHeader>("graph node", bytes)?;
        if h.reserved != 0 {
            return Err(DecodeError::Inconsistent("graph node reserved field"));
        }
        let body_len = h.body_len as usize;
        let deps_len = (h.dep_count as usize).saturating_mul(4);
        if rest.len() < body_len || rest.len() - body_len < deps_len {
            return Err(DecodeError::Truncated {
                what: "graph node",
                need: (body_len as u64).saturating_add(deps_len as u64),
                have: rest.len() as u64,
            });
        }
        edges += u64::from(h.dep_count);
        limit("graph dependencies", edges, MAX_GRAPH_DEPS)?;
        let (b, rest) = rest.split_at(body_len);
        let (d, rest) = rest.split_at(deps_len);
        bytes = rest;
        let work = match h.kind {
            NODE_EMPTY if b.is_empty() => NodeWork::Empty,
            NODE_EMPTY => return Err(DecodeError::Trailing("empty graph node")),
            NODE_KERNEL | NODE_KERNEL_COOPERATIVE => {
                let (l, params) = take::<LaunchReq>("kernel graph node", b)?;
                stream_zero("kernel graph node stream", l.stream)?;
                limit(
                    "parameter length",
                    params.len() as u64,
                    u64::from(MAX_PARAM_LEN),
                )?;
                if params.len() != l.param_len as usize {
                    return Err(DecodeError::Inconsistent("parameter length"));
                }
                NodeWork::Kernel(l, params.to_vec(), h.kind == NODE_KERNEL_COOPERATIVE)
            }
            NODE_KERNEL_CLUSTER => {
                let (r, params) = take::<LaunchClusterReq>("cluster kernel graph node", b)?;
                stream_zero("kernel graph node stream", r.launch.stream)?;
                if r.reserved != 0 {
                    return Err(DecodeError::Inconsistent("cluster kernel graph node"));
                }
                limit(
                    "parameter length",
                    params.len() as u64,
                    u64::from(MAX_PARAM_LEN),
                )?;
                if params.len() != r.launch.param_len as usize {
                    return Err(DecodeError::Inconsistent("parameter length"));
                }
                NodeWork::KernelCluster(r.launch, params.to_vec(), r.cluster)
            }
            NODE_COPY => NodeWork::Copy(body("copy graph node", b, |r: &MemcpyDtoDReq| r.stream)?),
            NODE_MEMSET => {
                NodeWork::Memset(body("memset graph node", b, |r: &MemsetReq| r.stream)?)
            }
            NODE_EVENT_RECORD => {
                NodeWork::EventRecord(body("event record graph node", b, |r: &EventRecordReq| {
                    r.stream
                })?)
            }
            NODE_EVENT_WAIT => NodeWork::EventWait(body(
                "event wait graph node",
                b,
                |r: &StreamWaitEventReq| r.stream,
            )?),
            NODE_COPY_TO_DEVICE_SHARED => NodeWork::CopyToDeviceShared(body(
                "shared copy graph node",
                b,
                |r: &MemcpyHtoDSharedReq| r.stream,
            )?),
            NODE_COPY_TO_HOST_SHARED => NodeWork::CopyToHostShared(body(
                "shared copy graph node",
                b,
                |r: &MemcpyDtoHSharedReq| r.stream,
            )?),
            _ => return Err(DecodeError::Inconsistent("graph node kind")),
        };
        let mut deps: Vec<u32> = d
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        if deps.iter().any(|&x| x >= i) {
            return Err(DecodeError::Inconsistent("graph dependency"));
        }
        let n = deps.len();
        deps.sort_unstable();
        deps.dedup();
        if deps.len() != n {
            return Err(DecodeError::Inconsistent("repeated graph dependency"));
        }
        nodes.push(Node { work, deps });
    }
    if !bytes.is_empty() {
        return Err(DecodeError::Trailing("graph"));
    }
    Ok(nodes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Node> {
        let launch = LaunchReq {
            function: 7,
            grid: [2, 1, 1],
            block: [32, 1, 1],
            param_len: 8,
            ..Default::default()
        };
        vec![
            Node {
                work: NodeWork::Memset(MemsetReq {
                    dst: 0x1000,
                    pitch: 64,
                    width: 16,
                    height: 1,
                    value: 3,
                    elem_size: 4,
                    ..Default::default()
                }),
                deps: vec![],
            },
            Node {
                work: NodeWork::Kernel(launch, vec![1; 8], false),
                deps: vec![0],
            },
            Node {
                work: NodeWork::Kernel(launch, vec![2; 8], true),
                deps: vec![0],
            },
            Node {
                work: NodeWork::Empty,
                deps: vec![1, 2],
            },
            Node {
                work: NodeWork::Copy(MemcpyDtoDReq {
                    dst: 0x2000,
                    width: 64,
                    height: 1,
                    ..Default::default()
                }),
                deps: vec![3],
            },
            Node {
                work: NodeWork::EventRecord(EventRecordReq {
                    event: 9,
                    ..Default::default()
                }),
                deps: vec![4],
            },
            Node {
                work: NodeWork::EventWait(StreamWaitEventReq {
                    event: 9,
                    ..Default::default()
                }),
                deps: vec![],
            },
            Node {
                work: NodeWork::CopyToDeviceShared(MemcpyHtoDSharedReq {
                    dst: 0x3000,
                    width: 16,
                    height: 1,
                    region: 2,
                    ..Default::default()
                }),
                deps: vec![6],
            },
            Node {
                work: NodeWork::CopyToHostShared(MemcpyDtoHSharedReq {
                    src: 0x3000,
                    width: 16,
                    height: 1,
                    region: 2,
                    offset: 64,
                    ..Default::default()
                }),
                deps: vec![0, 7],
            },
            Node {
                work: NodeWork::KernelCluster(launch, vec![3; 8], [2, 1, 1]),
                deps: vec![1],
            },
        ]
    }

    fn encode(nodes: &[Node]) -> Vec<u8> {
        let mut out = Vec::new();
        for n in nodes {
            encode_node(&mut out, n);
        }
        out
    }

    #[test]
    fn a_graph_round_trips() {
        let nodes = sample();
        let bytes = encode(&nodes);
        assert_eq!(decode(&bytes, nodes.len() as u32), Ok(nodes));
        assert_eq!(decode(&[], 0), Ok(vec![]));
    }

    #[test]
    fn malformed_graphs_are_refused() {
        let nodes = sample();
        let bytes = encode(&nodes);
        let n = nodes.len() as u32;
        // Wrong counts, truncation, trailing bytes.
        assert!(decode(&bytes, n + 1).is_err());
        assert!(decode(&bytes, n - 1).is_err());
        assert!(decode(&bytes[..bytes.len() - 1], n).is_err());
        let mut long = bytes.clone();
        long.push(0);
        assert!(decode(&long, n).is_err());
        assert!(decode(&bytes, MAX_GRAPH_NODES + 1).is_err());
        // A dependency on itself, on a later node, repeated.
        for deps in [vec![1], vec![5], vec![0, 0]] {
            let mut bad = nodes.clone();
            bad[1].deps = deps;
            assert!(decode(&encode(&bad), n).is_err());
        }
        // A stream in a body, a wrong parameter length, an unknown kind.
        let mut bad = nodes.clone();
        if let NodeWork::Copy(c) = &mut bad[4].work {
            c.stream = 1;
        }
        assert!(decode(&encode(&bad), n).is_err());
        let mut bad = nodes.clone();
        if let NodeWork::Kernel(l, _, _) = &mut bad[1].work {
            l.param_len = 9;
        }
        assert!(decode(&encode(&bad), n).is_err());
        let mut bad = nodes.clone();
        if let NodeWork::KernelCluster(l, _, _) = &mut bad[9].work {
            l.stream = 4;
        }
        assert!(decode(&encode(&bad), n).is_err());
        // A cluster node's reserved word (after its launch and shape).
        let lone = [Node {
            deps: vec![],
            ..nodes[9].clone()
        }];
        let mut raw = encode(&lone);
        assert_eq!(decode(&raw, 1), Ok(lone.to_vec()));
        raw[16 + 60] = 1;
        assert!(decode(&raw, 1).is_err());
        let mut raw = bytes.clone();
        raw[0] = 99;
        assert!(decode(&raw, n).is_err());
        // A body too short or too long for its kind.
        let mut raw = encode(&nodes[..1]);
        raw[8] = 40;
        raw.truncate(16 + 40);
        assert!(decode(&raw, 1).is_err());
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let bytes = encode(&sample());
        // Every single-byte change and every truncation of a valid description.
        for i in 0..bytes.len() {
            for v in [0u8, 1, 0x7f, 0xff] {
                let mut b = bytes.clone();
                b[i] = v;
                let _ = decode(&b, 9);
            }
            let _ = decode(&bytes[..i], 9);
        }
    }
}
