// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CUDA executor's graphs ([`GraphOps`]): driver graphs, made in `graphs.rs`.

use crate::executor::cuda::CudaExecutor;
use crate::executor::{ExecResult, GraphNode, GraphOps};

impl GraphOps for CudaExecutor {
    fn graph_instantiate(&mut self, nodes: &[GraphNode]) -> ExecResult<Option<u64>> {
        self.graph_instantiate_impl(nodes)
    }

    fn graph_launch(&mut self, graph: u64, stream: u64) -> ExecResult<()> {
        self.graph_launch_impl(graph, stream)
    }

    fn graph_destroy(&mut self, graph: u64) -> ExecResult<()> {
        self.graphs.remove(graph).map(drop)
    }
}
