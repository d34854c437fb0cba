// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The fixed part of each request and reply payload, named by the rows of the table in
//! [`crate::operations`].
//!
//! Handles (streams, events, modules, functions) are opaque `u64` values chosen by the host;
//! the host never treats a guest value as a pointer. Device pointers are `u64` device
//! addresses; the host checks every one against the session's allocations.
//!
//! The structs live in one module per API family and are all re-exported here (and at the
//! crate's root), so `vcuda_protocol::op::X` and `vcuda_protocol::X` name them:
//!
//! - `session`: `Hello`, the executor kind and the backend's features;
//! - `device`: device properties, attributes, free memory and limits;
//! - `memory`: allocation, device pointers, copies, memsets and IPC handles;
//! - `shared`: memory shared with the host and the copies through it;
//! - `stream`: streams and events;
//! - `module`: modules, functions, kernel parameters and symbols;
//! - `launch`: kernel launches and graphs;
//! - `vmm`: virtual memory management;
//! - `array`: CUDA arrays and mipmapped arrays;
//! - `texture`: texture and surface objects;
//! - `library`: cuBLAS and cuRAND requests, with their constants in [`lib`].

#[macro_use]
mod macros;

mod array;
mod device;
mod launch;
pub mod lib;
mod library;
mod memory;
mod module;
mod session;
mod shared;
mod stream;
mod texture;
mod vmm;

pub use array::*;
pub use device::*;
pub use launch::*;
pub use library::*;
pub use memory::*;
pub use module::*;
pub use session::*;
pub use shared::*;
pub use stream::*;
pub use texture::*;
pub use vmm::*;

// Replies of one value, from what the executor call that serves them returns (see the
// `serve` clause of `crate::table::operations`).

impl From<u64> for HandleResp {
    fn from(handle: u64) -> Self {
        HandleResp { handle }
    }
}

impl From<u64> for PtrResp {
    fn from(ptr: u64) -> Self {
        PtrResp { ptr }
    }
}

impl From<u64> for LimitResp {
    fn from(value: u64) -> Self {
        LimitResp { value }
    }
}

impl From<(u64, u64)> for MemGetInfoResp {
    fn from((free, total): (u64, u64)) -> Self {
        MemGetInfoResp { free, total }
    }
}

impl From<[u8; 64]> for IpcHandle {
    fn from(bytes: [u8; 64]) -> Self {
        IpcHandle { bytes }
    }
}
