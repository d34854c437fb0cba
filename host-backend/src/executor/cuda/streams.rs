// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Streams and events of a session: the [`Executor`](crate::executor::Executor) calls that
//! create, destroy, record, wait for and query them.

use vcuda_protocol::EventElapsedResp;

use super::CudaExecutor;
use super::driver;
use super::error::to_status;
use super::state::stream_ref;
use crate::executor::{ExecResult, Status};

/// `cudaStreamNonBlocking`.
const STREAM_NON_BLOCKING: u32 = 1;
/// `cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess`.
const EVENT_FLAGS: u32 = 0x1 | 0x2 | 0x4;
/// `cudaEventDisableTiming`.
const EVENT_DISABLE_TIMING: u32 = 0x2;
/// `cudaEventInterprocess`: accepted, but IPC handles are not forwarded, so the driver is
/// asked for an ordinary event.
const EVENT_INTERPROCESS: u32 = 0x4;
/// Kept with an event's flags: the driver could not make it interprocess (it has no handle).
const NO_IPC: u32 = 1 << 31;
/// `cudaEventRecordExternal` / `cudaEventWaitExternal`.
const EVENT_EXTERNAL: u32 = 0x1;

impl CudaExecutor {
    pub(super) fn stream_create_impl(
        &mut self,
        device: u32,
        flags: u32,
        priority: i32,
    ) -> ExecResult<u64> {
        self.check_device(device)?;
        if flags & !STREAM_NON_BLOCKING != 0 {
            return Err(Status::INVALID_VALUE);
        }
        // Binds the context, then creates the stream in it.
        let s = self
            .context()?
            .stream_create(flags, priority)
            .map_err(to_status)?;
        // If the table refuses it, dropping `s` destroys the stream again.
        let h = self.streams.insert(s)?;
        if flags & STREAM_NON_BLOCKING != 0 {
            self.non_blocking.insert(h);
        }
        if priority != 0 {
            self.stream_priorities.insert(h, priority);
        }
        Ok(h)
    }

    pub(super) fn stream_destroy_impl(&mut self, stream: u64) -> ExecResult<()> {
        let s = self.streams.remove(stream)?;
        self.non_blocking.remove(&stream);
        self.stream_priorities.remove(&stream);
        self.bind()?;
        s.destroy().map_err(to_status)
    }

    pub(super) fn stream_synchronize_impl(&mut self, stream: u64) -> ExecResult<()> {
        let s = stream_ref(&self.streams, stream)?;
        self.bind()?;
        self.may_print = true;
        let r = s.synchronize(&self.wait).map_err(Status::from);
        self.settle(r)
    }

    pub(super) fn stream_query_impl(&mut self, stream: u64) -> ExecResult<()> {
        let s = stream_ref(&self.streams, stream)?;
        self.bind()?;
        s.query().map_err(to_status)
    }

    pub(super) fn stream_wait_event_impl(
        &mut self,
        stream: u64,
        event: u64,
        flags: u32,
    ) -> ExecResult<()> {
        let s = stream_ref(&self.streams, stream)?;
        let (e, _) = self.events.get(event)?;
        if flags & !EVENT_EXTERNAL != 0 {
            return Err(Status::INVALID_VALUE);
        }
        self.bind()?;
        s.wait_event(e, flags).map_err(to_status)
    }

    pub(super) fn event_create_impl(&mut self, device: u32, flags: u32) -> ExecResult<u64> {
        self.check_device(device)?;
        if flags & !EVENT_FLAGS != 0
            || (flags & EVENT_INTERPROCESS != 0 && flags & EVENT_DISABLE_TIMING == 0)
        {
            return Err(Status::INVALID_VALUE);
        }
        // Binds the context, then creates the event in it. An interprocess event the driver
        // cannot make (the worker's sandbox, say) is made as a plain one that has no handle.
        let ctx = self.context()?;
        let (e, flags) = match ctx.event_create(flags) {
            Ok(e) => (e, flags),
            Err(_) if flags & EVENT_INTERPROCESS != 0 => {
                let e = ctx
                    .event_create(flags & !EVENT_INTERPROCESS)
                    .map_err(to_status)?;
                (e, flags | NO_IPC)
            }
            Err(e) => return Err(to_status(e)),
        };
        // If the table refuses it, dropping `e` destroys the event again.
        self.events.insert((e, flags))
    }

    pub(super) fn ipc_get_event_handle_impl(&mut self, event: u64) -> ExecResult<[u8; 64]> {
        let (e, flags) = self.events.get(event)?;
        if flags & EVENT_INTERPROCESS == 0 {
            return Err(Status::INVALID_HANDLE);
        }
        if flags & NO_IPC != 0 {
            return Err(Status::NOT_SUPPORTED);
        }
        let raw = e.raw();
        self.bind()?;
        driver::ipc_get_event_handle(raw).map_err(to_status)
    }

    pub(super) fn ipc_open_event_handle_impl(&mut self, handle: &[u8; 64]) -> ExecResult<u64> {
        let e = self.context()?.event_open_ipc(handle).map_err(to_status)?;
        self.events
            .insert((e, EVENT_DISABLE_TIMING | EVENT_INTERPROCESS))
    }

    pub(super) fn event_destroy_impl(&mut self, event: u64) -> ExecResult<()> {
        let (e, _) = self.events.remove(event)?;
        self.bind()?;
        e.destroy().map_err(to_status)
    }

    pub(super) fn event_record_impl(
        &mut self,
        event: u64,
        stream: u64,
        flags: u32,
    ) -> ExecResult<()> {
        let (e, _) = self.events.get(event)?;
        let s = stream_ref(&self.streams, stream)?;
        if flags & !EVENT_EXTERNAL != 0 {
            return Err(Status::INVALID_VALUE);
        }
        self.bind()?;
        e.record(s, flags).map_err(to_status)
    }

    pub(super) fn event_synchronize_impl(&mut self, event: u64) -> ExecResult<()> {
        let (e, _) = self.events.get(event)?;
        self.bind()?;
        self.may_print = true;
        let r = e.synchronize(&self.wait).map_err(Status::from);
        self.settle(r)
    }

    pub(super) fn event_query_impl(&mut self, event: u64) -> ExecResult<()> {
        let (e, _) = self.events.get(event)?;
        self.bind()?;
        e.query().map_err(to_status)
    }

    pub(super) fn event_elapsed_impl(
        &mut self,
        start: u64,
        end: u64,
    ) -> ExecResult<EventElapsedResp> {
        let (s, _) = self.events.get(start)?;
        let (e, _) = self.events.get(end)?;
        self.bind()?;
        let ms = s.elapsed(e).map_err(to_status)?;
        Ok(EventElapsedResp { ms, reserved: 0 })
    }
}
