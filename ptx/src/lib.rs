// SPDX-License-Identifier: Apache-2.0 OR MIT
//! A PTX parser and interpreter: runs CUDA kernels on the CPU.
//!
//! [`Module::parse`] turns the PTX text embedded in a fatbin into a pre-decoded, immutable
//! [`Module`] (registers resolved to indices, branch targets to instruction indices, every
//! instruction's types and modifiers to a specialized function). [`launch`] runs one of its
//! kernels over a grid: blocks in parallel on OS threads, each block's threads as warps of 32
//! lanes executing in lockstep, with divergence, barriers, atomics, warp shuffles/votes and device
//! `printf`.
//!
//! # Memory model
//!
//! * `.global` and `.const` space (including module variables, see [`Module::globals`]) is the
//!   flat device address space the executor owns, reached through [`DeviceMemory`]. Every access
//!   is bounds-checked against the executor's regions.
//! * Shared memory (static and dynamic) belongs to each block, local memory (including call frames
//!   and the `__local_depot` stack) to each thread; both are owned by the interpreter.
//! * Texture and surface objects are handles (kernel parameters) that
//!   [`DeviceMemory::texture`] resolves to a [`TexObject`]; their texels are device memory,
//!   read and written with the same region checks. Kernels using them run interpreted.
//! * Generic addresses: the executor's device addresses are used as they are. The interpreter
//!   reserves these windows of the generic space, each [`WINDOW_SIZE`] bytes, well below the
//!   executor's `0x7f00_0000_0000..` range:
//!   [`SHARED_WINDOW`] (`0x1000_0000_0000`, the running block's shared memory),
//!   [`LOCAL_WINDOW`] (`0x2000_0000_0000`, the running thread's local memory),
//!   [`PARAM_WINDOW`] (`0x3000_0000_0000`, the kernel parameter buffer, read only: the address
//!   of a `__grid_constant__` parameter) and [`FUNC_WINDOW`] (`0x4000_0000_0000`, function
//!   addresses, not dereferenceable). The executor must not map device memory there.
//!
//! # Errors
//!
//! Nothing the guest supplies can panic the interpreter: malformed PTX gives a [`ParseError`],
//! faults and unsupported instructions a [`KernelError`] (with [`KernelError::cuda_status`]).
//! Unsupported instructions fail the launch only when executed, with
//! `cudaErrorNotSupported` (not a sticky fault: the context stays usable).

mod access;
mod alu;
mod ast;
mod cluster;
mod error;
mod exec;
mod float;
mod grid;
mod ir;
mod jit;
mod launch;
mod lexer;
mod memory;
mod module;
mod parser;
mod printf;
mod sampler;
pub mod tensormap;
pub mod testing;
mod texture;
mod types;

pub use cluster::MAX_CLUSTER_SIZE;
pub use error::{KernelError, Location, ParseError};
pub use grid::{
    Cancel, CompileMemory, GRID_WORKSPACE_SIZE, LaunchConfig, LaunchOptions, LaunchStats,
    MAX_COOPERATIVE_BLOCKS, PrintfSink, StdoutSink,
};
pub use launch::launch;
pub use memory::{DeviceMemory, Region};
pub use module::{
    FUNC_WINDOW, GlobalId, GlobalInfo, GlobalSpace, KernelId, KernelInfo, LOCAL_WINDOW, Module,
    PARAM_WINDOW, ParamInfo, Reloc, RelocTarget, SHARED_WINDOW, WINDOW_SIZE,
};
pub use texture::{
    AddressMode, ChannelKind, FilterMode, Mipmap, TexObject, level_extent, level_offset,
};
