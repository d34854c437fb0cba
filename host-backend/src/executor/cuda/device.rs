// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Device setup: the factory that opens the GPU ([`CudaFactory`]), the state its sessions
//! share ([`Shared`]), and pinning guest RAM in the device's primary context.

use std::collections::HashMap;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, RwLock};

use cudarc::driver::sys::{CUdevice, CUdevice_attribute};
use log::{debug, info, warn};
use vcuda_protocol::DeviceInfo;

use super::config::{CudaConfig, GUEST_REGISTER_FLAGS};
use super::error::InitError;
use super::guest_mem::PinnedRanges;
use super::owned::{Context, PrimaryContext};
use super::{device_info, driver, image, printf};

/// The primary context, retained while guest RAM is pinned in it.
#[derive(Debug, Default)]
struct Registrar {
    ctx: Option<PrimaryContext>,
}

/// What every session of one factory shares.
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) config: CudaConfig,
    pub(super) device: CUdevice,
    pub(super) driver: driver::Loaded,
    pub(super) info: DeviceInfo,
    /// Pinned guest RAM. Copies that DMA straight from or to it hold the read lock until
    /// their DMA has finished; re-pinning takes the write lock.
    pub(super) pinned: RwLock<PinnedRanges>,
    registrar: Mutex<Registrar>,
    /// Module images that passed [`image::check`], by hash.
    pub(super) checked: Mutex<HashMap<[u8; 32], image::ImageInfo>>,
    /// Device printf capture, when on.
    pub(super) printf: Option<&'static printf::Capture>,
    /// Live sessions.
    pub(super) sessions: AtomicUsize,
    /// One session at a time: kernels can reach pageable host memory (HMM or ATS), so a
    /// session's kernels could read another's data in this process.
    pub(super) exclusive: bool,
    /// Kernels can reach the process's pageable memory (HMM or ATS).
    pub(super) pageable: bool,
    /// Host memory registered for the device is reached at its own address (unified
    /// addressing, `CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM`): shared memory can be mapped
    /// for kernels at the guest's address (`MapHostMemory`).
    pub(super) maps_host: bool,
    /// Bytes of device memory one session may hold.
    pub(super) session_limit: u64,
    /// The context made ahead of the next session.
    pub(super) warm: Arc<super::warm::Warm>,
}

impl Shared {
    /// Pins the new regions and unpins those gone; regions present before and after (same
    /// address and length: memory hot-plug adds regions) stay pinned.
    ///
    /// Registering all of a guest's RAM takes seconds, so it happens outside the lock the
    /// copy path takes: new regions are registered first (copies meanwhile use the old
    /// table), the table is swapped under the write lock (which waits only for the DMAs
    /// in flight, never for guest work: see `transfer.rs`), and the regions gone are
    /// unregistered after, when no copy can reach them any more. The transport keeps every
    /// region mapped until the call after the one that removed it.
    pub(super) fn set_guest_memory(&self, regions: &[(usize, usize)]) {
        let mut reg = self.registrar.lock().unwrap_or_else(|e| e.into_inner());
        let wanted = PinnedRanges::new(regions.to_vec());
        let old = self
            .pinned
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if wanted.ranges() == old.ranges() {
            return;
        }
        let ctx = match &mut reg.ctx {
            Some(c) => c,
            None => match PrimaryContext::retain(self.device) {
                Ok(c) => reg.ctx.insert(c),
                Err(e) => {
                    warn!(
                        "cannot pin guest memory ({}); copies will be staged",
                        driver::error_name(e)
                    );
                    return;
                }
            },
        };
        // Sessions bind their own context; the guard unbinds this one at the end.
        let _bound = match ctx.bind_scoped() {
            Ok(g) => g,
            Err(e) => {
                warn!("cannot pin guest memory ({})", driver::error_name(e));
                return;
            }
        };
        let mut kept: Vec<(usize, usize)> = old
            .ranges()
            .iter()
            .copied()
            .filter(|r| wanted.ranges().contains(r))
            .collect();
        for &(addr, len) in wanted.ranges() {
            if kept.contains(&(addr, len)) {
                continue;
            }
            // SAFETY: the transport guarantees `[addr, addr + len)` is mapped in this process
            // until the call after the one that removes it, which unpins it first.
            match unsafe { driver::mem_host_register(addr as *mut u8, len, GUEST_REGISTER_FLAGS) } {
                Ok(()) => kept.push((addr, len)),
                Err(e) => warn!(
                    "cannot pin guest memory {addr:#x}+{len:#x} ({}); copies through it will be staged",
                    driver::error_name(e)
                ),
            }
        }
        debug!(
            "pinned {} of {} guest memory regions",
            kept.len(),
            wanted.ranges().len()
        );
        let gone: Vec<(usize, usize)> = old
            .ranges()
            .iter()
            .copied()
            .filter(|r| !kept.contains(r))
            .collect();
        // The swap: waits for the copies in flight, whose DMAs use the old table.
        *self.pinned.write().unwrap_or_else(|e| e.into_inner()) = PinnedRanges::new(kept);
        for (addr, _) in gone {
            // SAFETY: `addr` starts a range we registered (it was in the table); no copy
            // can use it any more (the table no longer has it, and the copies that did
            // finished before the swap); the transport keeps it mapped until the next call.
            if let Err(e) = unsafe { driver::mem_host_unregister(addr as *mut u8) } {
                warn!(
                    "unpinning guest memory at {addr:#x}: {}",
                    driver::error_name(e)
                );
            }
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let reg = self.registrar.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some(ctx) = reg.ctx.take() {
            let pinned = self.pinned.get_mut().unwrap_or_else(|e| e.into_inner());
            let bound = ctx.bind_scoped();
            for &(addr, _) in pinned.ranges() {
                // SAFETY: `addr` starts a range registered by `set_guest_memory` and
                // unregistered once, here; no session is left (each holds an
                // `Arc<Shared>`), so no copy uses it.
                let _ = unsafe { driver::mem_host_unregister(addr as *mut u8) };
            }
            // Unbind, then release the retain (`ctx`'s drop).
            drop(bound);
            drop(ctx);
        }
    }
}

/// The device as an [`device_info::AttrSource`].
struct DriverAttrs(CUdevice);

impl device_info::AttrSource for DriverAttrs {
    fn name(&self) -> Vec<u8> {
        driver::device_name(self.0).unwrap_or_default()
    }
    fn uuid(&self) -> [u8; 16] {
        driver::device_uuid(self.0).unwrap_or_default()
    }
    fn total_mem(&self) -> u64 {
        driver::device_total_mem(self.0).unwrap_or_default()
    }
    fn attribute(&self, a: CUdevice_attribute) -> Option<i32> {
        driver::device_attribute(self.0, a).ok()
    }
}

/// Makes [`CudaExecutor`](super::CudaExecutor)s on one GPU (`factory.rs`).
#[derive(Debug)]
pub struct CudaFactory {
    pub(super) shared: Arc<Shared>,
}

impl CudaFactory {
    /// Loads the driver and opens the device, or says what is missing.
    pub fn new(config: CudaConfig) -> Result<Self, InitError> {
        let loaded = driver::load()?;
        let count = loaded.device_count as u32;
        if config.device >= count {
            return Err(InitError::BadOrdinal {
                ordinal: config.device,
                count,
            });
        }
        let drv = |call| {
            move |e| InitError::Driver {
                call,
                name: driver::error_name(e),
            }
        };
        let device = driver::device_get(config.device as i32).map_err(drv("cuDeviceGet"))?;
        // A device that cannot host a context (prohibited compute mode, fallen off the bus)
        // fails here rather than in the first session. (Not in a worker process: its one
        // session creates its context at once, and the backend's probe checked.)
        let warm = Arc::new(super::warm::Warm::new(config.warm));
        // (A warm worker process makes its one session's context now, before its connection
        // comes; see `--warm-context`.)
        if !config.tenant_process || warm.keeps_first() {
            let ctx = Context::create(device).map_err(drv("cuCtxCreate"))?;
            if warm.keeps_first() {
                warm.offer(ctx);
            } else {
                let _ = ctx.destroy();
            }
        }
        let info = device_info::fill(&DriverAttrs(device));
        let name_len = info.name.iter().position(|&c| c == 0).unwrap_or(0);
        info!(
            "CUDA executor: device {} ({}), {} MiB, compute capability {}.{}, driver {}.{}",
            config.device,
            String::from_utf8_lossy(&info.name[..name_len]),
            info.total_global_mem >> 20,
            info.attr(vcuda_protocol::attr::COMPUTE_CAPABILITY_MAJOR)
                .unwrap_or(0),
            info.attr(vcuda_protocol::attr::COMPUTE_CAPABILITY_MINOR)
                .unwrap_or(0),
            loaded.version / 1000,
            loaded.version % 1000 / 10,
        );
        // With HMM (the open kernel modules' default on recent drivers) or ATS, any kernel can
        // dereference any address of this process: guest RAM, other sessions' buffers. Then
        // serve one session at a time, as a GPU in exclusive-process mode does, unless told.
        let pageable = driver::device_attribute(
            device,
            CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS,
        ) == Ok(1);
        let exclusive = pageable && !config.allow_pageable_access && !config.tenant_process;
        if pageable && config.tenant_process {
            info!("kernels can reach this worker's pageable memory: its own tenant's only");
        } else if exclusive {
            warn!(
                "kernels on this GPU can reach pageable host memory (HMM/ATS): serving one \
                 session at a time, others get cudaErrorDevicesUnavailable. Disable HMM \
                 (nvidia_uvm uvm_disable_hmm=1) or pass --allow-pageable-access (only for \
                 tenants that trust each other)"
            );
        } else if pageable {
            warn!("kernels can reach this process's pageable memory; sessions are not isolated");
        }
        let maps_host = loaded.maps_host
            && [
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY,
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING,
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM,
            ]
            .into_iter()
            .all(|a| driver::device_attribute(device, a) == Ok(1));
        if !maps_host {
            info!(
                "host memory is not mapped for kernels: mapped memory is kept coherent by the library"
            );
        }
        let session_limit = config.session_mem_limit.of(info.total_global_mem);
        info!(
            "each session may hold {} MiB of device memory",
            session_limit >> 20
        );
        if !loaded.param_info {
            info!("driver lacks cuFuncGetParamInfo: kernel layouts come from the guest");
        }
        let printf = if config.capture_printf {
            match printf::Capture::global() {
                Ok(c) => Some(c),
                Err(e) => {
                    warn!("cannot capture device printf ({e}); it goes to stdout");
                    None
                }
            }
        } else {
            None
        };
        Ok(Self {
            shared: Arc::new(Shared {
                config,
                device,
                driver: loaded,
                info,
                pinned: RwLock::default(),
                registrar: Mutex::default(),
                checked: Mutex::default(),
                printf,
                sessions: AtomicUsize::new(0),
                exclusive,
                pageable,
                maps_host,
                session_limit,
                warm,
            }),
        })
    }

    /// Sessions that found a warm context ready (`--warm-context`).
    pub fn warm_hits(&self) -> u64 {
        self.shared.warm.hits()
    }

    /// What guests see of the device.
    pub fn device_info(&self) -> &DeviceInfo {
        &self.shared.info
    }

    /// Whether sessions are served one at a time (see [`CudaFactory::new`]).
    pub fn is_exclusive(&self) -> bool {
        self.shared.exclusive
    }

    /// Whether kernels can reach this process's pageable memory (HMM or ATS:
    /// `CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS`).
    pub fn pageable_access(&self) -> bool {
        self.shared.pageable
    }
}
