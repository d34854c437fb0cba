// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Streams and events.

use crate::client::{self};
use crate::core::stream::*;
use crate::error::Error;
use crate::ffi::{cudaEvent_t, cudaStream_t, write_out};
use std::ffi::c_int;
use vcuda_protocol::{EventElapsedReq, EventElapsedResp, HandleReq, ops};

entry! {
    fn cudaStreamCreate(p: *mut cudaStream_t) { stream_create(p, 0, 0) }
    fn cudaStreamCreateWithFlags(p: *mut cudaStream_t, flags: u32) { stream_create(p, flags, 0) }
    fn cudaStreamCreateWithPriority(p: *mut cudaStream_t, flags: u32, priority: c_int) { stream_create(p, flags, priority) }

    fn cudaStreamDestroy(s: cudaStream_t) {
        let c = client::client()?;
        let handle = s as u64;
        if c.streams.lock().unwrap_or_else(|e| e.into_inner()).remove(&handle).is_none() {
            return Err(Error::INVALID_HANDLE);
        }
        crate::core::attrs::forget_stream(c, handle);
        c.call::<ops::StreamDestroy>(&HandleReq { handle })
    }

    fn cudaStreamSynchronize(s: cudaStream_t) { sync_stream(s, false) }
    fn cudaStreamSynchronize_ptsz(s: cudaStream_t) { sync_stream(s, true) }
    fn cudaStreamQuery(s: cudaStream_t) { query_stream(s, false) }
    fn cudaStreamQuery_ptsz(s: cudaStream_t) { query_stream(s, true) }
    fn cudaStreamWaitEvent(s: cudaStream_t, e: cudaEvent_t, flags: u32) { wait_event(s, e, flags, false) }
    fn cudaStreamWaitEvent_ptsz(s: cudaStream_t, e: cudaEvent_t, flags: u32) { wait_event(s, e, flags, true) }

    fn cudaStreamGetFlags(s: cudaStream_t, flags: *mut u32) {
        let i = stream_info(client::client()?, s)?;
        // SAFETY: output pointer from the caller, checked for null.
        unsafe { write_out(flags, i.flags) }
    }

    fn cudaStreamGetPriority(s: cudaStream_t, priority: *mut c_int) {
        let i = stream_info(client::client()?, s)?;
        // SAFETY: output pointer from the caller, checked for null.
        unsafe { write_out(priority, i.priority) }
    }

    fn cudaStreamGetDevice(s: cudaStream_t, device: *mut c_int) {
        let i = stream_info(client::client()?, s)?;
        // SAFETY: output pointer from the caller, checked for null.
        unsafe { write_out(device, i.device) }
    }

    fn cudaEventCreate(p: *mut cudaEvent_t) { event_create(p, 0) }
    fn cudaEventCreateWithFlags(p: *mut cudaEvent_t, flags: u32) { event_create(p, flags) }

    fn cudaEventDestroy(e: cudaEvent_t) {
        let c = client::client()?;
        let handle = e as u64;
        if c.events.lock().unwrap_or_else(|e| e.into_inner()).remove(&handle).is_none() {
            return Err(Error::INVALID_HANDLE);
        }
        c.call::<ops::EventDestroy>(&HandleReq { handle })
    }

    fn cudaEventRecord(e: cudaEvent_t, s: cudaStream_t) { event_record(e, s, 0, false) }
    fn cudaEventRecord_ptsz(e: cudaEvent_t, s: cudaStream_t) { event_record(e, s, 0, true) }
    fn cudaEventRecordWithFlags(e: cudaEvent_t, s: cudaStream_t, flags: u32) { event_record(e, s, flags, false) }
    fn cudaEventRecordWithFlags_ptsz(e: cudaEvent_t, s: cudaStream_t, flags: u32) { event_record(e, s, flags, true) }

    fn cudaEventSynchronize(e: cudaEvent_t) {
        let c = client::client()?;
        let handle = event_handle(c, e)?;
        crate::core::capture::check_event(handle)?;
        c.call::<ops::EventSynchronize>(&HandleReq { handle })
    }

    fn cudaEventQuery(e: cudaEvent_t) {
        let c = client::client()?;
        let handle = event_handle(c, e)?;
        crate::core::capture::check_event(handle)?;
        c.call::<ops::EventQuery>(&HandleReq { handle })
    }

    fn cudaEventElapsedTime(ms: *mut f32, start: cudaEvent_t, end: cudaEvent_t) {
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
}
