// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Kernel launches and graphs: the launch request and its parameter buffer, graph creation
//! and launch, and the header of a graph node.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Largest kernel parameter buffer (CUDA 12.1+ allows 32764 bytes).
pub const MAX_PARAM_LEN: u32 = 32764;

wire_struct!(
    /// `Launch` request; tail: the parameter buffer.
    LaunchReq, 48 {
        /// Function handle.
        function: u64,
        /// Stream handle.
        stream: u64,
        /// Grid dimensions.
        grid: [u32; 3],
        /// Block dimensions.
        block: [u32; 3],
        /// Dynamic shared memory bytes.
        shared_mem: u32,
        /// Bytes of parameter buffer in the tail.
        param_len: u32,
    }
);

wire_struct!(
    /// `LaunchCluster` request: a launch in thread-block clusters (sm_90); tail: the
    /// parameter buffer.
    LaunchClusterReq, 64 {
        /// The launch.
        launch: LaunchReq,
        /// Blocks per cluster in each dimension.
        cluster: [u32; 3],
        /// Zero.
        reserved: u32,
    }
);

wire_struct!(
    /// `GraphCreate` request, with one out segment of `size` bytes: the nodes (see
    /// [`crate::graph`]).
    GraphCreateReq, 16 {
        /// Nodes in the description.
        node_count: u32,
        /// Zero.
        reserved: u32,
        /// Bytes of the description.
        size: u64,
    }
);

wire_struct!(
    /// `GraphLaunch` request.
    GraphLaunchReq, 16 {
        /// The graph (`GraphCreate`'s handle).
        graph: u64,
        /// Stream handle.
        stream: u64,
    }
);

wire_struct!(
    /// One node of a graph's description; its body and dependencies follow.
    GraphNodeHeader, 16 {
        /// `NODE_*`.
        kind: u32,
        /// Dependencies (earlier nodes) after the body.
        dep_count: u32,
        /// Bytes of the body.
        body_len: u32,
        /// Zero.
        reserved: u32,
    }
);
