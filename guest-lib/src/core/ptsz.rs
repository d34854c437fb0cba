// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The runtime's remaining per-thread default stream variants (`*_ptsz`): what a program
//! built with `nvcc --default-stream per-thread` calls. Stream 0 there is the calling
//! thread's default stream (`cudaStreamPerThread`); any other stream is used as given.
//! `cudaGetDriverEntryPoint*_ptsz` return the driver's per-thread variants by default.

use crate::error::{Error, Result};

/// A base entry point's result.
pub(crate) fn done(r: u32) -> Result<()> {
    if r == 0 { Ok(()) } else { Err(Error(r)) }
}

/// `cudaEnableDefault` in a per-thread program means `cudaEnablePerThreadDefaultStream`.
pub(crate) fn per_thread_flags(flags: u64) -> u64 {
    if flags == 0 { 2 } else { flags }
}
