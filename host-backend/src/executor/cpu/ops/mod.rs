// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CPU executor's answer to each domain trait of [`crate::executor`], one file per
//! trait (`device.rs` implements `DeviceOps`, `streams.rs` `StreamOps`, ...). These are
//! thin: the work is done by the session's parts in the sibling modules (`memory`'s heap,
//! `module`, `texture`, `blas`, `rand`).

mod arrays;
mod blas;
mod device;
mod graphs;
mod host_memory;
mod ipc;
mod memory;
mod modules;
mod rand;
mod state;
mod streams;
mod vmm;
