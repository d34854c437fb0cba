// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CPU executor's graphs ([`GraphOps`]): none runs whole; the session replays every
//! graph's nodes.

use crate::executor::cpu::CpuExecutor;
use crate::executor::{ExecResult, GraphNode, GraphOps, Status};

impl GraphOps for CpuExecutor {
    fn graph_instantiate(&mut self, _nodes: &[GraphNode]) -> ExecResult<Option<u64>> {
        // The session replays the nodes one by one.
        Ok(None)
    }

    fn graph_launch(&mut self, _graph: u64, _stream: u64) -> ExecResult<()> {
        // No graph comes from `graph_instantiate`.
        Err(Status::INVALID_VALUE)
    }

    fn graph_destroy(&mut self, _graph: u64) -> ExecResult<()> {
        Err(Status::INVALID_VALUE)
    }
}
