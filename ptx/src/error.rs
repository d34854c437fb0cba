// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Parse and launch errors.

use std::fmt;

/// A syntax or semantic error in PTX text, with the 1-based position where it was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("PTX line {line}, column {col}: expected {expected}")]
pub struct ParseError {
    pub line: u32,
    pub col: u32,
    /// What the parser expected (or the problem found) at that position.
    pub expected: String,
}

impl ParseError {
    pub(crate) fn new(line: u32, col: u32, expected: impl Into<String>) -> Self {
        Self {
            line,
            col,
            expected: expected.into(),
        }
    }
}

/// Where a kernel fault happened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Location {
    /// `%ctaid` of the faulting thread.
    pub block: [u32; 3],
    /// `%tid` of the faulting thread.
    pub thread: [u32; 3],
    /// The PTX source line of the faulting instruction (0 if unknown).
    pub line: u32,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [bx, by, bz] = self.block;
        let [tx, ty, tz] = self.thread;
        write!(
            f,
            "PTX line {}, block ({bx},{by},{bz}), thread ({tx},{ty},{tz})",
            self.line
        )
    }
}

/// Why a launch failed. [`KernelError::cuda_status`] gives the matching `cudaError_t`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KernelError {
    /// An access outside every memory region (global) or outside the block's shared memory or
    /// the thread's local memory.
    #[error("Illegal address {addr:#x} ({size}-byte {}) at {loc}", if *.write { "write" } else { "read" })]
    IllegalAddress {
        addr: u64,
        size: u32,
        write: bool,
        loc: Location,
    },
    /// A texture or surface instruction named a handle that is no texture object (for a
    /// texture instruction) or surface object (for a surface instruction).
    #[error("Invalid {} object {handle:#x} in `{instruction}` at {loc}", if *.surface { "surface" } else { "texture" })]
    InvalidHandle {
        handle: u64,
        surface: bool,
        instruction: String,
        loc: Location,
    },
    /// A bulk tensor copy read a tensor map no `cuTensorMapEncodeTiled` would make (or one
    /// `tensormap.replace` made invalid), or one of another rank than the instruction's.
    #[error("Invalid tensor map at {addr:#x} ({why}) at {loc}")]
    InvalidTensorMap {
        addr: u64,
        why: &'static str,
        loc: Location,
    },
    /// An access not aligned to its size.
    #[error("Misaligned address {addr:#x} ({size}-byte access) at {loc}")]
    MisalignedAddress { addr: u64, size: u32, loc: Location },
    /// An instruction, operand form or external function the interpreter does not implement.
    #[error("Unsupported instruction `{instruction}` at {loc}")]
    Unsupported { instruction: String, loc: Location },
    /// The kernel executed `trap`.
    #[error("Kernel trap at {loc}")]
    Trap { loc: Location },
    /// The kernel executed `brkpt` (no debugger is attached).
    #[error("Kernel breakpoint at {loc}")]
    Breakpoint { loc: Location },
    /// A device-side `assert` failed; `message` is the line CUDA prints.
    #[error("{message}")]
    Assert { message: String },
    /// Local memory or call depth exceeded [`crate::LaunchOptions::max_local_bytes`] or
    /// [`crate::LaunchOptions::max_call_depth`].
    #[error("Stack overflow at {loc}")]
    StackOverflow { loc: Location },
    /// All threads of a block wait at barriers that can never complete.
    #[error("Barrier deadlock in block ({},{},{})", .block[0], .block[1], .block[2])]
    Deadlock { block: [u32; 3] },
    /// The launch ran longer than [`crate::LaunchOptions::time_limit`].
    #[error("Launch timed out after {limit_ms} ms")]
    Timeout { limit_ms: u64 },
    /// [`crate::LaunchOptions::cancel`] was cancelled: the launch's session ended.
    #[error("Launch cancelled")]
    Cancelled,
    /// [`crate::LaunchOptions::instruction_limit`] was reached.
    #[error("Instruction limit of {limit} reached")]
    InstructionLimit { limit: u64 },
    /// Bad grid or block dimensions for this kernel.
    #[error("Invalid launch configuration: {0}")]
    InvalidConfig(String),
    /// A cluster shape the grid does not divide into, too large, or other than the kernel's.
    #[error("Invalid cluster shape: {0}")]
    InvalidCluster(String),
    /// The parameter buffer is smaller than the kernel's parameter block.
    #[error("Parameter buffer has {got} bytes, the kernel needs {expected}")]
    InvalidParams { expected: u32, got: usize },
    /// The kernel needs more local memory or registers than the launch may use.
    #[error("Too many resources requested for launch: {0}")]
    OutOfResources(String),
    /// Static plus dynamic shared memory exceeds the limit.
    #[error("Shared memory of {requested} bytes exceeds the limit of {limit}")]
    SharedMemoryTooLarge { requested: u64, limit: u64 },
}

impl KernelError {
    /// The `cudaError_t` a CUDA runtime reports for this failure.
    pub fn cuda_status(&self) -> u32 {
        match self {
            KernelError::IllegalAddress { .. }
            | KernelError::InvalidHandle { .. }
            | KernelError::InvalidTensorMap { .. } => 700,
            KernelError::MisalignedAddress { .. } => 716,
            // vcuda cannot run the instruction (a GPU would): `cudaErrorNotSupported`, which
            // does not end the context the way a fault in the kernel does.
            KernelError::Unsupported { .. } => 801,
            KernelError::Breakpoint { .. } => 715,
            KernelError::Trap { .. } => 719,
            KernelError::Assert { .. } => 710,
            KernelError::StackOverflow { .. } => 714,
            KernelError::Deadlock { .. }
            | KernelError::InstructionLimit { .. }
            | KernelError::Timeout { .. } => 702,
            KernelError::Cancelled => 719,
            KernelError::InvalidConfig(_) => 9,
            KernelError::InvalidCluster(_) => 912,
            KernelError::OutOfResources(_) => 701,
            KernelError::InvalidParams { .. } | KernelError::SharedMemoryTooLarge { .. } => 1,
        }
    }
}
