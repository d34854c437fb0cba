// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Modules, kernels and launches of a session: loading a guest's module image once per
//! session, looking kernels and variables up by name, and launching with the guest's
//! marshaled parameter buffer (see "Modules and launches" in the [module
//! documentation](super)).

use std::ffi::{CString, c_void};
use std::rc::Rc;
use std::sync::Arc;

use cudarc::driver::sys::{CUfunction_attribute, CUresult};
use log::{debug, warn};
use vcuda_protocol::{FuncAttrs, LaunchReq, MAX_PARAM_LEN, ParamInfo};

use super::allocs::Owner;
use super::error::{optional_to_status, to_status};
use super::owned::Kernel;
use super::state::{Function, LoadedModule, PARAM_BUF_LEN, stream_ref};
use super::{CudaExecutor, context_of, driver, image};
use crate::executor::{ExecResult, FunctionInfo, ModuleImage, Status};

/// Settable `cudaFuncAttribute`s (8..=15) as the driver's `CUfunction_attribute` (same
/// numbers).
fn cu_func_attr(attr: u32) -> ExecResult<CUfunction_attribute> {
    use CUfunction_attribute::*;
    Ok(match attr {
        8 => CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        9 => CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
        10 => CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET,
        11 => CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH,
        12 => CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT,
        13 => CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH,
        14 => CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
        15 => CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
        _ => return Err(Status::INVALID_VALUE),
    })
}

/// How a launch runs its blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    /// As the driver schedules them.
    Plain,
    /// Every block resident at once (`cuLaunchCooperativeKernel`).
    Cooperative,
    /// In thread-block clusters of this many blocks per dimension (`cuLaunchKernelEx`).
    Cluster([u32; 3]),
}

/// A kernel's attributes (0 where the driver does not say).
fn function_attrs(k: &Kernel) -> FuncAttrs {
    use CUfunction_attribute::*;
    let get = |a| k.attribute(a).unwrap_or(0);
    FuncAttrs {
        shared_size_bytes: get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES) as u64,
        const_size_bytes: get(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES) as u64,
        local_size_bytes: get(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES) as u64,
        max_threads_per_block: get(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
        num_regs: get(CU_FUNC_ATTRIBUTE_NUM_REGS),
        ptx_version: get(CU_FUNC_ATTRIBUTE_PTX_VERSION),
        binary_version: get(CU_FUNC_ATTRIBUTE_BINARY_VERSION),
        cache_mode_ca: get(CU_FUNC_ATTRIBUTE_CACHE_MODE_CA),
        max_dynamic_shared_size_bytes: get(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES),
        preferred_shmem_carveout: get(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT),
        required_cluster: [
            get(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH).clamp(0, 255) as u8,
            get(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT).clamp(0, 255) as u8,
            get(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH).clamp(0, 255) as u8,
            u8::from(get(CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET) != 0),
        ],
        reserved: [0; 2],
    }
}

/// Hands a launch's parameters, the first `len` bytes of `buf` (the rest zero where the
/// kernel's layout is unknown), to `f(kernel_params, extra)` as the driver takes them. With
/// a `layout`, `kernelParams`: one pointer per parameter into `buf` (kept in `args`), each
/// parameter's bytes in bounds (checked: a parameter past `len` is
/// `Status::INVALID_VALUE`). Without, an `extra` list naming `buf`, which is
/// `PARAM_BUF_LEN` (the largest parameter size CUDA allows) long, so the driver cannot read
/// past it whatever size the kernel wants. The pointers stay valid during `f` (they point
/// into `buf`, `args` and this frame); the driver copies parameters before returning.
pub(super) fn with_params<R>(
    buf: &mut [u8; PARAM_BUF_LEN],
    len: usize,
    layout: Option<&[ParamInfo]>,
    args: &mut Vec<*mut c_void>,
    f: impl FnOnce(*mut *mut c_void, *mut *mut c_void) -> R,
) -> ExecResult<R> {
    let base = buf.as_mut_ptr();
    args.clear();
    let Some(layout) = layout else {
        let mut size = len;
        let mut extra: [*mut c_void; 5] = [
            driver::LAUNCH_PARAM_BUFFER_POINTER,
            base.cast(),
            driver::LAUNCH_PARAM_BUFFER_SIZE,
            (&raw mut size).cast(),
            driver::LAUNCH_PARAM_END,
        ];
        return Ok(f(std::ptr::null_mut(), extra.as_mut_ptr()));
    };
    for p in layout {
        if p.offset as usize + p.size as usize > len.min(PARAM_BUF_LEN) {
            return Err(Status::INVALID_VALUE);
        }
        // In bounds: offset + size <= len <= PARAM_BUF_LEN.
        args.push(base.wrapping_add(p.offset as usize).cast());
    }
    let kernel_params = if args.is_empty() {
        std::ptr::null_mut()
    } else {
        args.as_mut_ptr()
    };
    Ok(f(kernel_params, std::ptr::null_mut()))
}

impl CudaExecutor {
    /// The parameter layout the driver reports, or `None`.
    fn param_layout(&self, k: &Kernel) -> Option<(Vec<ParamInfo>, u32)> {
        if !self.shared.driver.param_info {
            return None;
        }
        let mut params = Vec::new();
        let mut total = 0u32;
        for index in 0..=MAX_PARAM_LEN as usize {
            match k.param_info(&self.shared.driver, index) {
                Ok((offset, size)) => {
                    let offset = u32::try_from(offset).ok()?;
                    let size = u32::try_from(size).ok()?;
                    let end = offset.checked_add(size)?;
                    if end > MAX_PARAM_LEN {
                        return None;
                    }
                    total = total.max(end);
                    params.push(ParamInfo { offset, size });
                }
                Err(CUresult::CUDA_ERROR_INVALID_VALUE) => return Some((params, total)),
                Err(e) => {
                    debug!("cuFuncGetParamInfo: {}", driver::error_name(e));
                    return None;
                }
            }
        }
        None
    }

    /// Grid and block within the device's limits, as the runtime checks before launching
    /// (`cudaErrorInvalidConfiguration`; the driver would say `CUDA_ERROR_INVALID_VALUE`).
    pub(super) fn check_launch_config(&self, req: &LaunchReq) -> ExecResult<()> {
        use vcuda_protocol::attr::*;
        let a = |n| self.shared.info.attr(n).unwrap_or(0).max(0) as u64;
        let block_max = [a(MAX_BLOCK_DIM_X), a(MAX_BLOCK_DIM_Y), a(MAX_BLOCK_DIM_Z)];
        let grid_max = [a(MAX_GRID_DIM_X), a(MAX_GRID_DIM_Y), a(MAX_GRID_DIM_Z)];
        let threads = req
            .block
            .iter()
            .fold(1u64, |a, &b| a.saturating_mul(u64::from(b)));
        let over = |dims: &[u32; 3], max: &[u64; 3]| {
            dims.iter()
                .zip(max)
                .any(|(&d, &m)| d == 0 || u64::from(d) > m)
        };
        if over(&req.block, &block_max)
            || over(&req.grid, &grid_max)
            || threads > a(MAX_THREADS_PER_BLOCK)
        {
            return Err(Status::INVALID_CONFIGURATION);
        }
        Ok(())
    }

    fn drop_module_functions(&mut self, module: u64) {
        self.functions.retain(|_, f| f.module != module);
        self.function_names.retain(|(m, _), _| *m != module);
    }

    /// The NUL-terminated PTX units of a device-linked image, for this device's arch.
    fn ptx_units(&self, image: &[u8]) -> Result<Vec<Vec<u8>>, Status> {
        use vcuda_protocol::attr::{COMPUTE_CAPABILITY_MAJOR, COMPUTE_CAPABILITY_MINOR};
        let a = |n| self.shared.info.attr(n).unwrap_or(0).max(0) as u32;
        let arch = a(COMPUTE_CAPABILITY_MAJOR) * 10 + a(COMPUTE_CAPABILITY_MINOR);
        let refused = |e: vcuda_fatbin::FatbinError| {
            warn!("cannot link the module's PTX units: {e}");
            Status::INVALID_KERNEL_IMAGE
        };
        let fb = vcuda_fatbin::parse(image).map_err(refused)?;
        fb.ptx_units(arch)
            .map_err(refused)?
            .iter()
            .map(|e| {
                let mut v = e.ptx_text().map_err(refused)?.into_owned().into_bytes();
                v.push(0);
                Ok(v)
            })
            .collect()
    }

    pub(super) fn module_load_impl(&mut self, image: Arc<ModuleImage>) -> ExecResult<u64> {
        let hash = image.hash;
        if let Some(m) = self.loaded.get_mut(&hash) {
            let h = self.modules.insert(hash)?;
            m.refs += 1;
            return Ok(h);
        }
        let known = self
            .shared
            .checked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&hash)
            .copied();
        let info = match known {
            Some(i) => i,
            None => {
                let i = image::check(&image.bytes).map_err(|e| {
                    warn!("module image refused: {e}");
                    Status::INVALID_KERNEL_IMAGE
                })?;
                self.shared
                    .checked
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(hash, i);
                i
            }
        };
        // The loader wants the image 8-byte aligned; copy it if the allocator did not.
        let aligned: Vec<u64>;
        let ptr = if image.bytes.as_ptr().align_offset(8) == 0 {
            image.bytes.as_ptr()
        } else {
            let mut v = vec![0u64; image.bytes.len().div_ceil(8)];
            // SAFETY: `v` holds `len.div_ceil(8) * 8 >= len` bytes, so the destination is
            // writable for `len` bytes; the source is the image's `len` bytes; `v` is a
            // fresh allocation, so the two do not overlap.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    image.bytes.as_ptr(),
                    v.as_mut_ptr().cast::<u8>(),
                    image.bytes.len(),
                );
            }
            aligned = v;
            aligned.as_ptr().cast::<u8>()
        };
        let ctx = context_of(&self.ctx)?;
        ctx.bind().map_err(to_status)?;
        self.may_print = true;
        // One fat binary holding several PTX units (vcuda's JIT link of several PTX inputs):
        // the driver would compile one of them alone, so link them.
        let loaded = if info.containers == 1 && info.ptx_units > 1 {
            let units = self.ptx_units(&image.bytes)?;
            let refs: Vec<&[u8]> = units.iter().map(Vec::as_slice).collect();
            ctx.module_link_ptx(&self.shared.driver, &refs)
        } else {
            // SAFETY: `ctx` was made current just above. The image passed `image::check`
            // (its declared sizes lie inside the bytes); `ptr` is 8-byte aligned and outlives
            // the call (`image` or `aligned` holds the bytes, unchanged, until this function
            // ends).
            unsafe { ctx.module_load(ptr) }
        };
        let module = match loaded {
            Ok(m) => m,
            // A device-linked program whose linked image (the first fat binary) has no code
            // for this device: link its units' PTX, as the runtime would JIT it.
            Err(e) if info.containers > 1 => {
                let units = self.ptx_units(&image.bytes)?;
                debug!(
                    "the linked image did not load ({}); JIT-linking {} PTX units",
                    driver::error_name(e),
                    units.len()
                );
                let refs: Vec<&[u8]> = units.iter().map(Vec::as_slice).collect();
                if refs.is_empty() {
                    return Err(to_status(e));
                }
                ctx.module_link_ptx(&self.shared.driver, &refs)
                    .map_err(to_status)?
            }
            Err(e) => return Err(to_status(e)),
        };
        // If the table refuses a handle, dropping `module` unloads it again.
        let h = self.modules.insert(hash)?;
        self.loaded.insert(
            hash,
            LoadedModule {
                module: Rc::new(module),
                refs: 1,
                names: None,
                image,
                seen: Default::default(),
            },
        );
        self.uses_printf |= info.uses_printf;
        Ok(h)
    }

    pub(super) fn module_unload_impl(&mut self, module: u64) -> ExecResult<()> {
        let hash = self.modules.remove(module)?;
        self.drop_module_functions(module);
        let Some(m) = self.loaded.get_mut(&hash) else {
            return Ok(());
        };
        m.refs -= 1;
        if m.refs > 0 {
            return Ok(());
        }
        let Some(m) = self.loaded.remove(&hash) else {
            return Ok(());
        };
        self.allocs.remove_module(&hash);
        self.bind()?;
        self.may_print = true;
        // Launches of its kernels may still be queued: let them finish first. (A failed
        // wait still unloads, unless it ended the context: then the module is gone too.)
        let waited = self.wait_device();
        self.settle(waited).or_else(|e| match self.ctx {
            Some(_) => Ok(()),
            None => Err(e),
        })?;
        // The last handle to this module is gone and its kernels left the table above, so
        // this is the last reference (otherwise the last kernel's drop unloads it).
        match Rc::into_inner(m.module) {
            Some(m) => m.unload().map_err(to_status),
            None => Ok(()),
        }
    }

    pub(super) fn function_get_impl(
        &mut self,
        module: u64,
        name: &str,
    ) -> ExecResult<FunctionInfo> {
        let hash = *self.modules.get(module)?;
        if let Some(&h) = self.function_names.get(&(module, name.to_owned())) {
            return Ok(self.functions.get(h)?.info.clone());
        }
        let m = &self.loaded.get(&hash).ok_or(Status::INVALID_HANDLE)?.module;
        let cname = CString::new(name).map_err(|_| Status::INVALID_DEVICE_FUNCTION)?;
        self.bind()?;
        let kernel = m.function(&cname).map_err(|e| match e {
            CUresult::CUDA_ERROR_NOT_FOUND => Status::INVALID_DEVICE_FUNCTION,
            e => to_status(e),
        })?;
        let attrs = function_attrs(&kernel);
        let layout = self.param_layout(&kernel);
        let mut info = FunctionInfo {
            handle: 0,
            attrs,
            param_size: layout.as_ref().map_or(0, |l| l.1),
            params: layout.map(|l| l.0),
        };
        let h = self.functions.insert(Function {
            kernel,
            module,
            info: info.clone(),
        })?;
        info.handle = h;
        if let Ok(f) = self.functions.get_mut(h) {
            f.info.handle = h;
        }
        self.function_names.insert((module, name.to_owned()), h);
        Ok(info)
    }

    pub(super) fn module_function_impl(
        &mut self,
        module: u64,
        index: u32,
    ) -> ExecResult<(u32, Option<String>)> {
        let hash = *self.modules.get(module)?;
        self.bind()?;
        let l = self.loaded.get_mut(&hash).ok_or(Status::INVALID_HANDLE)?;
        if l.names.is_none() {
            l.names = Some(l.module.function_names().map_err(optional_to_status)?);
        }
        let names = l.names.as_deref().unwrap_or_default();
        let count = u32::try_from(names.len()).map_err(|_| Status::NOT_SUPPORTED)?;
        Ok((count, names.get(index as usize).cloned()))
    }

    pub(super) fn symbol_get_impl(&mut self, module: u64, name: &str) -> ExecResult<(u64, u64)> {
        let hash = *self.modules.get(module)?;
        let m = self.loaded.get_mut(&hash).ok_or(Status::INVALID_HANDLE)?;
        let cname = CString::new(name).map_err(|_| Status::INVALID_SYMBOL)?;
        context_of(&self.ctx)?.bind().map_err(to_status)?;
        let (ptr, size) = m.module.global(&cname).map_err(|e| match e {
            CUresult::CUDA_ERROR_NOT_FOUND => Status::INVALID_SYMBOL,
            e => to_status(e),
        })?;
        if size > 0 {
            self.allocs.insert(ptr, size as u64, Owner::Module(hash))?;
        }
        if !m.seen.contains(name) {
            m.seen.insert(name.to_owned());
        }
        Ok((ptr, size as u64))
    }

    /// Launches a kernel on the stream `req` names, in the `shape` of launch asked.
    pub(super) fn launch_impl(
        &mut self,
        req: &LaunchReq,
        params: &[u8],
        shape: Shape,
    ) -> ExecResult<()> {
        let stream = stream_ref(&self.streams, req.stream)?;
        self.check_launch_config(req)?;
        if params.len() > PARAM_BUF_LEN || params.len() != req.param_len as usize {
            return Err(Status::INVALID_VALUE);
        }
        self.bind()?;
        self.may_print = true;
        let f = self
            .functions
            .get(req.function)
            .map_err(|_| Status::INVALID_DEVICE_FUNCTION)?;
        let buf = &mut self.params.0;
        buf[..params.len()].copy_from_slice(params);
        match f.info.params {
            Some(_) => self.params_dirty = self.params_dirty.max(params.len()),
            None => {
                // The driver reads as many bytes as the kernel's parameters need; zero
                // whatever an earlier launch left past this one's bytes.
                buf[params.len()..self.params_dirty.max(params.len())].fill(0);
                self.params_dirty = params.len();
            }
        }
        let (cfg, driver) = ((req.grid, req.block, req.shared_mem), &self.shared.driver);
        let cooperative = shape == Shape::Cooperative;
        let launch = |kernel_params: *mut *mut c_void, extra: *mut *mut c_void| {
            if let Shape::Cluster(cluster) = shape {
                // SAFETY: our context is current (bound above); the pointers are as
                // `with_params` says.
                return unsafe {
                    f.kernel
                        .launch_cluster(driver, cfg, cluster, stream, kernel_params, extra)
                };
            }
            if cooperative {
                if !extra.is_null() {
                    // cuLaunchCooperativeKernel takes kernelParams only, which need the
                    // layout.
                    return Err(CUresult::CUDA_ERROR_NOT_SUPPORTED);
                }
                // SAFETY: our context is current (bound above); the pointers are as
                // `with_params` says.
                return unsafe {
                    f.kernel
                        .launch_cooperative(driver, cfg, stream, kernel_params)
                };
            }
            // SAFETY: our context is current (bound above); the pointers are as
            // `with_params` says.
            unsafe {
                f.kernel
                    .launch(cfg.0, cfg.1, cfg.2, stream, kernel_params, extra)
            }
        };
        match with_params(
            buf,
            params.len(),
            f.info.params.as_deref(),
            &mut self.arg_ptrs,
            launch,
        )? {
            Err(CUresult::CUDA_ERROR_NOT_SUPPORTED) if cooperative => Err(Status::NOT_SUPPORTED),
            r => r.map_err(to_status),
        }
    }

    pub(super) fn func_set_attribute_impl(
        &mut self,
        function: u64,
        attr: u32,
        value: i32,
    ) -> ExecResult<()> {
        let f = self
            .functions
            .get_mut(function)
            .map_err(|_| Status::INVALID_DEVICE_FUNCTION)?;
        let a = cu_func_attr(attr)?;
        // Bind through the field: `f` borrows the function table mutably.
        context_of(&self.ctx)?.bind().map_err(to_status)?;
        f.kernel.set_attribute(a, value).map_err(to_status)?;
        f.info.attrs = function_attrs(&f.kernel);
        Ok(())
    }

    pub(super) fn occupancy_cluster_impl(
        &mut self,
        req: &vcuda_protocol::OccupancyClusterReq,
    ) -> ExecResult<vcuda_protocol::OccupancyClusterResp> {
        let size = match req.query {
            vcuda_protocol::OCCUPANCY_MAX_ACTIVE_CLUSTERS => false,
            vcuda_protocol::OCCUPANCY_MAX_CLUSTER_SIZE => true,
            _ => return Err(Status::INVALID_VALUE),
        };
        let f = self
            .functions
            .get(req.function)
            .map_err(|_| Status::INVALID_DEVICE_FUNCTION)?;
        let cluster = (req.cluster != [0; 3]).then_some(req.cluster);
        context_of(&self.ctx)?.bind().map_err(to_status)?;
        let cfg = (req.grid, req.block, req.shared_mem);
        match f.kernel.occupancy_cluster(cfg, cluster, size) {
            Ok(v) => Ok(vcuda_protocol::OccupancyClusterResp {
                value: v.max(0) as u32,
                reserved: 0,
            }),
            // A driver without the entry points (before 11.8).
            Err(CUresult::CUDA_ERROR_NOT_FOUND) => Err(Status::NOT_SUPPORTED),
            Err(e) => Err(to_status(e)),
        }
    }

    pub(super) fn tensor_map_encode_impl(
        &mut self,
        req: &vcuda_protocol::TensorMapEncodeReq,
    ) -> ExecResult<vcuda_protocol::TensorMapResp> {
        context_of(&self.ctx)?.bind().map_err(to_status)?;
        let map = driver::tensor_map_encode_tiled(req).map_err(to_status)?;
        Ok(vcuda_protocol::TensorMapResp { map })
    }

    pub(super) fn tensor_map_replace_address_impl(
        &mut self,
        map: [u64; 16],
        address: u64,
    ) -> ExecResult<vcuda_protocol::TensorMapResp> {
        context_of(&self.ctx)?.bind().map_err(to_status)?;
        let map = driver::tensor_map_replace_address(map, address).map_err(to_status)?;
        Ok(vcuda_protocol::TensorMapResp { map })
    }
}
