// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Streams and events.

use crate::client::{self, Client, EventInfo, StreamInfo};
use crate::core::capture::capture_stream_handle;
use crate::core::capture::stream_handle;
use crate::core::handle::event_handle;
use crate::core::handle::next_stream_id;
use crate::error::{Error, Result};
use crate::ffi::{STREAM_LEGACY, STREAM_PER_THREAD, cudaEvent_t, cudaStream_t, write_out};
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

pub(crate) fn stream_create(p: *mut cudaStream_t, flags: u32, priority: c_int) -> Result<()> {
    let c = client::client()?;
    c.check_sticky()?;
    if p.is_null() || flags & !STREAM_NON_BLOCKING != 0 {
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
    // SAFETY: checked non-null; the caller's output pointer.
    unsafe { write_out(p, r.handle as cudaStream_t) }
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
    c.call::<ops::StreamSynchronize>(&HandleReq { handle })?;
    crate::core::pool::on_sync(c, Some(handle))
}

pub(crate) fn query_stream(s: cudaStream_t, ptsz: bool) -> Result<()> {
    let c = client::client()?;
    let handle = stream_handle(c, s, ptsz)?;
    c.call::<ops::StreamQuery>(&HandleReq { handle })
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

pub(crate) fn event_create(p: *mut cudaEvent_t, flags: u32) -> Result<()> {
    let c = client::client()?;
    c.check_sticky()?;
    if p.is_null() || flags & !EVENT_FLAGS != 0 || (flags & 0x4 != 0 && flags & 0x2 == 0) {
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
    // SAFETY: checked non-null; the caller's output pointer.
    unsafe { write_out(p, r.handle as cudaEvent_t) }
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

/// `cudaEventCreateWithFlags`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaEventCreateWithFlags` requires of its caller.
pub(crate) unsafe fn event_create_with_flags(p: *mut cudaEvent_t, flags: u32) -> Result<()> {
    event_create(p, flags)
}

/// `cudaEventDestroy`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaEventDestroy` requires of its caller.
pub(crate) unsafe fn event_destroy(e: cudaEvent_t) -> Result<()> {
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

/// `cudaEventElapsedTime`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaEventElapsedTime` requires of its caller.
pub(crate) unsafe fn event_elapsed_time(
    ms: *mut f32,
    start: cudaEvent_t,
    end: cudaEvent_t,
) -> Result<()> {
    let c = client::client()?;
    if ms.is_null() {
        return Err(Error::INVALID_VALUE);
    }
    let (start, end) = (event_handle(c, start)?, event_handle(c, end)?);
    crate::core::capture::check_event(start)?;
    crate::core::capture::check_event(end)?;
    let r: EventElapsedResp = c.call::<ops::EventElapsedTime>(&EventElapsedReq { start, end })?;
    // SAFETY: checked non-null; the caller's output pointer.
    unsafe { write_out(ms, r.ms) }
}

/// `cudaEventQuery`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaEventQuery` requires of its caller.
pub(crate) unsafe fn event_query(e: cudaEvent_t) -> Result<()> {
    let c = client::client()?;
    let handle = event_handle(c, e)?;
    crate::core::capture::check_event(handle)?;
    c.call::<ops::EventQuery>(&HandleReq { handle })
}

/// `cudaEventRecord`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaEventRecord` requires of its caller.
pub(crate) unsafe fn event_record_call(e: cudaEvent_t, s: cudaStream_t) -> Result<()> {
    event_record(e, s, 0, false)
}

/// `cudaEventRecordWithFlags`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaEventRecordWithFlags` requires of its caller.
pub(crate) unsafe fn event_record_with_flags(
    e: cudaEvent_t,
    s: cudaStream_t,
    flags: u32,
) -> Result<()> {
    event_record(e, s, flags, false)
}

/// `cudaEventSynchronize`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaEventSynchronize` requires of its caller.
pub(crate) unsafe fn event_synchronize(e: cudaEvent_t) -> Result<()> {
    let c = client::client()?;
    let handle = event_handle(c, e)?;
    crate::core::capture::check_event(handle)?;
    c.call::<ops::EventSynchronize>(&HandleReq { handle })
}

/// `cudaStreamCreateWithPriority`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaStreamCreateWithPriority` requires of its caller.
pub(crate) unsafe fn stream_create_with_priority(
    p: *mut cudaStream_t,
    flags: u32,
    priority: c_int,
) -> Result<()> {
    stream_create(p, flags, priority)
}

/// `cudaStreamDestroy`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaStreamDestroy` requires of its caller.
pub(crate) unsafe fn stream_destroy(s: cudaStream_t) -> Result<()> {
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

/// `cudaStreamGetDevice`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaStreamGetDevice` requires of its caller.
pub(crate) unsafe fn stream_get_device(s: cudaStream_t, device: *mut c_int) -> Result<()> {
    let i = stream_info(client::client()?, s)?;
    // SAFETY: output pointer from the caller, checked for null.
    unsafe { write_out(device, i.device) }
}

/// `cudaStreamGetFlags`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaStreamGetFlags` requires of its caller.
pub(crate) unsafe fn stream_get_flags(s: cudaStream_t, flags: *mut u32) -> Result<()> {
    let i = stream_info(client::client()?, s)?;
    // SAFETY: output pointer from the caller, checked for null.
    unsafe { write_out(flags, i.flags) }
}

/// `cudaStreamGetPriority`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaStreamGetPriority` requires of its caller.
pub(crate) unsafe fn stream_get_priority(s: cudaStream_t, priority: *mut c_int) -> Result<()> {
    let i = stream_info(client::client()?, s)?;
    // SAFETY: output pointer from the caller, checked for null.
    unsafe { write_out(priority, i.priority) }
}

/// `cudaStreamQuery`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaStreamQuery` requires of its caller.
pub(crate) unsafe fn stream_query(s: cudaStream_t) -> Result<()> {
    query_stream(s, false)
}

/// `cudaStreamSynchronize`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaStreamSynchronize` requires of its caller.
pub(crate) unsafe fn stream_synchronize(s: cudaStream_t) -> Result<()> {
    sync_stream(s, false)
}

/// `cudaStreamWaitEvent`: what the runtime's export does, for it and for the calls that share it.
///
/// # Safety
///
/// The pointer arguments are valid as `cudaStreamWaitEvent` requires of its caller.
pub(crate) unsafe fn stream_wait_event(s: cudaStream_t, e: cudaEvent_t, flags: u32) -> Result<()> {
    wait_event(s, e, flags, false)
}
