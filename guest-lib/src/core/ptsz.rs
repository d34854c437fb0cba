// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The runtime's remaining per-thread default stream variants (`*_ptsz`): what a program
//! built with `nvcc --default-stream per-thread` calls. Stream 0 there is the calling
//! thread's default stream (`cudaStreamPerThread`); any other stream is used as given.
//! `cudaGetDriverEntryPoint*_ptsz` return the driver's per-thread variants by default.

use crate::ffi::STREAM_PER_THREAD;
use crate::ffi::cudaStream_t;

/// `cudaEnableDefault` in a per-thread program means `cudaEnablePerThreadDefaultStream`.
pub(crate) fn per_thread_flags(flags: u64) -> u64 {
    if flags == 0 { 2 } else { flags }
}

/// Stream 0 names the calling thread's default stream in a `_ptsz` call.
pub(crate) fn per_thread(s: cudaStream_t) -> cudaStream_t {
    if s.is_null() {
        STREAM_PER_THREAD as cudaStream_t
    } else {
        s
    }
}
