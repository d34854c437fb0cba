// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Streams and events.

use crate::abi::stream_args as args;
use crate::core::stream::*;
use crate::ffi::{cudaEvent_t, cudaStream_t};
use std::ffi::c_int;

entry! {
    fn cudaStreamCreate(p: *mut cudaStream_t) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { args::stream_create_with_priority(p, 0, 0) }
    }
    fn cudaStreamCreateWithFlags(p: *mut cudaStream_t, flags: u32) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { args::stream_create_with_priority(p, flags, 0) }
    }
    fn cudaStreamCreateWithPriority(p: *mut cudaStream_t, flags: u32, priority: c_int) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { args::stream_create_with_priority(p, flags, priority) }
    }

    fn cudaStreamDestroy(s: cudaStream_t) {
        stream_destroy(s)
    }

    fn cudaStreamSynchronize(s: cudaStream_t) {
        stream_synchronize(s)
    }
    fn cudaStreamSynchronize_ptsz(s: cudaStream_t) { sync_stream(s, true) }
    fn cudaStreamQuery(s: cudaStream_t) {
        stream_query(s)
    }
    fn cudaStreamQuery_ptsz(s: cudaStream_t) { query_stream(s, true) }
    fn cudaStreamWaitEvent(s: cudaStream_t, e: cudaEvent_t, flags: u32) {
        stream_wait_event(s, e, flags)
    }
    fn cudaStreamWaitEvent_ptsz(s: cudaStream_t, e: cudaEvent_t, flags: u32) { wait_event(s, e, flags, true) }

    fn cudaStreamGetFlags(s: cudaStream_t, flags: *mut u32) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { args::stream_get_flags(s, flags) }
    }

    fn cudaStreamGetPriority(s: cudaStream_t, priority: *mut c_int) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { args::stream_get_priority(s, priority) }
    }

    fn cudaStreamGetDevice(s: cudaStream_t, device: *mut c_int) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { args::stream_get_device(s, device) }
    }

    fn cudaEventCreate(p: *mut cudaEvent_t) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { args::event_create_with_flags(p, 0) }
    }
    fn cudaEventCreateWithFlags(p: *mut cudaEvent_t, flags: u32) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { args::event_create_with_flags(p, flags) }
    }

    fn cudaEventDestroy(e: cudaEvent_t) {
        event_destroy(e)
    }

    fn cudaEventRecord(e: cudaEvent_t, s: cudaStream_t) {
        event_record_call(e, s)
    }
    fn cudaEventRecord_ptsz(e: cudaEvent_t, s: cudaStream_t) { event_record(e, s, 0, true) }
    fn cudaEventRecordWithFlags(e: cudaEvent_t, s: cudaStream_t, flags: u32) {
        event_record_with_flags(e, s, flags)
    }
    fn cudaEventRecordWithFlags_ptsz(e: cudaEvent_t, s: cudaStream_t, flags: u32) { event_record(e, s, flags, true) }

    fn cudaEventSynchronize(e: cudaEvent_t) {
        event_synchronize(e)
    }

    fn cudaEventQuery(e: cudaEvent_t) {
        event_query(e)
    }

    fn cudaEventElapsedTime(ms: *mut f32, start: cudaEvent_t, end: cudaEvent_t) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { args::event_elapsed_time(ms, start, end) }
    }
}
