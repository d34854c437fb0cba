// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CUDA executor's streams and events ([`StreamOps`]), done in `streams.rs`.

use vcuda_protocol::EventElapsedResp;

use crate::executor::cuda::CudaExecutor;
use crate::executor::{ExecResult, StreamOps};

impl StreamOps for CudaExecutor {
    fn stream_create(&mut self, device: u32, flags: u32, priority: i32) -> ExecResult<u64> {
        self.stream_create_impl(device, flags, priority)
    }

    fn stream_destroy(&mut self, stream: u64) -> ExecResult<()> {
        self.stream_destroy_impl(stream)
    }

    fn stream_synchronize(&mut self, stream: u64) -> ExecResult<()> {
        self.stream_synchronize_impl(stream)
    }

    fn stream_query(&mut self, stream: u64) -> ExecResult<()> {
        self.stream_query_impl(stream)
    }

    fn stream_wait_event(&mut self, stream: u64, event: u64, flags: u32) -> ExecResult<()> {
        self.stream_wait_event_impl(stream, event, flags)
    }

    fn event_create(&mut self, device: u32, flags: u32) -> ExecResult<u64> {
        self.event_create_impl(device, flags)
    }

    fn event_destroy(&mut self, event: u64) -> ExecResult<()> {
        self.event_destroy_impl(event)
    }

    fn event_record(&mut self, event: u64, stream: u64, flags: u32) -> ExecResult<()> {
        self.event_record_impl(event, stream, flags)
    }

    fn event_synchronize(&mut self, event: u64) -> ExecResult<()> {
        self.event_synchronize_impl(event)
    }

    fn event_query(&mut self, event: u64) -> ExecResult<()> {
        self.event_query_impl(event)
    }

    fn event_elapsed(&mut self, start: u64, end: u64) -> ExecResult<EventElapsedResp> {
        self.event_elapsed_impl(start, end)
    }
}
