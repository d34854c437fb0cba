// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CUDA executor's settings ([`CudaConfig`]) and the constants its parts share: what
//! an allocation is charged ([`charge`]), when a copy is small, how guest RAM is pinned.

/// Copies of at most this many bytes from or to pageable memory use the driver's own
/// staging (it inlines small copies into its command stream) instead of ours.
pub const SMALL_COPY: u64 = 64 << 10;

/// Flags for pinning guest RAM: `CU_MEMHOSTREGISTER_PORTABLE`, so the pinning counts in
/// every session's context. Not `DEVICEMAP`: our copies only need the DMA engine to reach
/// guest RAM, and mapping it into the device address space would let any session's
/// kernels read and write all guest RAM at its host address.
pub const GUEST_REGISTER_FLAGS: u32 = cudarc::driver::sys::CU_MEMHOSTREGISTER_PORTABLE;

/// Settings of the CUDA executor.
#[derive(Debug, Clone)]
pub struct CudaConfig {
    /// Device ordinal to serve (guests see it as device 0).
    pub device: u32,
    /// Bytes per pinned staging buffer.
    pub staging_chunk: usize,
    /// Staging buffers per session.
    pub staging_depth: usize,
    /// Capture device `printf` (the backend's stdout) and return it to the guest.
    pub capture_printf: bool,
    /// Fail any wait for a session's GPU work that lasts longer with
    /// `cudaErrorLaunchTimeout` and end the session's context (`--kernel-timeout`; none by
    /// default, like a GPU without a watchdog).
    pub kernel_timeout: Option<std::time::Duration>,
    /// Serve several sessions at once even where kernels can reach the backend's pageable
    /// memory (`--allow-pageable-access`; see [`CudaFactory::new`](super::CudaFactory::new)).
    pub allow_pageable_access: bool,
    /// Device memory one session may hold (a share of the device's memory by default).
    pub session_mem_limit: crate::memsize::MemSize,
    /// Register (pin) all of a vhost-user guest's RAM with the driver, so copies from it
    /// are one DMA instead of staged (`--register-guest-memory`). Off by default: it pins
    /// every guest page at connect (and again for seconds after each memory table change),
    /// and it is unsafe with virtio-balloon, free page reporting, virtio-mem or discard,
    /// where the guest address of a page the driver keeps pinned gets new backing.
    pub register_guest_memory: bool,
    /// This process serves one tenant (a worker process of `--isolation process`): kernels
    /// that reach its pageable memory reach only that tenant's data, so sessions are never
    /// made exclusive for it.
    pub tenant_process: bool,
    /// Pass CUDA's own IPC handles between sessions (`--cuda-ipc`). Off by default: the
    /// driver's handle is then the only check on which memory a session opens, and handles
    /// of the sessions of one process (one VM) do not open in each other.
    pub ipc: bool,
    /// Sessions may migrate (`--cuda-migratable`): `cudaMalloc` memory is placed by the
    /// session in a range it reserves, page by page through the driver's virtual memory
    /// calls (`fixed`), so a loaded session re-creates it at the same addresses.
    pub migratable: bool,
    /// Make contexts ahead of sessions (`--warm-context`; see [`WarmMode`]).
    pub warm: WarmMode,
}

/// When contexts are made ahead of sessions (`--warm-context`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WarmMode {
    /// Never: each session makes its context.
    Off,
    /// The context made at start waits for the first session.
    First,
    /// One context is kept ready.
    #[default]
    Always,
}

/// Large allocations are charged whole 2 MiB pages (the driver maps them so) ...
pub const LARGE_PAGE: u64 = 2 << 20;

/// ... small ones 512-byte units (the driver sub-allocates them from shared pages).
pub const SMALL_UNIT: u64 = 512;

/// Most ranges a session keeps open through IPC handles.
pub(super) const MAX_IPC_OPENS: usize = 4096;

/// Most shared memory one session pins for the GPU (copies through the rest are staged).
pub(super) const MAX_PINNED_BYTES: usize = 16 << 30;

/// What a `cudaMalloc` of `size` bytes is charged against the session's limit.
pub fn charge(size: u64) -> Option<u64> {
    let unit = if size >= LARGE_PAGE {
        LARGE_PAGE
    } else {
        SMALL_UNIT
    };
    size.checked_next_multiple_of(unit)
}

impl Default for CudaConfig {
    fn default() -> Self {
        Self {
            device: 0,
            staging_chunk: 4 << 20,
            staging_depth: 4,
            capture_printf: false,
            kernel_timeout: None,
            allow_pageable_access: false,
            session_mem_limit: crate::memsize::MemSize::Percent(100),
            register_guest_memory: false,
            tenant_process: false,
            ipc: false,
            migratable: false,
            warm: WarmMode::Off,
        }
    }
}
