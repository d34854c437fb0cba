// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The vcuda wire format, shared by the guest library (`libvcuda.so`), the guest kernel
//! module and the host backend.
//!
//! - [`wire`]: message, request, segment, reply and record headers, and the limits.
//! - [`operations`]: the table of operations: [`Opcode`], the [`ops`] types tying each to
//!   its request and reply structs ([`Op`]), the decoded [`Request`].
//! - [`op`]: the fixed part of every payload.
//! - [`decode`]: checked, panic-free decoding of everything the host receives.
//! - [`encode`]: builders for messages and replies.
//! - [`status`]: `cudaError_t` codes, names and messages.
//! - [`virtio`]: the virtio device (IDs, config space, chain layout).
//! - [`ioctl`]: the `/dev/vcuda` ioctl ABI.
//! - [`blas`]: argument checks of cuBLAS operations.
//! - [`region`]: guest-supplied pitched regions and BLAS extents, checked once for all.
//! - [`graph`]: graphs of device work sent whole (`GraphCreate`).
//!
//! All integers are little-endian; all structs are `#[repr(C)]` with compile-time size
//! checks.

#![cfg_attr(not(test), deny(missing_docs))]

pub mod attr;
pub mod blas;
mod checks;
pub mod decode;
pub mod encode;
pub mod graph;
pub mod ioctl;
pub mod op;
pub mod operations;
pub mod region;
pub mod status;
mod table;
pub mod virtio;
pub mod wire;

pub use decode::{DecodeError, RawRecord, RawRequest};
pub use encode::{MessageBuilder, ReplyBuilder};
pub use op::*;
pub use operations::*;
pub use wire::*;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_lib;
