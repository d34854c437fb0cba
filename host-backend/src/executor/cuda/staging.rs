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

use cudarc::driver::sys::{CUevent, CUstream};

use super::driver;
use super::error::to_status;
use crate::executor::ExecResult;

/// `CU_EVENT_DISABLE_TIMING`: the cheapest kind of event.
const EVENT_DISABLE_TIMING: u32 = 0x2;

/// One pinned buffer and the event that says when its last DMA finished.
#[derive(Debug)]
pub struct Buffer {
    ptr: *mut u8,
    len: usize,
    event: CUevent,
    pending: bool,
}

impl Buffer {
    /// Start of the buffer.
    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// The whole buffer as bytes. Only call after [`Buffer::wait`]: no DMA may be using it.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` is a live allocation of `len` bytes owned by this buffer; the
        // exclusive borrow and the caller's wait rule out other accesses.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// Waits until the buffer's last DMA has finished.
    pub fn wait(&mut self) -> ExecResult<()> {
        if self.pending {
            // SAFETY: the event is live (owned by this buffer).
            unsafe { driver::event_synchronize(self.event) }.map_err(to_status)?;
            self.pending = false;
        }
        Ok(())
    }

    /// Marks the DMAs issued so far on `stream` as the buffer's last use.
    ///
    /// # Safety
    ///
    /// `stream` is live in the buffer's context (which is current).
    pub unsafe fn record(&mut self, stream: CUstream) -> ExecResult<()> {
        // SAFETY: the event is live; the stream per the caller's contract.
        unsafe { driver::event_record(self.event, stream, 0) }.map_err(to_status)?;
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

    /// Buffer `i` (`i < depth`), allocated in the current context if needed. It may still
    /// be in use by a DMA: call [`Buffer::wait`] before touching its bytes.
    pub fn get(&mut self, i: usize) -> ExecResult<&mut Buffer> {
        while self.bufs.len() <= i {
            let ptr = driver::mem_host_alloc(self.chunk).map_err(to_status)?;
            let event = match driver::event_create(EVENT_DISABLE_TIMING) {
                Ok(e) => e,
                Err(e) => {
                    // SAFETY: just allocated, never used.
                    let _ = unsafe { driver::mem_free_host(ptr) };
                    return Err(to_status(e));
                }
            };
            self.bufs.push(Buffer {
                ptr,
                len: self.chunk,
                event,
                pending: false,
            });
        }
        Ok(&mut self.bufs[i])
    }

    /// Frees every buffer after its DMAs finish. The session's context must be current.
    pub fn release(&mut self) {
        for mut b in self.bufs.drain(..) {
            let _ = b.wait();
            // SAFETY: the buffer's DMAs have finished (or the context is broken, when no
            // DMA will run any more); event and memory are owned by the buffer and freed
            // once, here.
            unsafe {
                let _ = driver::event_destroy(b.event);
                let _ = driver::mem_free_host(b.ptr);
            }
        }
        self.next = 0;
    }

    /// Forgets the buffers without freeing them: for when their context was destroyed,
    /// which freed them.
    pub fn forget(&mut self) {
        self.bufs.clear();
        self.next = 0;
    }
}
