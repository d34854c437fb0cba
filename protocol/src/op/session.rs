// SPDX-License-Identifier: Apache-2.0 OR MIT
//! `Hello`: the executor kind, the handshake's request and reply, and the features a
//! backend offers.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Which executor a backend runs.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecutorKind {
    /// The CPU reference executor (PTX interpreter).
    Cpu = 1,
    /// The real GPU, through the CUDA driver.
    Cuda = 2,
}

impl ExecutorKind {
    /// Decodes an executor kind.
    pub fn from_u32(v: u32) -> Option<Self> {
        match v {
            1 => Some(Self::Cpu),
            2 => Some(Self::Cuda),
            _ => None,
        }
    }
}

wire_struct!(
    /// `Hello` request. Tail: the program's name (UTF-8, for logs).
    HelloReq, 32 {
        /// The CUDA runtime ABI the guest program uses, as `cudaRuntimeGetVersion` reports
        /// it (e.g. 13000, 12040).
        runtime_version: u32,
        /// The guest process id (for logs).
        pid: u32,
        /// Start of an address range the guest reserved for device allocations (0: none).
        /// An executor that chooses device addresses itself places them there, so device
        /// pointers never alias the guest's own memory.
        va_base: u64,
        /// Length of that range.
        va_len: u64,
        /// `HELLO_FLAG_*` bits (others zero).
        flags: u32,
        /// Zero.
        reserved: u32,
    }
);

/// `Hello` flag: a call ring comes with this message (a sealed memory file passed beside it
/// over a Unix socket, `SCM_RIGHTS`); the guest switches to it if the reply says
/// [`HELLO_FEATURE_CALL_RING`]. See the `vcuda-ring` crate.
pub const HELLO_FLAG_CALL_RING: u32 = 1 << 0;

wire_struct!(
    /// `Hello` reply.
    HelloResp, 64 {
        /// The host's [`crate::PROTOCOL_VERSION`].
        protocol_version: u32,
        /// An [`ExecutorKind`] value.
        executor: u32,
        /// Devices the session can use.
        device_count: u32,
        /// What `cudaDriverGetVersion` reports (e.g. 13000).
        driver_version: u32,
        /// Largest data segment the host accepts.
        max_segment_len: u64,
        /// Largest out- or in-data area of one message.
        max_data_len: u64,
        /// `HELLO_FEATURE_*` bits.
        features: u64,
        /// Device memory this session could allocate now (`cudaMemGetInfo`'s free: the
        /// lesser of what its limit leaves and what the device has free).
        free_memory: u64,
        /// The most device memory this session may hold (its limit, or the device's
        /// memory if smaller).
        total_memory: u64,
        /// Sessions the backend serves now, this one included (a client that chooses
        /// among several backends weighs free memory by it).
        sessions: u32,
        /// Zero.
        reserved: u32,
    }
);

/// `Hello` feature: the transport passes file descriptors (a Unix socket), so the guest may
/// share memory with the host ([`ShareMemoryReq`](super::ShareMemoryReq)).
pub const HELLO_FEATURE_SHARED_MEMORY: u64 = 1 << 0;

/// `Hello` feature: the session can expose shared memory to kernels at the guest's own
/// addresses ([`MapHostMemoryReq`](super::MapHostMemoryReq)): mapped (zero-copy) host memory
/// and managed memory.
pub const HELLO_FEATURE_MAP_HOST_MEMORY: u64 = 1 << 1;

/// `Hello` feature: managed memory should live in device memory, kept coherent by the
/// library, even though page-locked memory is mapped for kernels
/// ([`HELLO_FEATURE_MAP_HOST_MEMORY`]): the device reaches host memory only across a bus (a
/// GPU), where kernels using managed memory in place would run at the bus's speed.
pub const HELLO_FEATURE_MANAGED_ON_DEVICE: u64 = 1 << 2;

/// `Hello` feature: the backend took the call ring the guest offered
/// ([`HELLO_FLAG_CALL_RING`]). From the byte after this reply on, messages and replies go
/// through the ring; the socket carries only wake-ups and descriptor notes.
pub const HELLO_FEATURE_CALL_RING: u64 = 1 << 3;
