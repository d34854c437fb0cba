// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CUDA executor's answer to each domain trait of [`crate::executor`], one file per
//! trait (`device.rs` implements `DeviceOps`, `streams.rs` `StreamOps`, ...). Most are
//! thin: the work is done in the sibling modules (`streams`, `modules`, `texture`,
//! `graphs`, `vmm`, `blas`, `rand`, `transfer`); the calls that are the session's own
//! (device memory, mapped host memory, IPC, waits and reset) are written here.

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
