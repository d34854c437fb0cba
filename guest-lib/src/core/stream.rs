// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Streams and events.

use crate::client::{self, Client, EventInfo, StreamInfo};
use crate::core::capture::capture_stream_handle;
use crate::core::capture::stream_handle;
use crate::core::handle::event_handle;
use crate::core::handle::next_stream_id;
use crate::error::{Error, Result};
use crate::ffi::{STREAM_LEGACY, STREAM_PER_THREAD, cudaEvent_t, cudaStream_t};
use crate::state;
use std::ffi::c_int;
use vcuda_protocol::{
    EventCreateReq, EventElapsedReq, EventElapsedResp, EventRecordReq, HandleReq, HandleResp,
    StreamCreateReq, StreamWaitEventReq, ops,
};

/// `cudaStreamNonBlocking`.
pub(crate) const STREAM_NON_BLOCKING: u32 = 0x1;
/// `cudaEventDefault | BlockingSync | DisableTiming | Interprocess`.
pub(crate) const EVENT_FLAGS: u32 = 0x1 | 0x2 | 0x4;
/// `cudaEventRecordExternal`.
pub(crate) const EVENT_RECORD_FLAGS: u32 = 0x1;

/// `cudaStreamCreateWithPriority`: a new stream's handle. `out_is_null`: the program gave
/// no place for it (`cudaErrorInvalidValue`, checked where CUDA checks it, before anything
/// is made).
pub(crate) fn create_stream(out_is_null: bool, flags: u32, priority: c_int) -> Result<u64> {
    let c = client::client()?;
    c.check_sticky()?;
    if out_is_null || flags & !STREAM_NON_BLOCKING != 0 {
        return Err(Error::INVALID_VALUE);
    }
    let device = c.check_device(state::device())?;
    let priority = priority.clamp(-5, 0);
    let r: HandleResp = c.call::<ops::StreamCreate>(&StreamCreateReq {
        device,
        flags,
        priority,
        reserved: 0,
    })?;
    c.streams.lock().unwrap_or_else(|e| e.into_inner()).insert(
        r.handle,
        StreamInfo {
            device: device as i32,
            flags,
            priority,
            id: next_stream_id(),
        },
    );
    Ok(r.handle)
}

pub(crate) fn stream_info(c: &Client, s: cudaStream_t) -> Result<StreamInfo> {
    match s as usize {
        0 | STREAM_LEGACY | STREAM_PER_THREAD => Ok(StreamInfo {
            device: state::device(),
            flags: 0,
            priority: 0,
            id: 0,
        }),
        h => c
            .streams
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(h as u64))
            .copied()
            .ok_or(Error::INVALID_HANDLE),
    }
}

pub(crate) fn sync_stream(s: cudaStream_t, ptsz: bool) -> Result<()> {
    let c = client::client()?;
    let handle = stream_handle(c, s, ptsz)?;
    unless_idle::<ops::StreamSynchronize>(c, handle)?;
    crate::core::pool::on_sync(c, Some(handle))
}

/// Asks the backend `O` (a synchronize or a query) of stream `handle`, unless this thread
/// knows the stream idle (see [`Client::settled_sync`]); a success leaves it known idle.
fn unless_idle<O: vcuda_protocol::Op<Req = HandleReq>>(c: &Client, handle: u64) -> Result<()> {
    if let Some(r) = c.settled_sync(handle) {
        return r;
    }
    c.call::<O>(&HandleReq { handle })?;
    state::settled(handle);
    Ok(())
}

pub(crate) fn query_stream(s: cudaStream_t, ptsz: bool) -> Result<()> {
    let c = client::client()?;
    let handle = stream_handle(c, s, ptsz)?;
    unless_idle::<ops::StreamQuery>(c, handle)
}

pub(crate) fn wait_event(s: cudaStream_t, e: cudaEvent_t, flags: u32, ptsz: bool) -> Result<()> {
    let c = client::client()?;
    c.check_sticky()?;
    let stream = capture_stream_handle(c, s, ptsz)?;
    let event = event_handle(c, e)?;
    if flags & !1 != 0 {
        return Err(Error::INVALID_VALUE);
    }
    if crate::core::capture::wait_event(stream, event, flags)? {
        return Ok(());
    }
    c.post::<ops::StreamWaitEvent>(&StreamWaitEventReq {
        stream,
        event,
        flags,
        reserved: 0,
    })
}

/// Makes backend stream `stream` wait for `event` (posted).
pub(crate) fn post_wait(c: &Client, stream: u64, event: u64) -> Result<()> {
    c.post::<ops::StreamWaitEvent>(&StreamWaitEventReq {
        stream,
        event,
        flags: 0,
        reserved: 0,
    })
}

/// Records `event` on backend stream `stream` (posted).
pub(crate) fn post_record(c: &Client, event: u64, stream: u64) -> Result<()> {
    c.post::<ops::EventRecord>(&EventRecordReq {
        event,
        stream,
        flags: 0,
        reserved: 0,
    })
}

/// `cudaEventCreateWithFlags`: a new event's handle (`out_is_null` as for
/// [`create_stream`]).
pub(crate) fn create_event(out_is_null: bool, flags: u32) -> Result<u64> {
    let c = client::client()?;
    c.check_sticky()?;
    if out_is_null || flags & !EVENT_FLAGS != 0 || (flags & 0x4 != 0 && flags & 0x2 == 0) {
        return Err(Error::INVALID_VALUE);
    }
    let device = c.check_device(state::device())?;
    let r: HandleResp = c.call::<ops::EventCreate>(&EventCreateReq { device, flags })?;
    c.events.lock().unwrap_or_else(|e| e.into_inner()).insert(
        r.handle,
        EventInfo {
            device: device as i32,
            flags,
        },
    );
    Ok(r.handle)
}

/// `cudaEventRecord` (for launches that record events of their own).
pub(crate) fn record_event(e: cudaEvent_t, s: cudaStream_t, ptsz: bool) -> Result<()> {
    event_record(e, s, 0, ptsz)
}

pub(crate) fn event_record(e: cudaEvent_t, s: cudaStream_t, flags: u32, ptsz: bool) -> Result<()> {
    let c = client::client()?;
    c.check_sticky()?;
    let event = event_handle(c, e)?;
    let stream = capture_stream_handle(c, s, ptsz)?;
    if flags & !EVENT_RECORD_FLAGS != 0 {
        return Err(Error::INVALID_VALUE);
    }
    if crate::core::capture::record_event(event, stream, flags & EVENT_RECORD_FLAGS != 0)? {
        return Ok(());
    }
    let interprocess = c
        .events
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&event)
        .is_some_and(|i| i.flags & 0x4 != 0);
    if interprocess {
        // Another process may wait on it: the record (and what it follows) reaches the
        // backend before this returns.
        return c.call::<ops::EventRecord>(&EventRecordReq {
            event,
            stream,
            flags,
            reserved: 0,
        });
    }
    c.post::<ops::EventRecord>(&EventRecordReq {
        event,
        stream,
        flags,
        reserved: 0,
    })
}

/// `cudaEventDestroy`.
pub(crate) fn event_destroy(e: cudaEvent_t) -> Result<()> {
    let c = client::client()?;
    let handle = e as u64;
    if c.events
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&handle)
        .is_none()
    {
        return Err(Error::INVALID_HANDLE);
    }
    c.call::<ops::EventDestroy>(&HandleReq { handle })
}

/// `cudaEventElapsedTime`: milliseconds from `start` to `end` (`out_is_null` as for
/// [`create_stream`]).
pub(crate) fn elapsed_time(out_is_null: bool, start: cudaEvent_t, end: cudaEvent_t) -> Result<f32> {
    let c = client::client()?;
    if out_is_null {
        return Err(Error::INVALID_VALUE);
    }
    let (start, end) = (event_handle(c, start)?, event_handle(c, end)?);
    crate::core::capture::check_event(start)?;
    crate::core::capture::check_event(end)?;
    let r: EventElapsedResp = c.call::<ops::EventElapsedTime>(&EventElapsedReq { start, end })?;
    Ok(r.ms)
}

/// `cudaEventQuery`.
pub(crate) fn event_query(e: cudaEvent_t) -> Result<()> {
    let c = client::client()?;
    let handle = event_handle(c, e)?;
    crate::core::capture::check_event(handle)?;
    c.call::<ops::EventQuery>(&HandleReq { handle })
}

/// `cudaEventRecord`.
pub(crate) fn event_record_call(e: cudaEvent_t, s: cudaStream_t) -> Result<()> {
    event_record(e, s, 0, false)
}

/// `cudaEventRecordWithFlags`.
pub(crate) fn event_record_with_flags(e: cudaEvent_t, s: cudaStream_t, flags: u32) -> Result<()> {
    event_record(e, s, flags, false)
}

/// `cudaEventSynchronize`.
pub(crate) fn event_synchronize(e: cudaEvent_t) -> Result<()> {
    let c = client::client()?;
    let handle = event_handle(c, e)?;
    crate::core::capture::check_event(handle)?;
    c.call::<ops::EventSynchronize>(&HandleReq { handle })
}

/// `cudaStreamDestroy`.
pub(crate) fn stream_destroy(s: cudaStream_t) -> Result<()> {
    let c = client::client()?;
    let handle = s as u64;
    if c.streams
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&handle)
        .is_none()
    {
        return Err(Error::INVALID_HANDLE);
    }
    crate::core::attr_table::forget_stream(c, handle);
    c.call::<ops::StreamDestroy>(&HandleReq { handle })
}

/// `cudaStreamQuery`.
pub(crate) fn stream_query(s: cudaStream_t) -> Result<()> {
    query_stream(s, false)
}

/// `cudaStreamSynchronize`.
pub(crate) fn stream_synchronize(s: cudaStream_t) -> Result<()> {
    sync_stream(s, false)
}

/// `cudaStreamWaitEvent`.
pub(crate) fn stream_wait_event(s: cudaStream_t, e: cudaEvent_t, flags: u32) -> Result<()> {
    wait_event(s, e, flags, false)
}
