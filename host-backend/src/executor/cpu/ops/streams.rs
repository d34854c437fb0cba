// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CPU executor's streams and events ([`StreamOps`]): work runs in issue order, so
//! streams only need checking, and events are stamped when reached.

use std::time::Instant;

use vcuda_protocol::EventElapsedResp;

use crate::executor::cpu::{
    CpuExecutor, EVENT_DISABLE_TIMING, EVENT_FLAGS, EVENT_INTERPROCESS, Event,
    MAX_STREAMS_OR_EVENTS, STREAM_NON_BLOCKING, Stream,
};
use crate::executor::{ExecResult, Status, StreamOps};

impl StreamOps for CpuExecutor {
    fn stream_create(&mut self, device: u32, flags: u32, priority: i32) -> ExecResult<u64> {
        self.check_device(device)?;
        if flags & !STREAM_NON_BLOCKING != 0 {
            return Err(Status::INVALID_VALUE);
        }
        if self.streams.len() >= MAX_STREAMS_OR_EVENTS {
            return Err(Status::MEMORY_ALLOCATION);
        }
        let h = self.new_handle();
        self.streams.insert(
            h,
            Stream {
                _flags: flags,
                _priority: priority.clamp(-5, 0),
            },
        );
        Ok(h)
    }

    fn stream_destroy(&mut self, stream: u64) -> ExecResult<()> {
        self.streams
            .remove(&stream)
            .map(drop)
            .ok_or(Status::INVALID_HANDLE)
    }

    fn stream_synchronize(&mut self, stream: u64) -> ExecResult<()> {
        self.check_stream(stream)
    }

    fn stream_query(&mut self, stream: u64) -> ExecResult<()> {
        self.check_stream(stream)
    }

    fn stream_wait_event(&mut self, stream: u64, event: u64, flags: u32) -> ExecResult<()> {
        self.check_stream(stream)?;
        if flags & !1 != 0 {
            return Err(Status::INVALID_VALUE);
        }
        self.events
            .get(&event)
            .map(drop)
            .ok_or(Status::INVALID_HANDLE)
    }

    fn event_create(&mut self, device: u32, flags: u32) -> ExecResult<u64> {
        self.check_device(device)?;
        if flags & !EVENT_FLAGS != 0
            || (flags & EVENT_INTERPROCESS != 0 && flags & EVENT_DISABLE_TIMING == 0)
        {
            return Err(Status::INVALID_VALUE);
        }
        if self.events.len() >= MAX_STREAMS_OR_EVENTS {
            return Err(Status::MEMORY_ALLOCATION);
        }
        let h = self.new_handle();
        self.events.insert(
            h,
            Event {
                flags,
                recorded: None,
            },
        );
        Ok(h)
    }

    fn event_destroy(&mut self, event: u64) -> ExecResult<()> {
        self.events.remove(&event).ok_or(Status::INVALID_HANDLE)?;
        self.ipc_events.remove(event);
        Ok(())
    }

    fn event_record(&mut self, event: u64, stream: u64, _flags: u32) -> ExecResult<()> {
        self.check_stream(stream)?;
        let e = self.events.get_mut(&event).ok_or(Status::INVALID_HANDLE)?;
        e.recorded = Some(Instant::now());
        Ok(())
    }

    fn event_synchronize(&mut self, event: u64) -> ExecResult<()> {
        self.events
            .get(&event)
            .map(drop)
            .ok_or(Status::INVALID_HANDLE)
    }

    fn event_query(&mut self, event: u64) -> ExecResult<()> {
        self.events
            .get(&event)
            .map(drop)
            .ok_or(Status::INVALID_HANDLE)
    }

    fn event_elapsed(&mut self, start: u64, end: u64) -> ExecResult<EventElapsedResp> {
        let s = self.events.get(&start).ok_or(Status::INVALID_HANDLE)?;
        let e = self.events.get(&end).ok_or(Status::INVALID_HANDLE)?;
        if (s.flags | e.flags) & EVENT_DISABLE_TIMING != 0 {
            return Err(Status::INVALID_HANDLE);
        }
        let (Some(t0), Some(t1)) = (s.recorded, e.recorded) else {
            return Err(Status::INVALID_HANDLE);
        };
        let ms = if t1 >= t0 {
            t1.duration_since(t0).as_secs_f64() * 1e3
        } else {
            -(t0.duration_since(t1).as_secs_f64() * 1e3)
        };
        Ok(EventElapsedResp {
            ms: ms as f32,
            reserved: 0,
        })
    }
}
