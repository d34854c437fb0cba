// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Functions (attributes, occupancy) and launches.

use crate::core::function::{
    CUlaunchAttribute, Function, Shape, launch_events, launch_shape, plain_launch_attribute,
};
use std::ffi::{c_int, c_uint, c_void};

use vcuda_protocol::{LaunchReq, MAX_PARAM_LEN};

use super::out;
use crate::client::Client;
use crate::core::module::{function, session};
use crate::error::CuError;
use crate::ffi::{KernelArgs, cudaEvent_t, cudaStream_t};

/// `CUoccupancyB2DSize`: the dynamic shared memory a block size needs.
pub(crate) type BlockToSmem = Option<unsafe extern "C" fn(c_int) -> usize>;

/// `cuOccupancyMaxActiveBlocksPerMultiprocessor`: the runtime's occupancy calculator.
fn occupancy(
    blocks: *mut c_int,
    f: *const Function,
    block: c_int,
    smem: usize,
) -> Result<(), CuError> {
    let c = session()?;
    let f = function(f)?;
    if block <= 0 {
        return Err(CuError::INVALID_VALUE);
    }
    let n = resident_blocks(c, f, i64::from(block), smem)?;
    // SAFETY: the caller's output pointer.
    unsafe { out(blocks, n as c_int) }
}

/// Blocks of `block` threads with `smem` bytes of dynamic shared memory resident on one
/// multiprocessor: none when a block could not launch with that much shared memory.
fn resident_blocks(c: &Client, f: &Function, block: i64, smem: usize) -> Result<i64, CuError> {
    let info = c.device_info(crate::state::device())?;
    let limit = info
        .attr(vcuda_protocol::attr::MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        .unwrap_or(0)
        .max(0) as u64;
    let total = (smem as u64).saturating_add(f.attrs.shared_size_bytes);
    if total > limit {
        return Ok(0);
    }
    Ok(crate::core::misc::max_active_blocks(
        c,
        &f.attrs,
        block,
        smem as i64,
    )?)
}

/// `cuOccupancyMaxPotentialBlockSize`: the block size (a multiple of the warp size, at most
/// `limit` when it is positive) with the most resident threads per multiprocessor, the
/// largest of equals, as CUDA's calculator chooses; and the grid that fills the device.
fn potential_block_size(
    min_grid: *mut c_int,
    block: *mut c_int,
    f: *const Function,
    smem_of: BlockToSmem,
    smem: usize,
    limit: c_int,
) -> Result<(), CuError> {
    let c = session()?;
    let f = function(f)?;
    let info = c.device_info(crate::state::device())?;
    let a = |n| i64::from(info.attr(n).unwrap_or(0));
    use vcuda_protocol::attr;
    let mut max =
        a(attr::MAX_THREADS_PER_BLOCK).min(i64::from(f.attrs.max_threads_per_block.max(1)));
    if limit > 0 {
        max = max.min(i64::from(limit));
    }
    let (mut best, mut best_blocks, mut best_threads) = (0i64, 0i64, 0i64);
    let mut size = max / 32 * 32;
    if size == 0 {
        size = max;
    }
    while size > 0 {
        let dynamic = match smem_of {
            // SAFETY: the program's callback, called with a block size, as CUDA does.
            Some(cb) => unsafe { cb(size as c_int) },
            None => smem,
        };
        let n = resident_blocks(c, f, size, dynamic)?;
        if n * size > best_threads {
            (best, best_blocks, best_threads) = (size, n, n * size);
        }
        if best_threads == a(attr::MAX_THREADS_PER_MULTI_PROCESSOR) {
            break;
        }
        size -= 32;
    }
    let sms = a(attr::MULTI_PROCESSOR_COUNT);
    // SAFETY: the caller's output pointers.
    unsafe {
        out(min_grid, (best_blocks * sms) as c_int)?;
        out(block, best as c_int)
    }
}

/// A launch's parameter bytes from `kernelParams` or a `CU_LAUNCH_PARAM_*` list (`extra`),
/// laid out as `f` declares them (the runtime's packing, `KernelArgs::pack`).
pub(super) fn pack_params(f: &Function, args: KernelArgs) -> Result<Vec<u8>, CuError> {
    if f.param_size > MAX_PARAM_LEN {
        return Err(CuError::INVALID_VALUE);
    }
    Ok(args.pack(&f.params, f.param_size)?)
}

/// A graph kernel node for `f` (`cuGraphAddKernelNode`): its parameters copied now.
pub(super) fn kernel_node(
    f: *const Function,
    grid: [u32; 3],
    block: [u32; 3],
    shmem: c_uint,
    args: KernelArgs,
) -> Result<crate::core::graph::Kind, CuError> {
    session()?;
    let f = function(f)?;
    if grid.contains(&0) || block.contains(&0) {
        return Err(CuError::INVALID_VALUE);
    }
    let params = pack_params(f, args)?;
    Ok(graph_kernel(f, grid, block, shmem, params))
}

/// The graph kernel node of a driver launch of `f` with `params` (captured or added).
fn graph_kernel(
    f: &Function,
    grid: [u32; 3],
    block: [u32; 3],
    shmem: c_uint,
    params: Vec<u8>,
) -> crate::core::graph::Kind {
    let d3 = |v: [u32; 3]| crate::ffi::dim3 {
        x: v[0],
        y: v[1],
        z: v[2],
    };
    let mut k = crate::core::graph::Kernel::driver(
        f as *const Function as usize,
        f.handle(),
        (d3(grid), d3(block), shmem),
        params,
        f.params.clone(),
    );
    k.name = Some(f.name.to_string_lossy().into_owned());
    crate::core::graph::Kind::Kernel(k)
}

/// A launch configuration the device and the kernel can run, checked when it is launched
/// (`CUDA_ERROR_INVALID_VALUE` otherwise, as the driver answers): no zero dimension, the
/// device's grid, block and shared memory limits, and the kernel's own thread limit
/// (`.maxntid`, registers).
fn check_config(
    c: &Client,
    f: &Function,
    grid: [u32; 3],
    block: [u32; 3],
    shmem: c_uint,
) -> Result<(), CuError> {
    let d3 = |v: [u32; 3]| crate::ffi::dim3 {
        x: v[0],
        y: v[1],
        z: v[2],
    };
    crate::core::launch::check_config(c, d3(grid), d3(block), shmem as usize)
        .map_err(|_| CuError::INVALID_VALUE)?;
    let threads = block
        .iter()
        .fold(1u64, |a, &v| a.saturating_mul(u64::from(v)));
    let a = &f.attrs;
    if a.max_threads_per_block > 0 && threads > a.max_threads_per_block as u64 {
        return Err(CuError::INVALID_VALUE);
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn launch(
    f: *const Function,
    grid: [u32; 3],
    block: [u32; 3],
    shmem: c_uint,
    stream: cudaStream_t,
    args: KernelArgs,
    shape: Shape,
) -> Result<(), CuError> {
    let c = session()?;
    let f = function(f)?;
    check_config(c, f, grid, block, shmem)?;
    let cooperative = shape == Shape::Cooperative;
    if cooperative {
        crate::core::misc::check_cooperative(c, &f.attrs, grid, block, shmem)?;
    }
    let params = pack_params(f, args)?;
    let stream = crate::core::capture::capture_stream_handle(c, stream, false)?;
    let given = match shape {
        Shape::Cluster(d) => Some(d),
        _ => None,
    };
    crate::core::misc::check_cluster(c, &f.attrs, grid, given)?;
    let captured = crate::core::capture::add(stream, || {
        // A cooperative launch becomes a cooperative kernel node, one in clusters a node
        // with the cluster shape, as the runtime's do.
        let mut node = graph_kernel(f, grid, block, shmem, params.clone());
        if let crate::core::graph::Kind::Kernel(k) = &mut node {
            k.cooperative = cooperative;
            k.cluster = given;
        }
        Ok(node)
    })?;
    if captured {
        return Ok(());
    }
    let req = LaunchReq {
        function: f.handle(),
        stream,
        grid,
        block,
        shared_mem: shmem,
        param_len: params.len() as u32,
    };
    crate::core::launch::post_shaped(c, &req, &params, shape)?;
    Ok(())
}

entry_lib! {
    fn cuKernelSetCacheConfig(k: *const Function, config: c_int, dev: c_int) -> Result<(), CuError> {
        session()?;
        function(k)?;
        crate::core::context::check_device(dev)?;
        // A preference (CU_FUNC_CACHE_PREFER_*), as for cuFuncSetCacheConfig.
        if !(0..=3).contains(&config) {
            return Err(CuError::INVALID_VALUE);
        }
        Ok(())
    }

    fn cuFuncSetSharedMemConfig(f: *const Function, config: c_int) -> Result<(), CuError> {
        session()?;
        function(f)?;
        // Default, four- or eight-byte banks: the bank size is fixed (deprecated hint).
        if !(0..=2).contains(&config) {
            return Err(CuError::INVALID_VALUE);
        }
        Ok(())
    }

    fn cuFuncSetCacheConfig(f: *const Function, config: c_int) -> Result<(), CuError> {
        session()?;
        function(f)?;
        // A preference (CU_FUNC_CACHE_PREFER_*), as the runtime's cudaFuncSetCacheConfig
        // takes it: the split of L1 and shared memory is the device's business.
        if !(0..=3).contains(&config) {
            return Err(CuError::INVALID_VALUE);
        }
        Ok(())
    }

    fn cuOccupancyMaxActiveBlocksPerMultiprocessor(blocks: *mut c_int, f: *const Function, block: c_int, smem: usize) -> Result<(), CuError> {
        occupancy(blocks, f, block, smem)
    }

    fn cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(blocks: *mut c_int, f: *const Function, block: c_int, smem: usize, _flags: c_uint) -> Result<(), CuError> {
        occupancy(blocks, f, block, smem)
    }

    fn cuOccupancyMaxPotentialBlockSize(min_grid: *mut c_int, block: *mut c_int, f: *const Function, smem_of: BlockToSmem, smem: usize, limit: c_int) -> Result<(), CuError> {
        potential_block_size(min_grid, block, f, smem_of, smem, limit)
    }

    fn cuOccupancyMaxPotentialBlockSizeWithFlags(min_grid: *mut c_int, block: *mut c_int, f: *const Function, smem_of: BlockToSmem, smem: usize, limit: c_int, _flags: c_uint) -> Result<(), CuError> {
        potential_block_size(min_grid, block, f, smem_of, smem, limit)
    }

    fn cuOccupancyAvailableDynamicSMemPerBlock(smem: *mut usize, f: *const Function, blocks: c_int, block: c_int) -> Result<(), CuError> {
        let c = session()?;
        let f = function(f)?;
        if blocks <= 0 || block <= 0 {
            return Err(CuError::INVALID_VALUE);
        }
        let info = c.device_info(crate::state::device())?;
        let attrs = crate::core::launch::current_attrs(f.handle(), &f.attrs);
        let avail = crate::core::attrs::available_dynamic_smem(info, &attrs, blocks);
        // SAFETY: the caller's output pointer.
        unsafe { out(smem, avail) }
    }

    fn cuFuncGetAttribute(v: *mut c_int, attrib: c_int, f: *const Function) -> Result<(), CuError> {
        let f = function(f)?;
        let a = &crate::core::launch::current_attrs(f.handle(), &f.attrs);
        let value = match attrib {
            0 => a.max_threads_per_block,
            1 => a.shared_size_bytes as c_int,
            2 => a.const_size_bytes as c_int,
            3 => a.local_size_bytes as c_int,
            4 => a.num_regs,
            5 => a.ptx_version,
            6 => a.binary_version,
            7 => a.cache_mode_ca,
            8 => a.max_dynamic_shared_size_bytes,
            9 => a.preferred_shmem_carveout,
            // The compile-time cluster shape (`__cluster_dims__`) and whether a launch must
            // give one.
            10 => i32::from(a.required_cluster[3] & 1),
            11..=13 => i32::from(a.required_cluster[(attrib - 11) as usize]),
            14..=19 => 0,
            _ => return Err(CuError::INVALID_VALUE),
        };
        // SAFETY: the caller's output pointer.
        unsafe { out(v, value) }
    }

    fn cuFuncSetAttribute(f: *const Function, attrib: c_int, value: c_int) -> Result<(), CuError> {
        let c = session()?;
        let f = function(f)?;
        crate::core::launch::set_attribute(c, f.handle(), attrib, value)?;
        Ok(())
    }

    fn cuFuncGetParamInfo(f: *const Function, index: usize, offset: *mut usize, size: *mut usize) -> Result<(), CuError> {
        let &(o, s) = function(f)?.params.get(index).ok_or(CuError::INVALID_VALUE)?;
        // SAFETY: the caller's output pointers.
        unsafe {
            out(offset, o as usize)?;
            out(size, s as usize)
        }
    }

    fn cuLaunchKernel(f: *const Function, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint, shmem: c_uint, s: cudaStream_t, args: *mut *mut c_void, extra: *mut *mut c_void) -> Result<(), CuError> {
        // SAFETY: the caller's kernel arguments (the API's contract).
        let args = unsafe { KernelArgs::new(args, extra) };
        launch(f, [gx, gy, gz], [bx, by, bz], shmem, s, args, Shape::Plain)
    }

    fn cuLaunchCooperativeKernel(f: *const Function, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint, shmem: c_uint, s: cudaStream_t, args: *mut *mut c_void) -> Result<(), CuError> {
        // SAFETY: the caller's kernel arguments (the API's contract).
        let args = unsafe { KernelArgs::new(args, std::ptr::null_mut()) };
        launch(f, [gx, gy, gz], [bx, by, bz], shmem, s, args, Shape::Cooperative)
    }
}

entry_lib! {
    fn cuKernelGetAttribute(v: *mut c_int, attrib: c_int, k: *const Function, dev: c_int) -> Result<(), CuError> {
        crate::core::context::check_device(dev)?;
        // SAFETY: the same contract as cuFuncGetAttribute's.
        match unsafe { cuFuncGetAttribute(v, attrib, k) } {
            0 => Ok(()),
            e => Err(CuError(e)),
        }
    }

    fn cuKernelSetAttribute(attrib: c_int, value: c_int, k: *const Function, dev: c_int) -> Result<(), CuError> {
        crate::core::context::check_device(dev)?;
        // SAFETY: the same contract as cuFuncSetAttribute's.
        match unsafe { cuFuncSetAttribute(k, attrib, value) } {
            0 => Ok(()),
            e => Err(CuError(e)),
        }
    }

    fn cuKernelGetParamInfo(k: *const Function, index: usize, offset: *mut usize, size: *mut usize) -> Result<(), CuError> {
        // SAFETY: the same contract as cuFuncGetParamInfo's.
        match unsafe { cuFuncGetParamInfo(k, index, offset, size) } {
            0 => Ok(()),
            e => Err(CuError(e)),
        }
    }
}

/// `CUlaunchConfig`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CUlaunchConfig {
    grid: [c_uint; 3],
    block: [c_uint; 3],
    shared_mem: c_uint,
    pub(crate) stream: cudaStream_t,
    attrs: *const CUlaunchAttribute,
    num_attrs: c_uint,
}

/// The attributes of a `CUlaunchConfig`.
///
/// # Safety
///
/// `cfg.attrs` is null or points to `cfg.num_attrs` attributes that outlive the slice.
unsafe fn config_attrs<'a>(cfg: &CUlaunchConfig) -> Result<&'a [CUlaunchAttribute], CuError> {
    if cfg.num_attrs == 0 {
        return Ok(&[]);
    }
    if cfg.attrs.is_null() {
        return Err(CuError::INVALID_VALUE);
    }
    // SAFETY: the caller's guarantee.
    Ok(unsafe { std::slice::from_raw_parts(cfg.attrs, cfg.num_attrs as usize) })
}

/// `cuOccupancyMaxActiveClusters` (`size` false) and `cuOccupancyMaxPotentialClusterSize`.
///
/// # Safety
///
/// `config` is null or readable, with its attributes as [`config_attrs`] needs.
unsafe fn occupancy_clusters(
    out_value: *mut c_int,
    f: *const Function,
    config: *const CUlaunchConfig,
    size: bool,
) -> Result<(), CuError> {
    let c = session()?;
    let func = function(f)?;
    // SAFETY: the caller's configuration, checked for null.
    let cfg = unsafe { config.as_ref() }.ok_or(CuError::INVALID_VALUE)?;
    // SAFETY: the caller's guarantee.
    let attrs = unsafe { config_attrs(cfg)? };
    let given = crate::core::function::cluster_attribute(attrs);
    // SAFETY: `func` is a live function (checked by `function`).
    let loaded = unsafe { crate::core::function::loaded_of(func) };
    let shape = (cfg.grid, cfg.block, cfg.shared_mem as usize);
    let n = crate::core::misc::occupancy_cluster(c, &loaded, shape, given, size)?;
    // SAFETY: the caller's output pointer.
    unsafe { out(out_value, n) }
}

entry_lib! {
    fn cuOccupancyMaxActiveClusters(clusters: *mut c_int, f: *const Function, config: *const CUlaunchConfig) -> Result<(), CuError> {
        // SAFETY: the caller's configuration (the driver API's contract).
        unsafe { occupancy_clusters(clusters, f, config, false) }
    }

    fn cuOccupancyMaxPotentialClusterSize(size: *mut c_int, f: *const Function, config: *const CUlaunchConfig) -> Result<(), CuError> {
        // SAFETY: as above.
        unsafe { occupancy_clusters(size, f, config, true) }
    }

    fn cuLaunchKernelEx(config: *const CUlaunchConfig, f: *const Function, args: *mut *mut c_void, extra: *mut *mut c_void) -> Result<(), CuError> {
        // SAFETY: the caller's launch configuration, checked for null.
        let cfg = unsafe { config.as_ref() }.ok_or(CuError::INVALID_VALUE)?;
        // SAFETY: `num_attrs` attributes at `attrs` (the driver API's contract).
        let attrs = unsafe { config_attrs(cfg)? };
        if let Some(a) = attrs.iter().find(|a| !plain_launch_attribute(a)) {
            log::warn!("cuLaunchKernelEx: launch attribute {} is not supported", a.id);
            return Err(CuError::NOT_SUPPORTED);
        }
        let shape = launch_shape(attrs)?;
        // SAFETY: the caller's kernel arguments (the API's contract).
        let args = unsafe { KernelArgs::new(args, extra) };
        launch(f, cfg.grid, cfg.block, cfg.shared_mem, cfg.stream, args, shape)?;
        for e in launch_events(attrs) {
            crate::core::stream::event_record_call(e as cudaEvent_t, cfg.stream).map_err(crate::error::CuError::from)?;
        }
        Ok(())
    }
}
