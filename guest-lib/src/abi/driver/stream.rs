// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Streams and events: the runtime's, owned by the context that made them.

use std::ffi::{c_int, c_uint};

use crate::core::context::{current, disown, own};
use crate::error::CuError;
use crate::ffi::{cudaEvent_t, cudaStream_t};

entry_lib! {
    fn cuStreamCreate(s: *mut cudaStream_t, flags: c_uint) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointer.
        unsafe { crate::abi::stream_args::stream_create_with_priority(s, flags, 0) }.map_err(crate::error::CuError::from)?;
        // SAFETY: written just above.
        own(|o| o.streams.push(unsafe { *s } as usize))
    }

    fn cuStreamCreateWithPriority(s: *mut cudaStream_t, flags: c_uint, priority: c_int) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointer.
        unsafe { crate::abi::stream_args::stream_create_with_priority(s, flags, priority) }.map_err(crate::error::CuError::from)?;
        // SAFETY: written just above.
        own(|o| o.streams.push(unsafe { *s } as usize))
    }

    fn cuStreamDestroy_v2(s: cudaStream_t) -> Result<(), CuError> {
        current()?;
        crate::core::stream::stream_destroy(s).map_err(crate::error::CuError::from)?;
        disown(|o| o.streams.retain(|&x| x != s as usize));
        Ok(())
    }

    fn cuStreamSynchronize(s: cudaStream_t) -> Result<(), CuError> {
        current()?;
        crate::core::stream::stream_synchronize(s).map_err(crate::error::CuError::from)
    }

    fn cuStreamQuery(s: cudaStream_t) -> Result<(), CuError> {
        current()?;
        crate::core::stream::stream_query(s).map_err(crate::error::CuError::from)
    }

    fn cuStreamWaitEvent(s: cudaStream_t, e: cudaEvent_t, flags: c_uint) -> Result<(), CuError> {
        current()?;
        crate::core::stream::stream_wait_event(s, e, flags).map_err(crate::error::CuError::from)
    }

    fn cuEventCreate(e: *mut cudaEvent_t, flags: c_uint) -> Result<(), CuError> {
        current()?;
        // CU_EVENT_* and cudaEvent* flags have the same values.
        // SAFETY: forwarding the caller's output pointer.
        unsafe { crate::abi::stream_args::event_create_with_flags(e, flags) }.map_err(crate::error::CuError::from)?;
        // SAFETY: written just above.
        own(|o| o.events.push(unsafe { *e } as usize))
    }

    fn cuEventDestroy_v2(e: cudaEvent_t) -> Result<(), CuError> {
        current()?;
        crate::core::stream::event_destroy(e).map_err(crate::error::CuError::from)?;
        disown(|o| o.events.retain(|&x| x != e as usize));
        Ok(())
    }

    fn cuEventRecord(e: cudaEvent_t, s: cudaStream_t) -> Result<(), CuError> {
        current()?;
        crate::core::stream::event_record_call(e, s).map_err(crate::error::CuError::from)
    }

    fn cuEventRecordWithFlags(e: cudaEvent_t, s: cudaStream_t, flags: c_uint) -> Result<(), CuError> {
        current()?;
        crate::core::stream::event_record_with_flags(e, s, flags).map_err(crate::error::CuError::from)
    }

    fn cuEventQuery(e: cudaEvent_t) -> Result<(), CuError> {
        current()?;
        crate::core::stream::event_query(e).map_err(crate::error::CuError::from)
    }

    fn cuEventSynchronize(e: cudaEvent_t) -> Result<(), CuError> {
        current()?;
        crate::core::stream::event_synchronize(e).map_err(crate::error::CuError::from)
    }

    fn cuEventElapsedTime_v2(ms: *mut f32, start: cudaEvent_t, end: cudaEvent_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointer; the runtime checks the handles.
        unsafe { crate::abi::stream_args::event_elapsed_time(ms, start, end) }.map_err(crate::error::CuError::from)
    }

    fn cuEventElapsedTime(ms: *mut f32, start: cudaEvent_t, end: cudaEvent_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointer; the runtime checks the handles.
        unsafe { crate::abi::stream_args::event_elapsed_time(ms, start, end) }.map_err(crate::error::CuError::from)
    }

    fn cuStreamGetPriority(s: cudaStream_t, priority: *mut c_int) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointer; the runtime checks the handle.
        unsafe { crate::abi::stream_args::stream_get_priority(s, priority) }.map_err(crate::error::CuError::from)
    }

    fn cuStreamGetFlags(s: cudaStream_t, flags: *mut c_uint) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointer; the runtime checks the handle.
        unsafe { crate::abi::stream_args::stream_get_flags(s, flags) }.map_err(crate::error::CuError::from)
    }
}
