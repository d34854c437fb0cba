// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Graph memory nodes: `cudaGraphAddMemAllocNode`/`MemFreeNode`, their parameter queries,
//! stream-ordered allocation captured into graphs (`cudaMallocAsync`/`cudaFreeAsync` on a
//! capturing stream become such nodes), and the device's graph memory attributes.
//!
//! An allocation node gets its memory when it is made and keeps the address for every
//! launch, as CUDA promises a graph allocation's address is fixed. The memory stays reserved
//! while any graph or executable graph holds a node that allocates it, so a launch never
//! finds it gone: a free node, or `cudaFreeAsync`/`cudaFree` of it, does nothing to the
//! device. When the last holder goes, memory a launch allocated and nothing freed since
//! stays, as CUDA keeps it after the graph is destroyed, and becomes an ordinary allocation
//! the program frees with `cudaFree`; other memory stays reserved for later graph
//! allocations of the same size until `cudaDeviceGraphMemTrim`, as CUDA's graph memory
//! pool keeps it (NVIDIA's runtime still reported 32 MiB reserved after every graph was
//! destroyed, measured on an H100). `cudaDeviceGetGraphMemAttribute` counts the memory
//! graph allocations hold (used) and that plus the kept memory (reserved); resetting a high
//! watermark sets it to the current value, as CUDA does. (CUDA may map and unmap the
//! physical memory between launches; a program cannot tell.)
//!
//! As in CUDA, a graph with memory nodes has one executable graph at a time, and memory
//! nodes cannot be in child graphs (`cudaErrorNotSupported`).

use crate::client;
use crate::core::graph::{Kind, Registry, add_node, cudaGraph_t, cudaGraphNode_t, with};
use crate::error::{Error, Result};
use crate::ffi::write_out;
use std::collections::HashMap;
use std::ffi::{c_int, c_void};

/// Bytes a graph allocation is rounded to.
pub(crate) const GRANULE: u64 = 512;

/// `cudaGraphMemAttributeType`.
pub(crate) const USED_MEM_CURRENT: c_int = 0;
pub(crate) const USED_MEM_HIGH: c_int = 1;
pub(crate) const RESERVED_MEM_CURRENT: c_int = 2;
pub(crate) const RESERVED_MEM_HIGH: c_int = 3;

/// `cudaMemAllocNodeParams` (CUDA 12 and 13).
#[repr(C)]
pub struct cudaMemAllocNodeParams {
    pub(crate) pool_props: crate::core::pool::cudaMemPoolProps,
    pub(crate) access_descs: *const c_void,
    pub(crate) access_desc_count: usize,
    pub(crate) bytesize: usize,
    pub(crate) dptr: *mut c_void,
}

/// One graph allocation.
#[derive(Clone, Copy)]
pub(crate) struct Live {
    pub(crate) bytes: u64,
    /// Graphs' nodes and executable graphs that hold it.
    pub(crate) holders: u32,
    /// A launch allocated it and nothing freed it since.
    pub(crate) outstanding: bool,
}

/// What graph allocations the process holds.
#[derive(Default)]
pub(crate) struct GraphMemory {
    /// Address -> its allocation.
    pub(crate) live: HashMap<u64, Live>,
    /// Memory no graph allocation holds, kept for the next ones: (address, bytes).
    pub(crate) cached: Vec<(u64, u64)>,
    /// Bytes of `live` allocations, and with `cached` ones.
    pub(crate) used: u64,
    pub(crate) reserved: u64,
    pub(crate) used_high: u64,
    pub(crate) reserved_high: u64,
    /// Allocations to free once the registry is unlocked (trimmed).
    pub to_free: Vec<u64>,
}

/// Most allocations the cache keeps; beyond, released ones are freed.
pub(crate) const MAX_CACHED: usize = 1024;

impl Registry {
    /// One more holder of graph allocation `ptr`.
    pub(crate) fn hold_graph_mem(&mut self, ptr: u64) {
        if let Some(e) = self.graph_mem.live.get_mut(&ptr) {
            e.holders = e.holders.saturating_add(1);
        }
    }

    /// One holder fewer; after the last one, memory a launch left allocated becomes the
    /// program's, other memory is kept for later graph allocations.
    pub(crate) fn drop_graph_mem(&mut self, ptr: u64) {
        let m = &mut self.graph_mem;
        if let Some(e) = m.live.get_mut(&ptr) {
            e.holders = e.holders.saturating_sub(1);
            if e.holders == 0 {
                let (bytes, outstanding) = (e.bytes, e.outstanding);
                m.live.remove(&ptr);
                m.used = m.used.saturating_sub(bytes);
                if outstanding {
                    m.reserved = m.reserved.saturating_sub(bytes);
                } else if m.cached.len() < MAX_CACHED {
                    m.cached.push((ptr, bytes));
                } else {
                    m.reserved = m.reserved.saturating_sub(bytes);
                    m.to_free.push(ptr);
                }
            }
        }
    }
}

/// Whether `ptr` is graph memory (which `cudaFree`/`cudaFreeAsync` leave to the graph).
pub(crate) fn owns(ptr: u64) -> bool {
    with(|r| r.graph_mem.live.contains_key(&ptr))
}

/// A launch allocated graph memory `ptr` (`true`), or a free node or the program freed it.
pub(crate) fn mark(ptr: u64, outstanding: bool) {
    with(|r| {
        if let Some(e) = r.graph_mem.live.get_mut(&ptr) {
            e.outstanding = outstanding;
        }
    });
}

/// Frees graph allocations whose last holder went (with the registry unlocked).
pub(crate) fn free_released(ptrs: Vec<u64>) {
    if ptrs.is_empty() {
        return;
    }
    let Some(c) = client::connected() else { return };
    for p in ptrs {
        if let Err(e) = crate::core::memory::free_device_posted(c, p) {
            log::debug!("freeing graph memory {p:#x}: error {}", e.0);
        }
    }
}

impl GraphMemory {
    /// Takes the kept memory out of the reserve: its addresses.
    pub(crate) fn take_cached(&mut self) -> Vec<u64> {
        let cached = std::mem::take(&mut self.cached);
        let bytes: u64 = cached.iter().map(|&(_, b)| b).sum();
        self.reserved = self.reserved.saturating_sub(bytes);
        cached.into_iter().map(|(ptr, _)| ptr).collect()
    }

    /// `ptr` now holds a new graph allocation `live`, taken from the reserve (`fresh`:
    /// memory allocated for it, which joins the reserve).
    pub(crate) fn hold_new(&mut self, ptr: u64, live: Live, fresh: bool) {
        self.live.insert(ptr, live);
        self.used += live.bytes;
        self.used_high = self.used_high.max(self.used);
        if fresh {
            self.reserved += live.bytes;
            self.reserved_high = self.reserved_high.max(self.reserved);
        }
    }
}

/// After a device reset: the kept memory is gone with everything else.
pub(crate) fn on_reset() {
    with(|r| drop(r.graph_mem.take_cached()));
}

/// Gives back a graph allocation no node came to hold.
pub(crate) fn release_unused(ptr: u64) {
    let free = with(|r| {
        r.drop_graph_mem(ptr);
        std::mem::take(&mut r.graph_mem.to_free)
    });
    free_released(free);
}

/// A new graph allocation of `size` bytes, held by the node about to be made.
pub(crate) fn allocate(size: u64) -> Result<u64> {
    if size == 0 {
        return Err(Error::INVALID_VALUE);
    }
    let c = client::client()?;
    let want = size
        .checked_next_multiple_of(GRANULE)
        .ok_or(Error::MEMORY_ALLOCATION)?;
    let live = Live {
        bytes: want,
        holders: 1,
        outstanding: false,
    };
    // Kept memory of the same size first.
    let reused = with(|r| {
        let m = &mut r.graph_mem;
        let i = m.cached.iter().position(|&(_, b)| b == want)?;
        let (ptr, _) = m.cached.swap_remove(i);
        m.hold_new(ptr, live, false);
        Some(ptr)
    });
    if let Some(ptr) = reused {
        return Ok(ptr);
    }
    let ptr = crate::core::memory::malloc_device(c, want as usize)?;
    with(|r| r.graph_mem.hold_new(ptr, live, true));
    Ok(ptr)
}

/// `cudaGraphAddMemAllocNode` (`p.dptr` gets the address).
pub(crate) fn add_alloc(
    out: *mut cudaGraphNode_t,
    g: cudaGraph_t,
    deps: *const cudaGraphNode_t,
    ndeps: usize,
    p: &mut cudaMemAllocNodeParams,
) -> Result<()> {
    let mut made = None;
    let r = add_node(out, g, deps, ndeps, || {
        let ptr = allocate(p.bytesize as u64)?;
        made = Some(ptr);
        Ok(Kind::MemAlloc {
            ptr,
            size: p.bytesize as u64,
        })
    });
    match (r, made) {
        (Ok(()), Some(ptr)) => {
            p.dptr = ptr as *mut c_void;
            Ok(())
        }
        (Err(e), Some(ptr)) => {
            // The node was not made: nothing holds the memory.
            release_unused(ptr);
            Err(e)
        }
        (r, None) => r,
    }
}

/// Whether graph `g` already has a free node for `ptr`.
pub(crate) fn frees_in(g: u64, ptr: u64) -> bool {
    with(|r| {
        r.graph(g).is_ok_and(|graph| {
            graph
                .nodes
                .iter()
                .any(|n| matches!(r.node(*n).map(|x| &x.kind), Ok(Kind::MemFree(p)) if *p == ptr))
        })
    })
}

/// Whether graph `g` or one of its child graphs has memory nodes.
pub(crate) fn has_memory_nodes(r: &Registry, g: u64) -> bool {
    r.graph(g).is_ok_and(|graph| {
        graph
            .nodes
            .iter()
            .any(|n| match r.node(*n).map(|x| &x.kind) {
                Ok(Kind::MemAlloc { .. } | Kind::MemFree(_)) => true,
                Ok(Kind::Child(c)) => has_memory_nodes(r, *c),
                _ => false,
            })
    })
}

pub(crate) fn graph_mem_attribute(attr: c_int, value: *mut c_void, set: bool) -> Result<()> {
    if value.is_null() {
        return Err(Error::INVALID_VALUE);
    }
    with(|r| {
        let m = &mut r.graph_mem;
        if set {
            // Only the high watermarks can be reset (given 0), to the current value.
            // SAFETY: the caller's u64, checked for null.
            if unsafe { *(value as *const u64) } != 0 {
                return Err(Error::INVALID_VALUE);
            }
            match attr {
                USED_MEM_HIGH => m.used_high = m.used,
                RESERVED_MEM_HIGH => m.reserved_high = m.reserved,
                _ => return Err(Error::INVALID_VALUE),
            }
            return Ok(());
        }
        let v = match attr {
            USED_MEM_CURRENT => m.used,
            RESERVED_MEM_CURRENT => m.reserved,
            USED_MEM_HIGH => m.used_high,
            RESERVED_MEM_HIGH => m.reserved_high,
            _ => return Err(Error::INVALID_VALUE),
        };
        // SAFETY: the caller's u64, checked for null.
        unsafe { write_out(value as *mut u64, v) }
    })
}

/// `cudaGraphAddMemFreeNode`: frees memory a graph's allocation node made, once per graph.
pub(crate) fn add_free(
    out: *mut cudaGraphNode_t,
    g: cudaGraph_t,
    deps: *const cudaGraphNode_t,
    ndeps: usize,
    ptr: u64,
) -> Result<()> {
    if !owns(ptr) || frees_in(g as u64, ptr) {
        return Err(Error::INVALID_VALUE);
    }
    add_node(out, g, deps, ndeps, || Ok(Kind::MemFree(ptr)))
}

/// `cudaGraphMemAllocNodeGetParams`: what an allocation node made (default pool properties,
/// no access descriptors).
pub(crate) fn alloc_node_params(
    node: cudaGraphNode_t,
    o: &mut cudaMemAllocNodeParams,
) -> Result<()> {
    let (ptr, size) = with(|r| match r.node(node as u64).map(|n| &n.kind) {
        Ok(Kind::MemAlloc { ptr, size }) => Ok((*ptr, *size)),
        _ => Err(Error::INVALID_VALUE),
    })?;
    // SAFETY: a zeroed cudaMemPoolProps is a valid (all-default) one.
    o.pool_props = unsafe { std::mem::zeroed() };
    o.pool_props.set_device_pinned(0);
    o.access_descs = std::ptr::null();
    o.access_desc_count = 0;
    o.bytesize = size as usize;
    o.dptr = ptr as *mut c_void;
    Ok(())
}

/// `cudaGraphMemFreeNodeGetParams`: the address a free node frees.
pub(crate) fn free_node_ptr(node: cudaGraphNode_t) -> Result<u64> {
    with(|r| match r.node(node as u64).map(|n| &n.kind) {
        Ok(Kind::MemFree(p)) => Ok(*p),
        _ => Err(Error::INVALID_VALUE),
    })
}

/// `cudaDeviceGraphMemTrim`: frees the memory kept for later graph allocations (once the
/// registry is unlocked).
pub(crate) fn trim() {
    with(|r| {
        let freed = r.graph_mem.take_cached();
        r.graph_mem.to_free.extend(freed);
    });
}
