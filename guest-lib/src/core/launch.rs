// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Registration of fat binaries, kernels and variables, and kernel launches.
//!
//! Per launch, nvcc's stub calls `__cudaPushCallConfiguration`, `__cudaGetKernel` (first
//! launch only; it must succeed without the backend, so the kernel handle is the host stub's
//! address), `__cudaPopCallConfiguration` and `__cudaLaunchKernel` (CUDA 13) or
//! `cudaLaunchKernel` (CUDA 12). A launch is checked here (known kernel, valid
//! configuration, parameter layout) and sent without waiting; failures while it runs
//! surface later, as on a GPU.

use crate::client::{self, Client};
use crate::core::capture::capture_stream_handle;
pub(crate) use crate::core::function::Shape;
use crate::core::graph::{Kernel, Kind};
use crate::core::graph_node::cudaKernelNodeParams;
use crate::core::registry;
use crate::error::{Error, Result};
use crate::ffi::{KernelArgs, cudaFuncAttributes, cudaStream_t, dim3};
use crate::state;
use std::ffi::{c_int, c_void};
use vcuda_protocol::{FuncSetAttributeReq, LaunchClusterReq, LaunchReq, MAX_PARAM_LEN, attr, ops};

pub(crate) fn func(host_fun: *const c_void) -> Result<std::sync::Arc<registry::FuncReg>> {
    registry::function(host_fun as usize).ok_or(Error::INVALID_DEVICE_FUNCTION)
}

thread_local! {
    /// The launch in progress on this thread came through a CUDA 12 entry point.
    static V12_LAUNCH: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` as a launch of a CUDA 12 program (`NAME@libcudart.so.12`), whose configuration
/// errors are answered as CUDA 12's runtime does.
pub(crate) fn as_v12(f: impl FnOnce() -> Result<()>) -> Result<()> {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            V12_LAUNCH.set(false);
        }
    }
    V12_LAUNCH.set(true);
    let _reset = Reset;
    f()
}

/// The error of a launch configuration the device cannot run (a zero or too large grid or
/// block dimension, too many threads): CUDA 12's runtime answers
/// `cudaErrorInvalidConfiguration`, CUDA 13.0's `cudaErrorInvalidValue` (measured on an H100
/// with driver 580: `<<<1, 2048>>>`, `<<<0, 32>>>`, a 32x32x2 block, a grid y of 70000).
pub(crate) fn bad_config() -> Error {
    if V12_LAUNCH.get() {
        Error::INVALID_CONFIGURATION
    } else {
        Error::INVALID_VALUE
    }
}

pub(crate) fn check_config(c: &Client, grid: dim3, block: dim3, shmem: usize) -> Result<()> {
    let info = c.device_info(state::device())?;
    let a = |n| info.attr(n).unwrap_or(0) as u64;
    let (g, b) = (grid.arr(), block.arr());
    if g.contains(&0) || b.contains(&0) {
        return Err(bad_config());
    }
    let bmax = [
        a(attr::MAX_BLOCK_DIM_X),
        a(attr::MAX_BLOCK_DIM_Y),
        a(attr::MAX_BLOCK_DIM_Z),
    ];
    let gmax = [
        a(attr::MAX_GRID_DIM_X),
        a(attr::MAX_GRID_DIM_Y),
        a(attr::MAX_GRID_DIM_Z),
    ];
    let threads = b.iter().fold(1u64, |a, &v| a.saturating_mul(u64::from(v)));
    if threads > a(attr::MAX_THREADS_PER_BLOCK)
        || b.iter().zip(bmax).any(|(&v, m)| u64::from(v) > m)
        || g.iter().zip(gmax).any(|(&v, m)| u64::from(v) > m)
    {
        return Err(bad_config());
    }
    if shmem as u64 > a(attr::MAX_SHARED_MEMORY_PER_BLOCK_OPTIN) {
        return Err(Error::INVALID_VALUE);
    }
    Ok(())
}

/// Checks a launch of `host_fun` (a registered kernel, a valid configuration `(grid,
/// block, dynamic shared memory)`) and returns the kernel's backend handle and layout.
/// The kernel `host_fun` names, loaded: a kernel the program registered (its host stub),
/// or a library's kernel (a `cudaKernel_t` from `cudaLibraryGetKernel`).
pub(crate) fn loaded(c: &Client, host_fun: *const c_void) -> Result<registry::LoadedFunc> {
    match registry::function(host_fun as usize) {
        Some(f) => f.load(c),
        None => {
            crate::core::library::kernel(host_fun as usize).ok_or(Error::INVALID_DEVICE_FUNCTION)
        }
    }
}

/// A graph kernel node for a launch of `host_fun` (see [`loaded`]): a library's kernel is
/// known by its backend handle, a registered one by its host stub.
pub(crate) fn kernel_node(
    host_fun: *const c_void,
    loaded: &registry::LoadedFunc,
    cfg: (dim3, dim3, u32),
    params: Vec<u8>,
) -> Kernel {
    if registry::function(host_fun as usize).is_some() {
        Kernel::new(host_fun as usize, cfg, params, loaded.params.clone())
    } else {
        Kernel::driver(
            host_fun as usize,
            loaded.handle,
            cfg,
            params,
            loaded.params.clone(),
        )
    }
}

pub(crate) fn prepare(
    c: &Client,
    host_fun: *const c_void,
    (grid, block, shmem): (dim3, dim3, u32),
) -> Result<registry::LoadedFunc> {
    let loaded = loaded(c, host_fun)?;
    check_config(c, grid, block, shmem as usize)?;
    if loaded.param_size > MAX_PARAM_LEN {
        return Err(Error::INVALID_VALUE);
    }
    Ok(loaded)
}

/// Packs a launch's arguments into the kernel's parameter buffer.
pub(crate) fn pack(loaded: &registry::LoadedFunc, args: KernelArgs) -> Result<Vec<u8>> {
    args.pack(&loaded.params, loaded.param_size)
}

/// Sends a launch of `host_fun` with packed parameters on backend stream `stream`, without
/// waiting (a graph's kernel node).
pub(crate) fn post(
    c: &Client,
    host_fun: usize,
    (grid, block, shmem): (dim3, dim3, u32),
    stream: u64,
    params: &[u8],
    shape: Shape,
) -> Result<()> {
    let loaded = func(host_fun as *const c_void)?.load(c)?;
    if params.len() != loaded.param_size as usize {
        return Err(Error::INVALID_VALUE);
    }
    check_shape(c, &loaded.attrs, (grid, block, shmem), shape)?;
    post_handle(
        c,
        loaded.handle,
        (grid, block, shmem),
        stream,
        params,
        shape,
    )
}

/// Checks a launch of a kernel with `attrs` in `shape` as the device would refuse it.
fn check_shape(
    c: &Client,
    attrs: &vcuda_protocol::FuncAttrs,
    (grid, block, shmem): (dim3, dim3, u32),
    shape: Shape,
) -> Result<()> {
    if shape == Shape::Cooperative {
        crate::core::misc::check_cooperative(c, attrs, grid.arr(), block.arr(), shmem)?;
    }
    let given = match shape {
        Shape::Cluster(d) => Some(d),
        _ => None,
    };
    crate::core::misc::check_cluster(c, attrs, grid.arr(), given)
}

/// The launch a graph's kernel node stands for, stream 0 (the launch names the stream),
/// checked as [`post`] checks it: `(request, cooperative)`.
pub(crate) fn graph_node(c: &Client, k: &Kernel) -> Result<LaunchReq> {
    let function = match k.backend {
        Some(h) => h,
        None => {
            let loaded = func(k.func as *const c_void)?.load(c)?;
            if k.params.len() != loaded.param_size as usize {
                return Err(Error::INVALID_VALUE);
            }
            check_shape(c, &loaded.attrs, (k.grid, k.block, k.shmem), k.shape())?;
            loaded.handle
        }
    };
    Ok(LaunchReq {
        function,
        stream: 0,
        grid: k.grid.arr(),
        block: k.block.arr(),
        shared_mem: k.shmem,
        param_len: k.params.len() as u32,
    })
}

/// Posts a launch of the backend's function `handle` (a graph's driver-API kernel node) in
/// `shape`.
pub(crate) fn post_handle(
    c: &Client,
    handle: u64,
    (grid, block, shmem): (dim3, dim3, u32),
    stream: u64,
    params: &[u8],
    shape: Shape,
) -> Result<()> {
    let req = LaunchReq {
        function: handle,
        stream,
        grid: grid.arr(),
        block: block.arr(),
        shared_mem: shmem,
        param_len: params.len() as u32,
    };
    post_shaped(c, &req, params, shape)
}

/// Launches `host_fun` with arguments `args` (one pointer per parameter), or adds it to the
/// graph `stream` captures.
pub(crate) fn launch(
    host_fun: *const c_void,
    grid: dim3,
    block: dim3,
    args: KernelArgs,
    shmem: usize,
    stream: cudaStream_t,
    ptsz: bool,
) -> Result<()> {
    launch_as(
        host_fun,
        grid,
        block,
        args,
        shmem,
        stream,
        ptsz,
        Shape::Plain,
    )
}

/// Posts launch `req` (its parameters `params`) in `shape`.
pub(crate) fn post_shaped(c: &Client, req: &LaunchReq, params: &[u8], shape: Shape) -> Result<()> {
    match shape {
        Shape::Plain => c.post_with::<ops::Launch>(req, params, &[]),
        Shape::Cooperative => c.post_with::<ops::LaunchCooperative>(req, params, &[]),
        Shape::Cluster(cluster) => {
            let r = LaunchClusterReq {
                launch: *req,
                cluster,
                reserved: 0,
            };
            c.post_with::<ops::LaunchCluster>(&r, params, &[])
        }
    }
}

/// [`launch`] in `shape`: cooperatively (every block resident at once), in thread-block
/// clusters, or plainly.
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch_as(
    host_fun: *const c_void,
    grid: dim3,
    block: dim3,
    args: KernelArgs,
    shmem: usize,
    stream: cudaStream_t,
    ptsz: bool,
    shape: Shape,
) -> Result<()> {
    let cooperative = shape == Shape::Cooperative;
    let c = client::client()?;
    c.check_sticky()?;
    let shmem = u32::try_from(shmem).map_err(|_| Error::INVALID_VALUE)?;
    let cfg = (grid, block, shmem);
    let loaded = prepare(c, host_fun, cfg)?;
    let stream = capture_stream_handle(c, stream, ptsz)?;
    let params = pack(&loaded, args)?;
    if cooperative {
        crate::core::misc::check_cooperative(c, &loaded.attrs, grid.arr(), block.arr(), shmem)?;
    }
    let given = match shape {
        Shape::Cluster(d) => Some(d),
        _ => None,
    };
    crate::core::misc::check_cluster(c, &loaded.attrs, grid.arr(), given)?;
    let captured = crate::core::capture::add(stream, || {
        // A cooperative launch becomes a cooperative kernel node, one in clusters a node
        // with the cluster shape (as NVIDIA's runtime captures them).
        let mut k = kernel_node(host_fun, &loaded, cfg, params.clone());
        k.cooperative = cooperative;
        k.cluster = given;
        Ok(Kind::Kernel(k))
    })?;
    if captured {
        return Ok(());
    }
    let req = LaunchReq {
        function: loaded.handle,
        stream,
        grid: grid.arr(),
        block: block.arr(),
        shared_mem: shmem,
        param_len: params.len() as u32,
    };
    post_shaped(c, &req, &params, shape)
}

/// Attributes set on kernels (`cudaFuncSetAttribute`, `cudaKernelSetAttributeForDevice`,
/// `cuFuncSetAttribute`), by backend function handle: what the attribute queries report
/// from then on.
/// The key is the session generation (a device reset reloads kernels under new handles),
/// the handle and the attribute.
pub(crate) static SET_ATTRS: std::sync::Mutex<Option<std::collections::HashMap<AttrKey, i32>>> =
    std::sync::Mutex::new(None);

/// A set attribute: `(session generation, function handle, attribute)`.
pub(crate) type AttrKey = (u64, u64, u32);

/// Sets attribute `attr` of the kernel with backend handle `handle` to `value`, in the
/// backend and then in what the library reports.
pub(crate) fn set_attribute(c: &Client, handle: u64, attr: c_int, value: c_int) -> Result<()> {
    let req = FuncSetAttributeReq {
        function: handle,
        attr: attr as u32,
        value,
    };
    c.call::<ops::FuncSetAttribute>(&req)?;
    SET_ATTRS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(Default::default)
        .insert((c.generation(), handle, attr as u32), value);
    Ok(())
}

/// `a`, the attributes the backend gave for kernel `handle`, with those set since.
pub(crate) fn current_attrs(
    handle: u64,
    a: &vcuda_protocol::FuncAttrs,
) -> vcuda_protocol::FuncAttrs {
    let mut a = *a;
    let generation = client::connected().map_or(0, |c| c.generation());
    let g = SET_ATTRS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(m) = g.as_ref() {
        // cudaFuncAttributeMaxDynamicSharedMemorySize, ...PreferredSharedMemoryCarveout.
        if let Some(&v) = m.get(&(generation, handle, 8)) {
            a.max_dynamic_shared_size_bytes = v;
        }
        if let Some(&v) = m.get(&(generation, handle, 9)) {
            a.preferred_shmem_carveout = v;
        }
    }
    a
}

pub(crate) fn to_cuda(a: &vcuda_protocol::FuncAttrs) -> cudaFuncAttributes {
    cudaFuncAttributes {
        sharedSizeBytes: a.shared_size_bytes as usize,
        constSizeBytes: a.const_size_bytes as usize,
        localSizeBytes: a.local_size_bytes as usize,
        maxThreadsPerBlock: a.max_threads_per_block,
        numRegs: a.num_regs,
        ptxVersion: a.ptx_version,
        binaryVersion: a.binary_version,
        cacheModeCA: a.cache_mode_ca,
        maxDynamicSharedSizeBytes: a.max_dynamic_shared_size_bytes,
        preferredShmemCarveout: a.preferred_shmem_carveout,
        clusterDimMustBeSet: c_int::from(a.required_cluster[3] & 1),
        requiredClusterWidth: c_int::from(a.required_cluster[0]),
        requiredClusterHeight: c_int::from(a.required_cluster[1]),
        requiredClusterDepth: c_int::from(a.required_cluster[2]),
        ..Default::default()
    }
}

/// `cudaLaunchConfig_t`.
#[repr(C)]
pub struct cudaLaunchConfig_t {
    pub(crate) grid: dim3,
    pub(crate) block: dim3,
    pub(crate) dynamic_smem: usize,
    pub(crate) stream: cudaStream_t,
    pub(crate) attrs: *const crate::core::function::CUlaunchAttribute,
    pub(crate) num_attrs: u32,
}

/// `cudaLaunchKernelExC` with the configuration's values and its attributes.
pub(crate) fn launch_ex(
    cfg: &cudaLaunchConfig_t,
    attrs: &[crate::core::function::CUlaunchAttribute],
    func: *const c_void,
    args: KernelArgs,
    ptsz: bool,
) -> Result<()> {
    if let Some(a) = attrs
        .iter()
        .find(|a| !crate::core::function::plain_launch_attribute(a))
    {
        log::warn!(
            "cudaLaunchKernelEx: launch attribute {} is not supported",
            a.id
        );
        return Err(Error::NOT_SUPPORTED);
    }
    let shape = crate::core::function::launch_shape(attrs)?;
    launch_as(
        func,
        cfg.grid,
        cfg.block,
        args,
        cfg.dynamic_smem,
        cfg.stream,
        ptsz,
        shape,
    )?;
    for e in crate::core::function::launch_events(attrs) {
        crate::core::stream::record_event(e as crate::ffi::cudaEvent_t, cfg.stream, ptsz)?;
    }
    Ok(())
}

/// Kernel names as C strings, kept for the process's life (`cudaFuncGetName`).
pub(crate) static NAMES: std::sync::Mutex<
    Option<std::collections::HashMap<usize, std::ffi::CString>>,
> = std::sync::Mutex::new(None);

/// The driver-API function of each kernel handed out by `cudaGetFuncBySymbol`.
pub(crate) static FUNCTIONS: std::sync::Mutex<
    Option<std::collections::HashMap<(usize, u64), usize>>,
> = std::sync::Mutex::new(None);

/// The driver-API function (`CUfunction`, also the `CUkernel` of `cudaGetKernel`) of the
/// kernel the program registered at `func`: one per kernel and session generation (a
/// device reset reloads modules), kept for the process's life.
pub(crate) fn driver_function(func: *const c_void) -> Result<usize> {
    let c = client::client()?;
    let f = registry::function(func as usize).ok_or(Error::INVALID_DEVICE_FUNCTION)?;
    let loaded = f.load(c)?;
    let mut g = FUNCTIONS.lock().unwrap_or_else(|e| e.into_inner());
    Ok(*g
        .get_or_insert_with(Default::default)
        .entry((func as usize, c.generation()))
        .or_insert_with(|| crate::core::function::from_loaded(&loaded, &f.name) as usize))
}

/// A kernel node's kernel from `cudaKernelNodeParams`' values (`args`: its `kernelParams`
/// and `extra`): checks them (a known kernel, a valid configuration) and copies the
/// arguments with the launch path's own layout code.
pub(crate) fn kernel_from_c(p: &cudaKernelNodeParams, args: KernelArgs) -> Result<Kernel> {
    let c = client::client()?;
    let cfg = (p.grid, p.block, p.shared_mem);
    let loaded = prepare(c, p.func, cfg)?;
    let params = pack(&loaded, args)?;
    Ok(kernel_node(p.func, &loaded, cfg, params))
}
