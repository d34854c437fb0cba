// SPDX-License-Identifier: Apache-2.0 OR MIT
//! `libvcuda.so`: a drop-in replacement for `libcudart.so.13` and `libcudart.so.12`.
//!
//! Every CUDA runtime call an unmodified program makes is serialized in the vcuda wire
//! format (`vcuda-protocol`) and sent over a [`transport`] (a Unix or TCP socket, or the
//! `/dev/vcuda` virtio device inside a VM) to `vcuda-backend`, which replays it on a GPU or
//! on the CPU reference executor.
//!
//! Layout:
//! - [`error`]: the internal errors ([`Error`] for the runtime, with the cuBLAS and cuRAND
//!   statuses) and their conversions into the C status types.
//! - `entry`: the `entry!` macros every export goes through (panic boundary, logging,
//!   last-error bookkeeping) and the stubs for what is not implemented.
//! - [`client`]: the process-wide connection to the backend (one session per process).
//! - [`batch`]: posted calls wait to travel with the next message.
//! - [`state`]: per-thread state (current device, last error, launch configurations).
//! - [`mirror`]: the guest's record of device and pinned host allocations.
//! - [`shared`]: page-locked host memory shared with a backend on the same host.
//! - [`coherent`]: managed memory the library keeps coherent where the backend cannot map
//!   the program's memory.
//! - `core/`: the logic of every API (memory, streams, capture, graphs, launches, ...),
//!   and the registry of the fat binaries, kernels and variables the program registers.
//! - `abi/`: the exported C functions (`runtime`, `driver`, `cublas`, `curand`), thin shims
//!   over `core`.
//!
//! - [`tls`]: mutual TLS to a TCP backend.
//!
//! Environment: `VCUDA_SOCKET` (backend address: a path or `tcp:HOST:PORT`),
//! `VCUDA_TLS_CERT`/`VCUDA_TLS_KEY`/`VCUDA_TLS_CA` (mutual TLS on TCP; `VCUDA_TLS_SERVER_NAME`
//! overrides the name checked), `VCUDA_TRANSPORT` (`socket`, `virtio` or `auto`), `VCUDA_LOG`
//! (`error` ... `trace`; the library is silent without it), `VCUDA_BATCH_US` (how long a
//! posted call may wait for the next message; `0`: sent at once), `VCUDA_GRAPH_WHOLE` (`0`:
//! graphs are replayed from the library, never sent whole).

#![allow(non_snake_case, non_camel_case_types, non_upper_case_globals)]
#![allow(clippy::missing_safety_doc)] // The exports' contract is the CUDA API's; see entry!.

#[macro_use]
pub mod entry;
pub mod batch;
pub mod client;
pub mod coherent;
pub mod cu_names;
pub mod error;
pub mod ffi;
pub mod logging;
pub mod memfd;
pub mod mirror;
pub mod pool;
pub mod props_gen;
pub mod ring;
pub mod shared;
pub mod state;
pub mod tls;
pub mod transport;
pub mod virtio;

/// The logic of every API, in safe Rust over the client: what the C shims of `abi` call.
mod core {
    pub mod alloc;
    pub mod array;
    pub mod attr_table;
    pub mod attrs;
    pub mod callback;
    pub mod capture;
    pub mod context;
    pub mod curand;
    pub mod device;
    pub mod error;
    pub mod function;
    pub mod graph;
    pub mod graph_build;
    pub mod graph_exec;
    pub mod graph_mem;
    pub mod graph_node;
    pub mod graph_params;
    pub mod graph_state;
    pub mod handle;
    pub mod host_memory;
    pub mod integrity;
    pub mod ipc;
    pub mod launch;
    pub mod library;
    pub mod link;
    pub mod managed;
    pub mod memcpy_batch;
    pub mod memory;
    pub mod memory3d;
    pub mod misc;
    pub mod module;
    pub mod pool;
    pub mod pool_types;
    pub mod ptsz;
    pub mod registry;
    pub mod stream;
    pub mod texture;
    pub mod user_object;
}

/// The exported C functions: each turns its C arguments into Rust values, calls `core` and
/// maps the result to its API's status.
mod abi {
    pub mod capture_args;
    pub mod cublas;
    pub mod curand;
    pub mod device_args;
    pub mod driver;
    pub mod graph_args;
    pub mod graph_ptrs;
    pub mod managed_args;
    pub mod memory_args;
    pub mod module_args;
    pub mod node_args;
    pub mod nvjitlink;
    pub mod nvjitlink_lto;
    pub mod stream_args;
    pub mod runtime {
        pub mod array;
        pub mod attrs;
        pub mod capture;
        pub mod device;
        pub mod error;
        pub mod graph;
        pub mod graph_exec;
        pub mod graph_mem;
        pub mod graph_params;
        pub mod ipc;
        pub mod launch;
        pub mod library;
        pub mod managed;
        pub mod memory;
        pub mod memory3d;
        pub mod misc;
        pub mod pool;
        pub mod ptsz;
        pub mod stream;
        pub mod texture;
        pub mod user_object;
    }
}

mod stubs {
    include!(concat!(env!("OUT_DIR"), "/stubs.rs"));
}

include!(concat!(env!("OUT_DIR"), "/symver.rs"));

pub use error::{Error, Result};
