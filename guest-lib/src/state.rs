// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Per-thread state, as the CUDA runtime keeps it: the current device, the last error,
//! pushed launch configurations, the per-thread default stream, and which stream the
//! thread last saw idle.

use std::cell::{Cell, RefCell};

use crate::ffi::{cudaStream_t, dim3};

/// A configuration pushed by `__cudaPushCallConfiguration` (or `<<<...>>>`).
#[derive(Clone, Copy, Debug)]
pub struct CallConfig {
    /// Grid.
    pub grid: dim3,
    /// Block.
    pub block: dim3,
    /// Dynamic shared memory.
    pub shmem: usize,
    /// Stream.
    pub stream: cudaStream_t,
}

thread_local! {
    static DEVICE: Cell<i32> = const { Cell::new(0) };
    static LAST_ERROR: Cell<u32> = const { Cell::new(0) };
    static CONFIGS: RefCell<Vec<CallConfig>> = const { RefCell::new(Vec::new()) };
    static PER_THREAD_STREAM: Cell<Option<(u64, u64)>> = const { Cell::new(None) };
    static LAST_CALL: Cell<u64> = const { Cell::new(0) };
    static SETTLED: Cell<Option<(u64, u64)>> = const { Cell::new(None) };
}

/// The thread's current device.
pub fn device() -> i32 {
    DEVICE.with(Cell::get)
}

/// Sets the thread's current device.
pub fn set_device(d: i32) {
    DEVICE.with(|c| c.set(d));
}

/// Records an error as the thread's last error.
pub fn set_last_error(code: u32) {
    LAST_ERROR.with(|c| c.set(code));
}

/// The thread's last error, optionally resetting it.
pub fn last_error(reset: bool) -> u32 {
    LAST_ERROR.with(|c| if reset { c.replace(0) } else { c.get() })
}

/// Pushes a launch configuration.
pub fn push_config(c: CallConfig) {
    CONFIGS.with(|v| v.borrow_mut().push(c));
}

/// Pops the latest launch configuration.
pub fn pop_config() -> Option<CallConfig> {
    CONFIGS.with(|v| v.borrow_mut().pop())
}

/// The thread's per-thread default stream handle for session generation `gen`, if made.
pub fn per_thread_stream(generation: u64) -> Option<u64> {
    PER_THREAD_STREAM.with(|c| c.get().filter(|&(g, _)| g == generation).map(|(_, h)| h))
}

/// Remembers the thread's per-thread default stream.
pub fn set_per_thread_stream(generation: u64, handle: u64) {
    PER_THREAD_STREAM.with(|c| c.set(Some((generation, handle))));
}

/// Remembers the sequence number of the thread's last call answered with success.
pub fn called(seq: u64) {
    LAST_CALL.set(seq);
}

/// Records that stream `handle` had finished all its work when the reply to the thread's
/// last call came (a synchronize of it, or a copy from it to the host).
pub fn settled(handle: u64) {
    SETTLED.set(Some((handle, LAST_CALL.get().wrapping_add(1))));
}

/// Whether stream `handle` is still known idle: [`settled`] by this thread, and `next_seq`,
/// the sequence number the next request of the process will take, shows no request since.
pub fn still_settled(handle: u64, next_seq: u64) -> bool {
    SETTLED.get() == Some((handle, next_seq))
}
