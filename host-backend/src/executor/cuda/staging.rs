// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Pinned staging buffers for copies from and to pageable memory.
//!
//! A session owns up to `depth` page-locked buffers of `chunk` bytes, allocated on first
//! use. Large copies move through them in windows: host to device, the CPU fills buffer
//! *i* while the DMA engine drains buffer *i - 1*; device to host, the DMA engine fills
//! buffer *i* while the CPU empties buffer *i - 1* into the guest's memory. Each buffer
//! carries an event recorded after its last DMA, so it is only reused once that DMA has
//! finished; a host-to-device copy can thus return (asynchronously) while its last windows
//! are still in flight.
//!
//! Sizes (defaults in [`super::CudaConfig`]): 4 MiB windows keep the per-window driver
//! overhead (a copy call and an event record, a few microseconds) under 5% even at PCIe 5
//! speeds (~80 us per window at 50 GB/s), while the pipeline fills after one window;
//! 4 buffers let two windows be in flight while the CPU works on a third. That is 16 MiB of
//! pinned memory per session, allocated only when a session copies more than
//! [`super::SMALL_COPY`] bytes of pageable memory.

use super::error::to_status;
use super::owned::{Context, Event, HostBuffer, StreamRef};
use super::wait::Wait;
use crate::executor::ExecResult;

/// `CU_EVENT_DISABLE_TIMING`: the cheapest kind of event.
const EVENT_DISABLE_TIMING: u32 = 0x2;

/// One pinned buffer and the event that says when its last DMA finished.
#[derive(Debug)]
pub struct Buffer {
    /// Declared before `host`, so it is destroyed first when the buffer drops.
    event: Event,
    host: HostBuffer,
    pending: bool,
}

impl Buffer {
    /// Start of the buffer.
    pub fn ptr(&self) -> *mut u8 {
        self.host.as_mut_ptr()
    }

    /// The whole buffer as bytes. Only call after [`Buffer::wait`]: no DMA may be using it.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: `host` is a live allocation of `size()` bytes owned by this buffer (freed
        // only when it drops, which the borrow prevents); the exclusive borrow and the
        // caller's wait rule out other accesses.
        unsafe { std::slice::from_raw_parts_mut(self.host.as_mut_ptr(), self.host.size()) }
    }

    /// Waits until the buffer's last DMA has finished.
    pub fn wait(&mut self, wait: &Wait) -> ExecResult<()> {
        if self.pending {
            self.event.synchronize(wait)?;
            self.pending = false;
        }
        Ok(())
    }

    /// Marks the DMAs issued so far on `stream` as the buffer's last use.
    pub fn record(&mut self, stream: StreamRef<'_>) -> ExecResult<()> {
        self.event.record(stream, 0).map_err(to_status)?;
        self.pending = true;
        Ok(())
    }
}

/// A session's staging buffers.
#[derive(Debug)]
pub struct Pool {
    chunk: usize,
    depth: usize,
    bufs: Vec<Buffer>,
    next: usize,
}

impl Pool {
    /// An empty pool of up to `depth` buffers of `chunk` bytes.
    pub fn new(chunk: usize, depth: usize) -> Self {
        Self {
            chunk: chunk.max(4096),
            depth: depth.max(2),
            bufs: Vec::new(),
            next: 0,
        }
    }

    /// Bytes per buffer.
    pub fn chunk(&self) -> usize {
        self.chunk
    }

    /// Most buffers.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Index of the next buffer in rotation (the least recently used one once all exist).
    pub fn next_index(&mut self) -> usize {
        let i = self.next;
        self.next = (self.next + 1) % self.depth;
        i
    }

    /// Buffer `i` (`i < depth`), allocated in `ctx` if needed. It may still be in use by a
    /// DMA: call [`Buffer::wait`] before touching its bytes.
    pub fn get(&mut self, ctx: &Context, i: usize) -> ExecResult<&mut Buffer> {
        while self.bufs.len() <= i {
            let host = ctx.host_alloc(self.chunk).map_err(to_status)?;
            // If this fails, dropping `host` frees it again.
            let event = ctx.event_create(EVENT_DISABLE_TIMING).map_err(to_status)?;
            self.bufs.push(Buffer {
                event,
                host,
                pending: false,
            });
        }
        Ok(&mut self.bufs[i])
    }

    /// Frees every buffer after its DMAs finish. The session's context must be current.
    /// If the wait is cancelled, the buffers still in use stay: the caller destroys the
    /// context next, which frees them, and then [`Pool::forget`]s them.
    pub fn release(&mut self, wait: &Wait) {
        while let Some(mut b) = self.bufs.pop() {
            // Once the DMAs finished (or the context is broken, when no DMA will run any
            // more), dropping the buffer destroys its event, then frees its memory.
            if b.wait(wait).is_err() && wait.is_cancelled() {
                self.bufs.push(b);
                return;
            }
        }
        self.next = 0;
    }

    /// Forgets the buffers without freeing them: for when their context was destroyed,
    /// which freed them (their owned handles see that and make no driver call).
    pub fn forget(&mut self) {
        self.bufs.clear();
        self.next = 0;
    }
}
