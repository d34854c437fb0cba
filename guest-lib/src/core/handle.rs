// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Stream and event handles: what a `cudaStream_t` or `cudaEvent_t` names in the backend,
//! and the numbers `cudaStreamGetId` gives. No capture checks here: those are
//! [`super::capture::stream_handle`] and [`super::capture::capture_stream_handle`], which
//! every asynchronous request goes through.

use crate::client::Client;
use crate::error::{Error, Result};
use crate::ffi::{STREAM_LEGACY, STREAM_PER_THREAD, cudaEvent_t, cudaStream_t};
use crate::state;
use vcuda_protocol::{HandleResp, StreamCreateReq, ops};

/// The backend handle for a `cudaStream_t`, with no capture checks.
pub(crate) fn resolve(c: &Client, s: cudaStream_t, per_thread_default: bool) -> Result<u64> {
    match s as usize {
        0 if !per_thread_default => Ok(0),
        STREAM_LEGACY => Ok(0),
        0 | STREAM_PER_THREAD => per_thread_stream(c),
        h => known(&c.streams, h as u64),
    }
}

/// The calling thread's per-thread default stream: a blocking stream made on first use
/// (it synchronizes with the legacy default stream, as CUDA's does).
pub(crate) fn per_thread_stream(c: &Client) -> Result<u64> {
    let generation = c.generation();
    if let Some(h) = state::per_thread_stream(generation) {
        return Ok(h);
    }
    let device = c.check_device(state::device())?;
    let r: HandleResp = c.call::<ops::StreamCreate>(&StreamCreateReq {
        device,
        flags: 0,
        priority: 0,
        reserved: 0,
    })?;
    state::set_per_thread_stream(generation, r.handle);
    PER_THREAD_IDS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(r.handle, next_stream_id());
    Ok(r.handle)
}

/// The legacy default stream's number (`cudaStreamGetId`).
pub(crate) const LEGACY_STREAM_ID: u64 = 7;

/// The next stream's number. NVIDIA's runtime numbers streams in the order they are made,
/// per process, never reusing one (a per-thread default stream when first used); the legacy
/// default stream is 7 and the first stream a program makes 13 (H100, CUDA 13.0, measured).
/// Programs that print them print what they print natively.
pub(crate) static NEXT_STREAM_ID: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(13);

pub(crate) fn next_stream_id() -> u64 {
    NEXT_STREAM_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The numbers of per-thread default streams, by handle.
pub(crate) static PER_THREAD_IDS: std::sync::Mutex<std::collections::BTreeMap<u64, u64>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

/// The number of the stream with handle `h` (as [`resolve`] gives it).
pub(crate) fn stream_number(c: &Client, h: u64) -> u64 {
    if h == 0 {
        return LEGACY_STREAM_ID;
    }
    if let Some(i) = c.streams.lock().unwrap_or_else(|e| e.into_inner()).get(&h) {
        return i.id;
    }
    *PER_THREAD_IDS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(h)
        .or_insert_with(next_stream_id)
}

/// The backend handle for a `cudaEvent_t` the session made.
pub(crate) fn event_handle(c: &Client, e: cudaEvent_t) -> Result<u64> {
    known(&c.events, e as u64)
}

/// `h` if the session's table `table` holds it, else `cudaErrorInvalidResourceHandle`.
fn known<V>(table: &std::sync::Mutex<rustc_hash::FxHashMap<u64, V>>, h: u64) -> Result<u64> {
    if table
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .contains_key(&h)
    {
        Ok(h)
    } else {
        Err(Error::INVALID_HANDLE)
    }
}
