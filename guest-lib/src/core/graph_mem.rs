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
use crate::core::graph::{Kind, cudaGraphNode_t, with};
use crate::core::graph_state::Live;
use crate::core::graph_state::free_released;
use crate::error::{Error, Result};
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
    pub(crate) pool_props: crate::core::pool_types::cudaMemPoolProps,
    pub(crate) access_descs: *const c_void,
    pub(crate) access_desc_count: usize,
    pub(crate) bytesize: usize,
    pub(crate) dptr: *mut c_void,
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
    let ptr = crate::core::alloc::malloc_device(c, want as usize)?;
    with(|r| r.graph_mem.hold_new(ptr, live, true));
    Ok(ptr)
}

/// `cudaGraphAddMemAllocNode`: allocates `size` bytes and adds the node that holds them to
/// graph `g`; the node and the address.
pub(crate) fn add_alloc(g: u64, deps: &[u64], size: u64) -> Result<(u64, u64)> {
    let ptr = allocate(size)?;
    match with(|r| r.add(g, Kind::MemAlloc { ptr, size }, deps)) {
        Ok(node) => Ok((node, ptr)),
        Err(e) => {
            // The node was not made: nothing holds the memory.
            release_unused(ptr);
            Err(e)
        }
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

/// `cudaDeviceGetGraphMemAttribute`.
pub(crate) fn attribute(attr: c_int) -> Result<u64> {
    with(|r| {
        let m = &r.graph_mem;
        Ok(match attr {
            USED_MEM_CURRENT => m.used,
            RESERVED_MEM_CURRENT => m.reserved,
            USED_MEM_HIGH => m.used_high,
            RESERVED_MEM_HIGH => m.reserved_high,
            _ => return Err(Error::INVALID_VALUE),
        })
    })
}

/// `cudaDeviceSetGraphMemAttribute`: only the high watermarks can be reset (given 0), to
/// the current value.
pub(crate) fn reset_attribute(attr: c_int, value: u64) -> Result<()> {
    if value != 0 {
        return Err(Error::INVALID_VALUE);
    }
    with(|r| {
        let m = &mut r.graph_mem;
        match attr {
            USED_MEM_HIGH => m.used_high = m.used,
            RESERVED_MEM_HIGH => m.reserved_high = m.reserved,
            _ => return Err(Error::INVALID_VALUE),
        }
        Ok(())
    })
}

/// `cudaGraphAddMemFreeNode`: frees memory a graph's allocation node made, once per graph.
pub(crate) fn add_free(g: u64, deps: &[u64], ptr: u64) -> Result<u64> {
    if !owns(ptr) || frees_in(g, ptr) {
        return Err(Error::INVALID_VALUE);
    }
    with(|r| r.add(g, Kind::MemFree(ptr), deps))
}

/// `cudaGraphMemAllocNodeGetParams`: what an allocation node made (default pool properties,
/// no access descriptors).
pub(crate) fn alloc_node_params(node: cudaGraphNode_t) -> Result<cudaMemAllocNodeParams> {
    let (ptr, size) = with(|r| match r.node(node as u64).map(|n| &n.kind) {
        Ok(Kind::MemAlloc { ptr, size }) => Ok((*ptr, *size)),
        _ => Err(Error::INVALID_VALUE),
    })?;
    Ok(cudaMemAllocNodeParams {
        pool_props: crate::core::pool_types::cudaMemPoolProps::device_pinned(0),
        access_descs: std::ptr::null(),
        access_desc_count: 0,
        bytesize: size as usize,
        dptr: ptr as *mut c_void,
    })
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
