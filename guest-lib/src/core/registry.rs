// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Fat binaries, kernels and variables the program registers, and their backend handles.
//!
//! Registration happens in static constructors, before `main`, and never contacts the
//! backend. A fat binary is sent to the backend on first use (keyed by its SHA-256, so the
//! backend can reuse what another process already sent), and kernel and variable handles
//! are looked up on first use. `cudaDeviceReset` invalidates them all (the client's
//! generation changes) and they are loaded again on next use.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, OnceLock};

use sha2::{Digest, Sha256};
use vcuda_fatbin::ParamLayout;
use vcuda_protocol::{
    FuncAttrs, FunctionGetReq, FunctionGetResp, HandleReq, MODULE_HAS_DATA, ModuleLoadReq,
    ModuleLoadResp, PARAMS_UNKNOWN, ParamInfo, SymbolBindReq, SymbolGetReq, SymbolGetResp, ops,
};
use zerocopy::FromBytes;

use crate::client::Client;
use crate::error::{Error, Result};

/// A registered fat binary.
pub struct FatbinReg {
    wrapper: usize,
    image: OnceLock<std::result::Result<Image, Error>>,
    module: Mutex<Option<(u64, u64)>>,
    /// Its `__managed__` variables: moved to managed memory when the module loads.
    managed: Mutex<Vec<ManagedVar>>,
    /// The generation in which loading failed, and why: not retried (with the image sent
    /// again) at every launch.
    failed: Mutex<Option<(u64, Error)>>,
}

/// A `__managed__` variable.
struct ManagedVar {
    /// Where nvcc's host code reads the variable's address (`__nv_managed_data__`).
    host_var_ptr: usize,
    name: String,
    size: usize,
    /// Its managed memory, allocated at the first load and kept for the process: a reload
    /// (after `cudaDeviceReset`) binds the module to the same memory, so the address nvcc's
    /// host code cached stays right.
    addr: Option<u64>,
}

/// Module `module`'s variable `name`: its device address and size (`SymbolGet`).
pub(crate) fn symbol(c: &Client, module: u64, name: &str) -> Result<(u64, u64)> {
    let r: SymbolGetResp =
        c.call_with::<ops::SymbolGet>(&SymbolGetReq { module }, name.as_bytes(), &[], &mut [])?;
    Ok((r.ptr, r.size))
}

/// Records a module variable at `ptr` (`size` bytes) as device memory, as the driver knows
/// it: `cudaMemcpyDefault` copies to and from it as device memory and
/// `cudaPointerGetAttributes` calls it device memory. The backend still checks every access.
pub(crate) fn record_global(c: &Client, ptr: u64, size: u64) {
    c.mirror.insert(crate::mirror::Range {
        base: ptr,
        len: size,
        kind: crate::mirror::Kind::Device,
        device: crate::state::device(),
    });
}

/// Binds module `module`'s variable `name` to the managed memory at `addr` (`size` bytes),
/// which the backend fills with the variable's initial value; the module's kernels then use
/// it in place.
pub(crate) fn bind_symbol(c: &Client, module: u64, name: &str, addr: u64, size: u64) -> Result<()> {
    let req = SymbolBindReq { module, addr, size };
    c.call_with::<ops::SymbolBind>(&req, name.as_bytes(), &[], &mut [])?;
    Ok(())
}

/// Where the backend cannot map the program's memory: module variables `spans` (address,
/// size) stay where the module put them and become managed memory the library keeps
/// coherent at the same addresses.
pub(crate) fn adopt_in_place(c: &Client, spans: &[(u64, u64)]) -> Result<()> {
    crate::coherent::adopt(c, spans)?;
    let device = crate::state::device();
    for &(base, len) in spans {
        c.mirror.insert(crate::mirror::Range {
            base,
            len,
            kind: crate::mirror::Kind::Managed,
            device,
        });
    }
    Ok(())
}

/// The image to send for fat binary `bytes`: without the cubins no device of the session
/// runs (those of other compute capability major versions; PTX and the rest stay), so a
/// module built for many GPUs travels with what this one can use. `None`: send `bytes`.
pub(crate) fn for_devices(c: &Client, bytes: &[u8]) -> Option<Vec<u8>> {
    if !bytes.starts_with(&vcuda_fatbin::FATBIN_MAGIC.to_le_bytes()) {
        return None;
    }
    let mut majors = Vec::new();
    for d in 0..c.device_count() {
        // A device not described keeps every cubin.
        let info = c.device_info(d).ok()?;
        let major = *info
            .attrs
            .get(vcuda_protocol::attr::COMPUTE_CAPABILITY_MAJOR as usize)?;
        majors.push(u32::try_from(major).ok()?);
    }
    let kept = vcuda_fatbin::without_foreign_cubins(bytes, &majors)?;
    log::debug!(
        "module image: {} of {} bytes sent (cubins for compute capability {majors:?})",
        kept.len(),
        bytes.len()
    );
    Some(kept)
}

/// Whether a module image of `len` bytes (as sent: less the cubins for other GPUs) fits in
/// one request, which carries at most [`vcuda_protocol::MAX_SEGMENT_LEN`] bytes; logs why
/// not. A larger one would cost the session (the backend closes it).
pub(crate) fn image_fits(len: usize) -> bool {
    let limit = vcuda_protocol::MAX_SEGMENT_LEN;
    let fits = u64::try_from(len).is_ok_and(|l| l <= limit);
    if !fits {
        log::error!(
            "a module image of {len} bytes (without the cubins for other GPUs) is over the \
             {limit} bytes vcuda sends in one request; it is not loaded"
        );
    }
    fits
}

/// A fat binary's bytes and what the library computed from them.
pub struct Image {
    /// The fat binary (in the program's image, alive until it unloads); for a device-linked
    /// (`-rdc`) program, the linked image followed by every unit's prelinked fat binary
    /// (their PTX is what the CPU executor links, and what a GPU without a matching cubin
    /// JIT-links).
    pub bytes: Cow<'static, [u8]>,
    /// SHA-256 of `bytes`.
    pub hash: [u8; 32],
    /// Parameter layouts of its kernels.
    pub layouts: HashMap<String, ParamLayout>,
    /// What goes to the backend, with its SHA-256, where that is less than `bytes` (see
    /// [`Image::sent`]).
    sent: OnceLock<Option<(Vec<u8>, [u8; 32])>>,
}

impl Image {
    /// The bytes to send to the backend and their SHA-256: `bytes` less the cubins no
    /// device of the session runs ([`for_devices`]).
    fn sent(&self, c: &Client) -> (&[u8], [u8; 32]) {
        let sent = self.sent.get_or_init(|| {
            for_devices(c, &self.bytes).map(|b| {
                let h = Sha256::digest(&b).into();
                (b, h)
            })
        });
        match sent {
            Some((b, h)) => (b, *h),
            None => (&self.bytes, self.hash),
        }
    }
}

impl FatbinReg {
    /// The image, parsed on first use.
    pub fn image(&self) -> Result<&Image> {
        self.image
            .get_or_init(|| {
                // SAFETY: `wrapper` is the pointer nvcc's registration code passed to
                // __cudaRegisterFatBinary: a wrapper in the program's read-only image that
                // stays mapped until the program unloads it.
                let bytes = unsafe {
                    vcuda_fatbin::fatbin_from_wrapper::<'static>(self.wrapper as *const c_void)
                }
                .map_err(|e| {
                    log::error!("cannot read a registered fat binary: {e}");
                    Error(vcuda_protocol::status::INVALID_KERNEL_IMAGE)
                })?;
                // SAFETY: as above; nvcc's link stub fills the unit list before it registers
                // a version-2 wrapper, and the units live in the program's image too.
                let units = unsafe {
                    vcuda_fatbin::prelinked_fatbins::<'static>(self.wrapper as *const c_void)
                }
                .map_err(|e| {
                    log::error!("cannot read the units of a device-linked fat binary: {e}");
                    Error(vcuda_protocol::status::INVALID_KERNEL_IMAGE)
                })?;
                let bytes = if units.is_empty() {
                    Cow::Borrowed(bytes)
                } else {
                    // Fat binary sizes are multiples of 8, so each one stays aligned.
                    let mut all = bytes.to_vec();
                    for u in units {
                        all.extend_from_slice(u);
                    }
                    Cow::Owned(all)
                };
                let layouts = match vcuda_fatbin::parse(&bytes) {
                    Ok(f) => vcuda_fatbin::kernel_layouts(&f),
                    Err(e) => {
                        log::warn!(
                            "cannot parse a fat binary ({e}); the backend's layouts will be used"
                        );
                        HashMap::new()
                    }
                };
                Ok(Image {
                    hash: Sha256::digest(&bytes).into(),
                    bytes,
                    layouts,
                    sent: OnceLock::new(),
                })
            })
            .as_ref()
            .map_err(|e| *e)
    }

    /// The backend's handle for this fat binary's module, loading it if needed. A module
    /// with `__managed__` variables gets each one in managed memory, which the backend
    /// initializes from the module and its kernels use in place; nvcc's host code finds it
    /// through the pointer this fills in. Where managed memory is not supported (TCP, a
    /// VM, the CUDA executor), such a module fails to load with `cudaErrorNotSupported`.
    pub fn module(&self, c: &Client) -> Result<u64> {
        let generation = c.generation();
        let mut g = self.module.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((gen_, h)) = *g
            && gen_ == generation
        {
            return Ok(h);
        }
        let mut failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((gen_, e)) = *failed
            && gen_ == generation
        {
            return Err(e);
        }
        let (bytes, hash) = self.image()?.sent(c);
        if !image_fits(bytes.len()) {
            let e = Error(vcuda_protocol::status::INVALID_KERNEL_IMAGE);
            *failed = Some((generation, e));
            return Err(e);
        }
        let mut req = ModuleLoadReq {
            hash,
            size: bytes.len() as u64,
            flags: MODULE_HAS_DATA,
            reserved: 0,
        };
        // The backend takes an offer by hash alone only for an image this process sent
        // before (a reload after `cudaDeviceReset`), so the first load sends the bytes.
        let mut resp = if g.is_some() {
            req.flags = 0;
            c.call::<ops::ModuleLoad>(&req)?
        } else {
            ModuleLoadResp {
                need_data: 1,
                ..Default::default()
            }
        };
        if resp.need_data != 0 {
            req.flags = MODULE_HAS_DATA;
            resp = c.call_with::<ops::ModuleLoad>(&req, &[], &[bytes], &mut [])?;
        }
        if let Err(e) = self.bind_managed(c, resp.handle) {
            log::error!(
                "cannot put this module's __managed__ variables in managed memory ({}); its \
                 kernels cannot run",
                e.0
            );
            let _ = c.internal(|| {
                c.call::<ops::ModuleUnload>(&HandleReq {
                    handle: resp.handle,
                })
            });
            *failed = Some((generation, e));
            return Err(e);
        }
        *g = Some((generation, resp.handle));
        Ok(resp.handle)
    }

    /// Moves the module's `__managed__` variables to their managed memory (allocated at the
    /// first load) and points the program's host code at it.
    fn bind_managed(&self, c: &Client, module: u64) -> Result<()> {
        if !crate::shared::maps_managed(c) {
            return self.adopt_managed(c, module);
        }
        let mut vars = self.managed.lock().unwrap_or_else(|e| e.into_inner());
        for v in vars.iter_mut() {
            let p = match v.addr {
                Some(p) => p,
                None => {
                    let p = crate::core::alloc::alloc_for_var(v.size)?;
                    v.addr = Some(p);
                    with(|r| r.managed.insert(p, v.size));
                    p
                }
            };
            bind_symbol(c, module, &v.name, p, v.size as u64)?;
            // SAFETY: nvcc passes the address of the variable's host pointer (a static in
            // the program's image) to __cudaRegisterManagedVar, which lives as long as the
            // registration; its host code reads the variable through it.
            unsafe { *(v.host_var_ptr as *mut u64) = p };
        }
        Ok(())
    }

    /// Where the backend cannot map the program's memory: the module's `__managed__`
    /// variables stay where the module put them, and the library keeps their pages coherent
    /// as managed memory at the same addresses ([`crate::coherent::adopt`]); the program's
    /// host code is pointed at them.
    fn adopt_managed(&self, c: &Client, module: u64) -> Result<()> {
        let mut vars = self.managed.lock().unwrap_or_else(|e| e.into_inner());
        if vars.is_empty() {
            return Ok(());
        }
        let mut found = Vec::with_capacity(vars.len());
        for v in vars.iter() {
            let (ptr, size) = symbol(c, module, &v.name)?;
            if size < v.size as u64 {
                return Err(Error::INVALID_VALUE);
            }
            found.push(ptr);
        }
        let spans: Vec<(u64, u64)> = vars
            .iter()
            .zip(&found)
            .map(|(v, &p)| (p, v.size as u64))
            .collect();
        adopt_in_place(c, &spans)?;
        for (v, &p) in vars.iter_mut().zip(&found) {
            if let Some(old) = v.addr.replace(p) {
                with(|r| r.managed.remove(&old));
            }
            with(|r| r.managed.insert(p, v.size));
            // SAFETY: as in `bind_managed`: nvcc's static holding the variable's address.
            unsafe { *(v.host_var_ptr as *mut u64) = p };
        }
        Ok(())
    }
}

/// A kernel as the backend knows it.
#[derive(Clone, Debug)]
pub struct LoadedFunc {
    /// Backend handle.
    pub handle: u64,
    /// `(offset, size)` of each parameter.
    pub params: Vec<(u32, u32)>,
    /// Bytes of the parameter buffer.
    pub param_size: u32,
    /// Attributes.
    pub attrs: FuncAttrs,
}

/// A registered kernel.
pub struct FuncReg {
    /// Its fat binary.
    pub fatbin: Arc<FatbinReg>,
    /// Mangled name.
    pub name: String,
    loaded: Mutex<Option<(u64, LoadedFunc)>>,
}

impl FuncReg {
    /// The kernel's backend handle and layout, looked up if needed.
    pub fn load(&self, c: &Client) -> Result<LoadedFunc> {
        let generation = c.generation();
        let mut g = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((gen_, f)) = &*g
            && *gen_ == generation
        {
            return Ok(f.clone());
        }
        let module = self.fatbin.module(c)?;
        let p = c.call_raw::<ops::FunctionGet>(
            &FunctionGetReq { module },
            self.name.as_bytes(),
            &[],
            &mut [],
        )?;
        let (resp, tail) = FunctionGetResp::read_from_prefix(&p).map_err(|_| Error::UNKNOWN)?;
        // The backend's layout is the one it unpacks the buffer with (the PTX's on the CPU
        // executor, the driver's on a GPU); the fat binary's cubin layout differs from the
        // PTX's for parameters aligned to more than 16 bytes (a `__grid_constant__`
        // `CUtensorMap` sits at offset 112 in an sm_90 cubin's, at 0 in the PTX's). The
        // cubin's serves where the backend cannot tell (a driver without
        // `cuFuncGetParamInfo`), as the driver then reads the buffer that way.
        let guest = || {
            self.fatbin
                .image()
                .ok()
                .and_then(|i| i.layouts.get(&self.name).cloned())
        };
        let (params, param_size) = match resp.n_params {
            PARAMS_UNKNOWN => match guest() {
                Some(l) => (
                    l.params.iter().map(|p| (p.offset, p.size)).collect(),
                    l.size,
                ),
                None => {
                    log::error!("no parameter layout for kernel {}", self.name);
                    return Err(Error::INVALID_DEVICE_FUNCTION);
                }
            },
            n => {
                let infos = <[ParamInfo]>::ref_from_bytes(tail).map_err(|_| Error::UNKNOWN)?;
                if infos.len() != n as usize {
                    return Err(Error::UNKNOWN);
                }
                (
                    infos.iter().map(|p| (p.offset, p.size)).collect(),
                    resp.param_size,
                )
            }
        };
        let f = LoadedFunc {
            handle: resp.handle,
            params,
            param_size,
            attrs: resp.attrs,
        };
        *g = Some((generation, f.clone()));
        Ok(f)
    }
}

/// A registered `__device__` or `__constant__` variable.
pub struct VarReg {
    /// Its fat binary.
    pub fatbin: Arc<FatbinReg>,
    /// Mangled name.
    pub name: String,
    addr: Mutex<Option<(u64, u64, u64)>>,
}

impl VarReg {
    /// `(device address, size)`, looked up if needed.
    pub fn resolve(&self, c: &Client) -> Result<(u64, u64)> {
        let generation = c.generation();
        let mut g = self.addr.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((gen_, a, s)) = *g
            && gen_ == generation
        {
            return Ok((a, s));
        }
        let module = self.fatbin.module(c)?;
        let (ptr, size) = symbol(c, module, &self.name)?;
        record_global(c, ptr, size);
        *g = Some((generation, ptr, size));
        Ok((ptr, size))
    }
}

#[derive(Default)]
struct Registry {
    funcs: HashMap<usize, Arc<FuncReg>>,
    vars: HashMap<usize, Arc<VarReg>>,
    /// The managed memory of `__managed__` variables: address -> size. nvcc's host code
    /// names such a variable by this address in the symbol calls.
    managed: HashMap<u64, usize>,
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

fn with<R>(f: impl FnOnce(&mut Registry) -> R) -> R {
    let mut g = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(Registry::default))
}

/// Registers a fat binary; the returned pointer is the handle the program passes back.
pub fn register_fatbin(wrapper: *mut c_void) -> *mut *mut c_void {
    let reg = Arc::new(FatbinReg {
        wrapper: wrapper as usize,
        image: OnceLock::new(),
        module: Mutex::new(None),
        managed: Mutex::new(Vec::new()),
        failed: Mutex::new(None),
    });
    // Leaked on purpose: the program may use the handle until exit, even after
    // __cudaUnregisterFatBinary.
    Arc::into_raw(reg) as *mut *mut c_void
}

/// The fat binary behind a handle from [`register_fatbin`].
///
/// # Safety
/// `handle` is null or a pointer [`register_fatbin`] returned.
pub unsafe fn fatbin(handle: *mut *mut c_void) -> Option<Arc<FatbinReg>> {
    if handle.is_null() {
        return None;
    }
    let p = handle as *const FatbinReg;
    // SAFETY: `p` came from Arc::into_raw and the Arc is never released, so it is alive;
    // taking one more strong count before from_raw keeps the leaked one intact.
    unsafe {
        Arc::increment_strong_count(p);
        Some(Arc::from_raw(p))
    }
}

/// Registers a kernel under its host stub's address.
pub fn register_function(fatbin: Arc<FatbinReg>, host_fun: usize, name: String) {
    with(|r| {
        r.funcs.insert(
            host_fun,
            Arc::new(FuncReg {
                fatbin,
                name,
                loaded: Mutex::new(None),
            }),
        )
    });
}

/// Registers a variable under its host shadow's address.
/// Registers a `__managed__` variable: `host_var_ptr` is where nvcc's host code reads its
/// address (see [`FatbinReg::module`]).
pub fn register_managed_var(fatbin: &FatbinReg, host_var_ptr: usize, name: String, size: usize) {
    fatbin
        .managed
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(ManagedVar {
            host_var_ptr,
            name,
            size,
            addr: None,
        });
}

/// Registers `__device__`/`__constant__` variable `name` of `fatbin` at `host_var`. Its size
/// is the module's, looked up when it is first used ([`VarReg::resolve`]); the size the
/// program registers is not needed.
pub fn register_var(fatbin: Arc<FatbinReg>, host_var: usize, name: String) {
    with(|r| {
        r.vars.insert(
            host_var,
            Arc::new(VarReg {
                fatbin,
                name,
                addr: Mutex::new(None),
            }),
        )
    });
}

/// The kernel registered for `host_fun`.
pub fn function(host_fun: usize) -> Option<Arc<FuncReg>> {
    with(|r| r.funcs.get(&host_fun).cloned())
}

/// The variable registered for `host_var`.
pub fn var(host_var: usize) -> Option<Arc<VarReg>> {
    with(|r| r.vars.get(&host_var).cloned())
}

/// The size of the `__managed__` variable whose managed memory starts at `addr`.
pub fn managed_var(addr: u64) -> Option<usize> {
    with(|r| r.managed.get(&addr).copied())
}
