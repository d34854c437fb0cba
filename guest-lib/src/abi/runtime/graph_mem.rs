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

use crate::abi::node_args::{add_alloc, add_free, graph_mem_attribute};
use crate::client;
use crate::core::graph::{cudaGraph_t, cudaGraphNode_t};
use crate::core::graph_mem::*;
use crate::error::Error;
use crate::ffi::write_out;
use std::ffi::{c_int, c_void};

entry! {
    fn cudaGraphAddMemAllocNode(out: *mut cudaGraphNode_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, p: *mut cudaMemAllocNodeParams) {
        // SAFETY: the caller's parameters (the API's contract), checked for null.
        let p = unsafe { p.as_mut() }.ok_or(Error::INVALID_VALUE)?;
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { add_alloc(out, g, deps, ndeps, p) }
    }

    fn cudaGraphAddMemFreeNode(out: *mut cudaGraphNode_t, g: cudaGraph_t, deps: *const cudaGraphNode_t, ndeps: usize, dptr: *mut c_void) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { add_free(out, g, deps, ndeps, dptr as u64) }
    }

    fn cudaGraphMemAllocNodeGetParams(node: cudaGraphNode_t, out: *mut cudaMemAllocNodeParams) {
        if out.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        let p = alloc_node_params(node)?;
        // SAFETY: checked non-null; the caller's output struct.
        unsafe { write_out(out, p) }
    }

    fn cudaGraphMemFreeNodeGetParams(node: cudaGraphNode_t, dptr: *mut c_void) {
        let ptr = free_node_ptr(node)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(dptr as *mut *mut c_void, ptr as *mut c_void) }
    }

    fn cudaDeviceGetGraphMemAttribute(device: c_int, attr: c_int, value: *mut c_void) {
        client::client()?.check_device(device)?;
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_mem_attribute(attr, value, false) }
    }

    fn cudaDeviceSetGraphMemAttribute(device: c_int, attr: c_int, value: *mut c_void) {
        client::client()?.check_device(device)?;
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { graph_mem_attribute(attr, value, true) }
    }

    fn cudaDeviceGraphMemTrim(device: c_int) {
        // Frees the memory kept for later graph allocations (once the registry is unlocked).
        client::client()?.check_device(device)?;
        trim();
        Ok(())
    }
}
