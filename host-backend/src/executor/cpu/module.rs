// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Modules on the CPU executor: PTX taken from fat binaries, kernels and variables, and
//! launches through the PTX interpreter.
//!
//! A module's PTX is parsed once per backend (cached by the image's SHA-256) and shared by
//! sessions. Each session that loads it gets its own copy of the module's `.global` and
//! `.const` variables in its device memory, so `cudaMemcpyToSymbol` and kernels see the same
//! bytes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use log::{debug, warn};
use vcuda_protocol::{FuncAttrs, LaunchReq, ParamInfo};
use vcuda_ptx::{Cancel, DeviceMemory, GlobalId, KernelId, LaunchConfig, LaunchOptions, Region};

mod state;

pub use self::state::ModulesState;
use super::malloc::MallocHeap;
use super::memory::{AllocKind, DeviceHeap};
use crate::executor::{ExecResult, FunctionInfo, ModuleImage, Status, Tenant};

/// Parsed modules kept for reuse, at most this many, of at most this many bytes of images
/// (see [`MAX_PARSED_IMAGE_BYTES`] for what a parse takes).
const PTX_CACHE_ENTRIES: usize = 256;
const PTX_CACHE_IMAGE_BYTES: u64 = 64 << 20;
/// Most modules one session may have loaded at once. CuPy loads a module per kernel it
/// compiles and keeps them all: its own test suite holds thousands.
const MAX_MODULES: usize = 1 << 16;
/// Most bytes of module images one session may have loaded at once. Each loaded module keeps
/// its parse and its compiled kernels, which grow with its image: CuPy's core_tests, some
/// ten thousand modules (CUB's reductions 200 KiB of PTX each), grew the backend by about
/// 10 GB beyond device memory before 1 GiB was reached (2026-11-30).
const MAX_LOADED_IMAGE_BYTES: u64 = 256 << 20;
/// Most bytes of module images whose parses (and the kernels compiled from them) a session
/// keeps at once: past it, the parses of the modules used least lately are dropped and made
/// again at their next use. A parse takes about twelve times its image (a CUB module of
/// CuPy's, 21 MB of PTX, parsed into 242 MB; 2026-11-30), so this is some 800 MB of parses.
const MAX_PARSED_IMAGE_BYTES: u64 = 64 << 20;
/// Most function handles one session may hold.
const MAX_FUNCTIONS: usize = 1 << 16;
/// Default dynamic shared memory limit per block (what CUDA allows without opting in).
const DEFAULT_MAX_DYNAMIC_SHARED: u32 = 48 * 1024;
/// The most shared memory a block may opt in to (sm_90).
const MAX_SHARED_OPTIN: u32 = 227 * 1024;
/// `cudaFuncAttributeMaxDynamicSharedMemorySize`.
const ATTR_MAX_DYNAMIC_SHARED: u32 = 8;
/// `cudaFuncAttributePreferredSharedMemoryCarveout`.
const ATTR_CARVEOUT: u32 = 9;

type Parsed = Result<Arc<vcuda_ptx::Module>, Unloadable>;

/// Why an image does not load, and the status the driver gives for it: an image that is
/// not a fat binary is invalid (`cudaErrorInvalidKernelImage`), one without PTX has no
/// image this device runs (`cudaErrorNoKernelImageForDevice`), PTX that does not parse is
/// what the driver's JIT refuses (`cudaErrorInvalidPtx`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Unloadable {
    status: Status,
    why: String,
}

impl Unloadable {
    fn new(status: Status, why: impl Into<String>) -> Self {
        Self {
            status,
            why: why.into(),
        }
    }
}

impl std::fmt::Display for Unloadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.why)
    }
}

/// The parse of one image for one tenant, made once (see [`PtxCache`]), and the image's
/// length.
type Entries = HashMap<(Tenant, [u8; 32]), (Arc<OnceLock<Parsed>>, u64)>;

/// Parsed PTX modules (with the kernels compiled from them) shared by the sessions of one
/// tenant, keyed by tenant and image hash: another tenant's session parses and compiles an
/// image for itself, so its timing says nothing of what others ran.
///
/// The map's lock is held only to find or add an entry: the parse itself runs outside it,
/// once per image (later loads of an image being parsed wait for that parse, loads of other
/// images do not). Only modules that parsed are kept.
#[derive(Debug, Default)]
pub struct PtxCache {
    map: Mutex<Entries>,
}

impl PtxCache {
    fn get(&self, tenant: Tenant, image: &ModuleImage) -> Parsed {
        let key = (tenant, image.hash);
        let cell = {
            let mut g = self.lock();
            if let Some((c, _)) = g.get(&key) {
                c.clone()
            } else {
                let len = image.bytes.len() as u64;
                let cached: u64 = g.values().map(|(_, n)| n).sum();
                if g.len() >= PTX_CACHE_ENTRIES
                    || cached.saturating_add(len) > PTX_CACHE_IMAGE_BYTES
                {
                    // Parses in flight keep their own cell.
                    g.clear();
                }
                let c = Arc::new(OnceLock::new());
                g.insert(key, (c.clone(), len));
                c
            }
        };
        let parsed = cell.get_or_init(|| parse_image(&image.bytes)).clone();
        if parsed.is_err() {
            // A later load parses again (and fails again): no failed image is kept.
            let mut g = self.lock();
            if g.get(&key).is_some_and(|(c, _)| Arc::ptr_eq(c, &cell)) {
                g.remove(&key);
            }
        }
        parsed
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        // Every update is a single insert, remove or clear: a poisoned map is consistent.
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Number of parsed modules kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }
}

/// Finds the best PTX in a fat binary and parses it; several translation units (a
/// device-linked `-rdc` program, or a JIT link of several PTX inputs) are linked.
fn parse_image(bytes: &[u8]) -> Parsed {
    let fatbin = vcuda_fatbin::parse(bytes).map_err(|e| {
        Unloadable::new(
            Status::INVALID_KERNEL_IMAGE,
            format!("not a fat binary: {e}"),
        )
    })?;
    let units = fatbin
        .ptx_units(u32::MAX)
        .map_err(|e| Unloadable::new(Status::INVALID_PTX, format!("too much PTX to link: {e}")))?;
    if units.is_empty() {
        return Err(Unloadable::new(
            Status::NO_KERNEL_IMAGE,
            "the fat binary has no PTX; the CPU executor interprets PTX, so build with \
             -gencode arch=compute_XX,code=[sm_XX,compute_XX]",
        ));
    }
    let texts = units
        .iter()
        .map(|e| e.ptx_text())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Unloadable::new(Status::INVALID_PTX, format!("cannot read its PTX: {e}")))?;
    let invalid = |why: String| Unloadable::new(Status::INVALID_PTX, why);
    let m = if let [text] = texts.as_slice() {
        vcuda_ptx::Module::parse(text).map_err(|e| invalid(format!("cannot parse its PTX: {e}")))?
    } else {
        let texts: Vec<&str> = texts.iter().map(|t| t.as_ref()).collect();
        vcuda_ptx::Module::link(&texts)
            .map_err(|e| invalid(format!("cannot link its {} PTX units: {e}", texts.len())))?
    };
    debug!(
        "parsed PTX ({} units, sm_{}): {} kernels, {} globals",
        units.len(),
        units[0].arch,
        m.kernels().len(),
        m.globals().len()
    );
    Ok(Arc::new(m))
}

/// A module loaded in a session.
#[derive(Debug)]
struct Loaded {
    /// The image it was loaded from (kept for a saved session, see `state.rs`).
    image: Arc<ModuleImage>,
    /// Its parse, with the kernels compiled from it; `None` where it was dropped (see
    /// [`MAX_PARSED_IMAGE_BYTES`]) until the module is used again.
    ptx: Option<Arc<vcuda_ptx::Module>>,
    /// When it was last used (`Modules::clock`).
    used: u64,
    /// How many kernels it has (known without its parse).
    kernels: usize,
    /// Whether its kernels may call device-side `malloc` (known without its parse).
    malloc: bool,
    /// Device address of each global (0 for extern ones), indexed by `GlobalId`.
    addrs: Vec<u64>,
    /// The module's own storage of its globals (freed with it); differs from `addrs` for
    /// the variables `bind` moved.
    allocs: Vec<u64>,
}

/// A function handle.
#[derive(Debug, Clone, Copy)]
struct Function {
    module: u64,
    kernel: KernelId,
    max_dynamic_shared: u32,
    carveout: i32,
}

/// Collects device printf output.
struct Sink<'a>(&'a Mutex<Vec<u8>>);

impl vcuda_ptx::PrintfSink for Sink<'_> {
    fn print(&self, text: &[u8]) {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let room = crate::executor::MAX_STDOUT_BUFFER.saturating_sub(g.len());
        g.extend_from_slice(&text[..text.len().min(room)]);
    }
}

/// The session's device memory as the interpreter sees it.
struct HeapMemory<'a> {
    heap: &'a DeviceHeap,
    /// The session's texture and surface objects.
    textures: &'a HashMap<u64, vcuda_ptx::TexObject>,
    /// The memory checker: no padding after allocations.
    strict: bool,
    /// The device heap of device-side `malloc`.
    malloc: &'a Mutex<Option<MallocHeap>>,
}

// SAFETY: `resolve` returns live allocations of the heap, and `padding` the heap's padding
// buffer (atomics, so writes through a shared borrow are allowed), which the launch borrows
// shared for its whole duration: nothing can free or move them until `launch` returns, and
// the interpreter accesses them only through atomic-width accesses.
unsafe impl DeviceMemory for HeapMemory<'_> {
    fn region(&self, addr: u64) -> Option<Region> {
        let r = self.heap.resolve(addr);
        let r = match r {
            None if !self.strict => self.heap.padding(addr),
            r => r,
        };
        r.map(|r| Region {
            base: r.base,
            len: r.len,
            host: r.host,
        })
    }

    fn texture(&self, handle: u64) -> Option<vcuda_ptx::TexObject> {
        self.textures.get(&handle).copied()
    }

    fn malloc(&self, size: u64) -> Option<u64> {
        let mut h = self.malloc.lock().unwrap_or_else(|e| e.into_inner());
        h.as_mut()?.alloc(size)
    }

    fn free(&self, addr: u64) {
        let mut h = self.malloc.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(h) = h.as_mut() {
            h.free(addr);
        }
    }
}

/// A session's loaded modules and function handles.
#[derive(Debug)]
pub struct Modules {
    cache: Arc<PtxCache>,
    /// Whose parsed modules this session shares (see [`PtxCache`]).
    tenant: Tenant,
    threads: usize,
    loaded: HashMap<u64, Loaded>,
    /// Bytes of the images of `loaded`.
    loaded_bytes: u64,
    /// Bytes of the images of `loaded` whose parses are kept, at most `parsed_budget`.
    parsed_bytes: u64,
    parsed_budget: u64,
    /// Counts module uses (see `Loaded::used`).
    clock: u64,
    functions: HashMap<u64, Function>,
    by_kernel: HashMap<(u64, u32), u64>,
    stdout: Mutex<Vec<u8>>,
    /// Instruction budget of one launch (a last resort against runaway kernels).
    pub instruction_limit: Option<u64>,
    /// Wall-time budget of one launch (`--kernel-timeout`).
    pub time_limit: Option<Duration>,
    /// The session's cancellation token (see [`crate::executor::DeviceOps::set_cancel`]).
    pub cancel: Option<Cancel>,
    /// Run kernels compiled to native code (`VCUDA_CPU_JIT=0` interprets them all).
    jit: bool,
    /// The memory checker (`--memcheck`).
    memcheck: bool,
    /// The device heap of device-side `malloc`, once a kernel that may call it launched.
    malloc: Mutex<Option<MallocHeap>>,
}

impl Modules {
    /// No modules yet.
    pub fn new(
        cache: Arc<PtxCache>,
        tenant: Tenant,
        threads: usize,
        time_limit: Option<Duration>,
        memcheck: bool,
    ) -> Self {
        Self {
            cache,
            tenant,
            threads,
            loaded: HashMap::new(),
            loaded_bytes: 0,
            parsed_bytes: 0,
            parsed_budget: MAX_PARSED_IMAGE_BYTES,
            clock: 0,
            functions: HashMap::new(),
            by_kernel: HashMap::new(),
            stdout: Mutex::new(Vec::new()),
            instruction_limit: Some(1 << 40),
            time_limit,
            cancel: None,
            jit: std::env::var("VCUDA_CPU_JIT").map_or(true, |v| v != "0"),
            memcheck,
            malloc: Mutex::new(None),
        }
    }

    /// Whether function `function` is of a module that may call device-side `malloc`, and
    /// the session has no device heap yet.
    pub fn needs_malloc_heap(&self, function: u64) -> bool {
        let uses = self
            .functions
            .get(&function)
            .and_then(|f| self.loaded.get(&f.module))
            .is_some_and(|m| m.malloc);
        uses && self.malloc.lock().is_ok_and(|h| h.is_none())
    }

    /// Takes `size` bytes of device memory at `base` as the device heap.
    pub fn set_malloc_heap(&mut self, base: u64, size: u64) {
        *self.malloc.get_mut().unwrap_or_else(|e| e.into_inner()) =
            Some(MallocHeap::new(base, size));
    }

    /// Forgets the device heap (its memory went with the device's).
    pub fn drop_malloc_heap(&mut self) {
        *self.malloc.get_mut().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Unloads everything (device reset).
    pub fn clear(&mut self, heap: &mut DeviceHeap) {
        let handles: Vec<u64> = self.loaded.keys().copied().collect();
        for h in handles {
            let _ = self.unload(h, heap);
        }
    }

    /// Loads `image` as module `handle`.
    pub fn load(
        &mut self,
        handle: u64,
        image: &Arc<ModuleImage>,
        heap: &mut DeviceHeap,
    ) -> ExecResult<()> {
        let bytes = image.bytes.len() as u64;
        if self.loaded.len() >= MAX_MODULES
            || self.loaded_bytes.saturating_add(bytes) > MAX_LOADED_IMAGE_BYTES
        {
            warn!(
                "a module does not load: the session has {} modules of {} bytes loaded \
                 (at most {MAX_MODULES}, {MAX_LOADED_IMAGE_BYTES} bytes)",
                self.loaded.len(),
                self.loaded_bytes
            );
            return Err(Status::MEMORY_ALLOCATION);
        }
        if image.bytes.starts_with(b"\x7fELF") {
            warn!(
                "a module does not load: it is a bare cubin (machine code for one GPU \
                 architecture, no PTX), and the CPU executor runs PTX"
            );
            return Err(Status::NO_KERNEL_IMAGE);
        }
        let ptx = self.cache.get(self.tenant, image).map_err(|e| {
            warn!("cannot load a module: {e}");
            e.status
        })?;
        let globals = ptx.globals();
        let mut addrs = vec![0u64; globals.len()];
        for (i, g) in globals.iter().enumerate() {
            if g.is_extern {
                continue;
            }
            match heap.alloc(g.size.max(1), AllocKind::Symbol) {
                Ok(a) => addrs[i] = a,
                Err(e) => {
                    for &a in addrs.iter().filter(|&&a| a != 0) {
                        let _ = heap.free(a, AllocKind::Symbol);
                    }
                    return Err(e);
                }
            }
        }
        for (i, g) in globals.iter().enumerate() {
            if addrs[i] == 0 {
                continue;
            }
            let bytes =
                g.initial_bytes(&|id: GlobalId| addrs.get(id.0 as usize).copied().unwrap_or(0));
            let n = bytes.len().min(g.size as usize) as u64;
            heap.bytes_mut(addrs[i], n)?
                .copy_from_slice(&bytes[..n as usize]);
        }
        let allocs = addrs.clone();
        self.loaded_bytes += bytes;
        self.insert_loaded(handle, image.clone(), ptx, addrs, allocs);
        Ok(())
    }

    /// Records module `handle`, loaded from `image` (parsed as `ptx`), as just used.
    fn insert_loaded(
        &mut self,
        handle: u64,
        image: Arc<ModuleImage>,
        ptx: Arc<vcuda_ptx::Module>,
        addrs: Vec<u64>,
        allocs: Vec<u64>,
    ) {
        self.clock += 1;
        self.parsed_bytes += image.bytes.len() as u64;
        self.loaded.insert(
            handle,
            Loaded {
                image,
                kernels: ptx.kernels().len(),
                malloc: ptx.uses_device_malloc(),
                ptx: Some(ptx),
                used: self.clock,
                addrs,
                allocs,
            },
        );
        self.trim_parses(handle);
    }

    /// Module `module`'s parse, made again if it was dropped; the module counts as used.
    fn parse_of(&mut self, module: u64) -> ExecResult<Arc<vcuda_ptx::Module>> {
        self.clock += 1;
        let m = self.loaded.get_mut(&module).ok_or(Status::INVALID_HANDLE)?;
        m.used = self.clock;
        if let Some(p) = &m.ptx {
            return Ok(p.clone());
        }
        let p = self.cache.get(self.tenant, &m.image).map_err(|e| {
            warn!("cannot parse a loaded module again: {e}");
            e.status
        })?;
        debug!("module {module:#x} parsed again");
        m.ptx = Some(p.clone());
        self.parsed_bytes += m.image.bytes.len() as u64;
        self.trim_parses(module);
        Ok(p)
    }

    /// Drops the parses of the modules used least lately (not `keep`'s) until the kept ones
    /// are within the budget.
    fn trim_parses(&mut self, keep: u64) {
        while self.parsed_bytes > self.parsed_budget {
            let oldest = self
                .loaded
                .iter()
                .filter(|&(&h, m)| h != keep && m.ptx.is_some())
                .min_by_key(|(_, m)| m.used)
                .map(|(&h, _)| h);
            let Some(m) = oldest.and_then(|h| self.loaded.get_mut(&h)) else {
                return;
            };
            m.ptx = None;
            self.parsed_bytes = self.parsed_bytes.saturating_sub(m.image.bytes.len() as u64);
        }
    }

    /// Unloads a module and frees its variables.
    pub fn unload(&mut self, module: u64, heap: &mut DeviceHeap) -> ExecResult<()> {
        let m = self.loaded.remove(&module).ok_or(Status::INVALID_HANDLE)?;
        self.loaded_bytes = self.loaded_bytes.saturating_sub(m.image.bytes.len() as u64);
        if m.ptx.is_some() {
            self.parsed_bytes = self.parsed_bytes.saturating_sub(m.image.bytes.len() as u64);
        }
        for a in m.allocs.into_iter().filter(|&a| a != 0) {
            let _ = heap.free(a, AllocKind::Symbol);
        }
        self.functions.retain(|_, f| f.module != module);
        self.by_kernel.retain(|(m, _), _| *m != module);
        Ok(())
    }

    /// Looks a kernel up; `handle` is used if it is new.
    /// How many kernels a module has, and the name of the one at `index` (source order).
    pub fn kernel_name(&self, module: u64, index: u32) -> ExecResult<(u32, Option<String>)> {
        let m = self.loaded.get(&module).ok_or(Status::INVALID_HANDLE)?;
        // A dropped parse is made again for this look-up only (the cache may hold it).
        let ptx = match &m.ptx {
            Some(p) => p.clone(),
            None => self
                .cache
                .get(self.tenant, &m.image)
                .map_err(|e| e.status)?,
        };
        let k = ptx.kernels();
        let count = u32::try_from(k.len()).map_err(|_| Status::NOT_SUPPORTED)?;
        Ok((count, k.get(index as usize).map(|k| k.name.clone())))
    }

    pub fn function(&mut self, module: u64, name: &str, handle: u64) -> ExecResult<FunctionInfo> {
        let ptx = self.parse_of(module)?;
        let kid = ptx.kernel(name).ok_or(Status::INVALID_DEVICE_FUNCTION)?;
        let k = ptx
            .kernel_info(kid)
            .ok_or(Status::INVALID_DEVICE_FUNCTION)?;
        let handle = match self.by_kernel.get(&(module, kid.0)) {
            Some(&h) => h,
            None => {
                if self.functions.len() >= MAX_FUNCTIONS {
                    return Err(Status::MEMORY_ALLOCATION);
                }
                let f = Function {
                    module,
                    kernel: kid,
                    max_dynamic_shared: DEFAULT_MAX_DYNAMIC_SHARED.saturating_sub(k.static_shared),
                    carveout: -1,
                };
                self.functions.insert(handle, f);
                self.by_kernel.insert((module, kid.0), handle);
                handle
            }
        };
        let f = self.functions[&handle];
        let max_threads = k
            .reqntid
            .or(k.maxntid)
            .map_or(1024, |d| d.iter().product::<u32>().min(1024));
        // CU_FUNC_ATTRIBUTE_PTX_VERSION is the virtual architecture the PTX targets
        // (`.target sm_120` -> 120), not the PTX ISA version; libraries such as CUB pick
        // their tuning (and whether they can run at all) from it.
        let version = ptx_arch(ptx.target()).unwrap_or(90);
        Ok(FunctionInfo {
            handle,
            attrs: FuncAttrs {
                shared_size_bytes: u64::from(k.static_shared),
                const_size_bytes: ptx.const_bytes(),
                local_size_bytes: u64::from(k.local_bytes),
                max_threads_per_block: max_threads as i32,
                // What the PTX declares, within its .maxnreg: the CPU executor has no
                // register file, and this is the figure occupancy math should see.
                num_regs: ptx.kernel_registers(kid).map_or(32, |r| r as i32),
                ptx_version: version,
                binary_version: 90,
                cache_mode_ca: 0,
                max_dynamic_shared_size_bytes: f.max_dynamic_shared as i32,
                preferred_shmem_carveout: f.carveout,
                required_cluster: match k.reqnctapercluster {
                    Some(d) => [
                        d[0].min(255) as u8,
                        d[1].min(255) as u8,
                        d[2].min(255) as u8,
                        u8::from(k.explicit_cluster),
                    ],
                    None => [0, 0, 0, u8::from(k.explicit_cluster)],
                },
                reserved: [0; 2],
            },
            params: Some(
                k.params
                    .iter()
                    .map(|p| ParamInfo {
                        offset: p.offset,
                        size: p.size,
                    })
                    .collect(),
            ),
            param_size: k.param_size,
        })
    }

    /// A kernel's compile-time cluster shape (`.reqnctapercluster`) and most blocks in a
    /// cluster (`.maxclusterrank`), where it has them.
    pub fn cluster_limits(&mut self, function: u64) -> ExecResult<(Option<[u32; 3]>, Option<u32>)> {
        let f = *self
            .functions
            .get(&function)
            .ok_or(Status::INVALID_DEVICE_FUNCTION)?;
        let ptx = self.parse_of(f.module)?;
        let k = ptx
            .kernel_info(f.kernel)
            .ok_or(Status::INVALID_DEVICE_FUNCTION)?;
        Ok((k.reqnctapercluster, k.maxclusterrank))
    }

    /// A module variable's address and size.
    pub fn symbol(&mut self, module: u64, name: &str) -> ExecResult<(u64, u64)> {
        let ptx = self.parse_of(module)?;
        let m = self.loaded.get(&module).ok_or(Status::INVALID_HANDLE)?;
        let id = ptx.global(name).ok_or(Status::INVALID_SYMBOL)?;
        let g = &ptx.globals()[id.0 as usize];
        match m.addrs.get(id.0 as usize) {
            Some(&a) if a != 0 => Ok((a, g.size)),
            _ => Err(Status::INVALID_SYMBOL),
        }
    }

    /// Moves a module variable to `addr` (see `ModuleOps::symbol_bind`). The new home must be
    /// a mapped host range (`DeviceHeap::map_host`), not device memory the module or the
    /// program could free; the variable's storage in the module stays allocated, unused.
    pub fn bind(
        &mut self,
        module: u64,
        name: &str,
        addr: u64,
        size: u64,
        heap: &mut DeviceHeap,
    ) -> ExecResult<()> {
        let ptx = self.parse_of(module)?;
        let m = self.loaded.get_mut(&module).ok_or(Status::INVALID_HANDLE)?;
        let id = ptx.global(name).ok_or(Status::INVALID_SYMBOL)?;
        let g = &ptx.globals()[id.0 as usize];
        let old = match m.addrs.get(id.0 as usize) {
            Some(&a) if a != 0 => a,
            _ => return Err(Status::INVALID_SYMBOL),
        };
        // Only `__managed__` variables move, and only to the session's own mapped memory.
        if !g.managed || size != g.size || !heap.is_mapped_host(addr, size) {
            return Err(Status::INVALID_VALUE);
        }
        if old != addr {
            heap.copy(addr, old, size)?;
            m.addrs[id.0 as usize] = addr;
        }
        Ok(())
    }

    /// `cudaFuncSetAttribute`.
    pub fn set_attribute(&mut self, function: u64, attr: u32, value: i32) -> ExecResult<()> {
        let f = self
            .functions
            .get_mut(&function)
            .ok_or(Status::INVALID_DEVICE_FUNCTION)?;
        match attr {
            ATTR_MAX_DYNAMIC_SHARED => {
                let v = u32::try_from(value).map_err(|_| Status::INVALID_VALUE)?;
                if v > MAX_SHARED_OPTIN {
                    return Err(Status::INVALID_VALUE);
                }
                f.max_dynamic_shared = v;
            }
            ATTR_CARVEOUT => {
                if !(-1..=100).contains(&value) {
                    return Err(Status::INVALID_VALUE);
                }
                f.carveout = value;
            }
            _ => return Err(Status::INVALID_VALUE),
        }
        Ok(())
    }

    /// Runs a kernel to completion; a non-zero `grid_workspace` makes it a cooperative
    /// launch (every block at once) with that workspace, a `cluster` shape other than zeros
    /// a launch in clusters of that shape.
    pub fn launch(
        &mut self,
        req: &LaunchReq,
        params: &[u8],
        heap: &DeviceHeap,
        textures: &HashMap<u64, vcuda_ptx::TexObject>,
        (grid_workspace, cluster): (u64, [u32; 3]),
    ) -> ExecResult<()> {
        let f = *self
            .functions
            .get(&req.function)
            .ok_or(Status::INVALID_DEVICE_FUNCTION)?;
        let ptx = self
            .parse_of(f.module)
            .map_err(|_| Status::INVALID_DEVICE_FUNCTION)?;
        let m = self
            .loaded
            .get(&f.module)
            .ok_or(Status::INVALID_DEVICE_FUNCTION)?;
        let k = ptx
            .kernel_info(f.kernel)
            .ok_or(Status::INVALID_DEVICE_FUNCTION)?;
        if params.len() != k.param_size as usize {
            debug!(
                "{}: {} parameter bytes, the kernel takes {}",
                k.name,
                params.len(),
                k.param_size
            );
            return Err(Status::INVALID_VALUE);
        }
        let threads = req
            .block
            .iter()
            .fold(1u64, |a, &b| a.saturating_mul(u64::from(b)));
        if req.grid.contains(&0) || req.block.contains(&0) || threads > 1024 || req.block[2] > 64 {
            return Err(Status::INVALID_CONFIGURATION);
        }
        if req.grid[1] > 65535 || req.grid[2] > 65535 || req.grid[0] > i32::MAX as u32 {
            return Err(Status::INVALID_CONFIGURATION);
        }
        if req.shared_mem > f.max_dynamic_shared {
            return Err(Status::INVALID_VALUE);
        }
        let cfg = LaunchConfig {
            grid: req.grid,
            block: req.block,
            dynamic_shared: req.shared_mem,
            grid_workspace,
            cluster,
        };
        let opts = LaunchOptions {
            threads: self.threads,
            instruction_limit: self.instruction_limit,
            time_limit: self.time_limit,
            cancel: self.cancel.clone(),
            num_sms: self.threads.clamp(1, 1024) as u32,
            jit: self.jit,
            compile_memory: Some(heap.compile_memory()),
            ..LaunchOptions::default()
        };
        let addrs = &m.addrs;
        let r = vcuda_ptx::launch(
            &ptx,
            f.kernel,
            &cfg,
            params,
            &|g: GlobalId| addrs.get(g.0 as usize).copied().unwrap_or(0),
            &HeapMemory {
                heap,
                textures,
                strict: self.memcheck,
                malloc: &self.malloc,
            },
            &Sink(&self.stdout),
            &opts,
        );
        match r {
            Ok(stats) => {
                debug!(
                    "{}: {} blocks, {} thread-instructions in {:?}",
                    k.name, stats.blocks, stats.thread_instructions, stats.elapsed
                );
                Ok(())
            }
            Err(e) => {
                if let vcuda_ptx::KernelError::Assert { message } = &e {
                    Sink(&self.stdout)
                        .0
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .extend_from_slice(format!("{message}\n").as_bytes());
                }
                if matches!(e, vcuda_ptx::KernelError::Cancelled) {
                    debug!("kernel {} stopped: its session ended", k.name);
                } else if let vcuda_ptx::KernelError::IllegalAddress { addr, .. } = &e
                    && let Some((base, len)) = heap.nearest(*addr)
                {
                    let (dir, by) = if *addr < base {
                        ("before", base - addr)
                    } else {
                        ("after the end of", addr.saturating_sub(base + len))
                    };
                    warn!(
                        "kernel {} failed: {e}; the nearest allocation is {base:#x} ({len} \
                         bytes), {by} bytes {dir} it",
                        k.name
                    );
                } else {
                    warn!("kernel {} failed: {e}", k.name);
                }
                Err(Status(e.cuda_status()))
            }
        }
    }

    /// Device printf output so far.
    pub fn take_stdout(&mut self) -> Vec<u8> {
        std::mem::take(self.stdout.get_mut().unwrap_or_else(|e| e.into_inner()))
    }
}

/// The architecture a PTX module's `.target` names (`sm_90a` -> 90), times 10 as CUDA
/// reports compute capabilities in function attributes.
fn ptx_arch(target: &[String]) -> Option<i32> {
    target.iter().find_map(|t| {
        let digits: String = t
            .strip_prefix("sm_")?
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::executor::testing::ptx_fatbin;

    fn kernels(n: usize) -> String {
        let mut s = String::from(".version 7.0\n.target sm_50\n.address_size 64\n");
        for i in 0..n {
            s += &format!(
                ".visible .entry k{i}(.param .u64 p)\n{{\n.reg .b64 %rd<3>;\n\
                 ld.param.u64 %rd1, [p];\nadd.s64 %rd2, %rd1, {i};\nret;\n}}\n"
            );
        }
        s
    }

    #[test]
    fn parsed_modules_are_shared_and_failed_ones_not_kept() {
        let cache = PtxCache::default();
        let me = Tenant::unique();
        let good = ptx_fatbin(&kernels(2));
        let a = cache.get(me, &good).unwrap();
        let b = cache.get(me, &good).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(cache.len(), 1);
        let bad = ptx_fatbin(".version 7.0\n.target sm_50\nnot ptx at all");
        let err = cache.get(me, &bad).unwrap_err();
        assert!(err.why.contains("cannot parse its PTX"), "{err}");
        assert_eq!(cache.len(), 1);
    }

    /// The status of an image that does not load is the driver's: invalid PTX
    /// (`cudaErrorInvalidPtx`, what an H100 gives for this module, see the CUDA executor's
    /// `a_module_that_does_not_compile_fails_to_load`), an image that is no fat binary
    /// (`cudaErrorInvalidKernelImage`).
    #[test]
    fn an_image_that_does_not_load_fails_with_the_drivers_status() {
        let cache = PtxCache::default();
        let me = Tenant::unique();
        let bad = ptx_fatbin(".version 7.0\n.target sm_50\n.address_size 64\ndoes_not_compile\n");
        assert_eq!(cache.get(me, &bad).unwrap_err().status, Status::INVALID_PTX);
        let junk = ModuleImage {
            hash: [7; 32],
            bytes: vec![0x55; 64],
        };
        assert_eq!(
            cache.get(me, &junk).unwrap_err().status,
            Status::INVALID_KERNEL_IMAGE
        );
    }

    #[test]
    fn another_tenant_parses_and_compiles_for_itself() {
        // Issue 38, finding 6: a tenant could tell from a fast load that another ran the
        // same program. The same image is one parse per tenant, shared only within it.
        let cache = PtxCache::default();
        let (me, other) = (Tenant::uid(1000), Tenant::uid(1001));
        let image = ptx_fatbin(&kernels(2));
        let mine = cache.get(me, &image).unwrap();
        let theirs = cache.get(other, &image).unwrap();
        assert!(!Arc::ptr_eq(&mine, &theirs), "shared across tenants");
        assert!(Arc::ptr_eq(
            &mine,
            &cache.get(Tenant::uid(1000), &image).unwrap()
        ));
        assert_eq!(cache.len(), 2);
    }

    /// A `__managed__` variable moves only to mapped host memory of its exact size, taking
    /// its initial value along.
    #[test]
    fn module_variables_bind_only_to_mapped_host_memory() {
        use super::super::memory::{DeviceHeap, MemoryBudget};
        let ptx = ".version 7.0\n.target sm_50\n.address_size 64\n\
                   .global .attribute(.managed) .align 4 .u32 counter = 5;\n\
                   .visible .global .align 4 .u32 plain = 6;\n";
        let mut heap = DeviceHeap::new(MemoryBudget::new(1 << 20), u64::MAX);
        heap.set_range(0x7f00_0000_0000, 1 << 30);
        let mut m = Modules::new(Arc::default(), Tenant::unique(), 1, None, false);
        m.load(1, &ptx_fatbin(ptx), &mut heap).unwrap();
        let (old, size) = m.symbol(1, "counter").unwrap();
        assert_eq!(size, 4);
        let dev = heap.alloc(4, AllocKind::User).unwrap();
        assert_eq!(
            m.bind(1, "counter", dev, 4, &mut heap),
            Err(Status::INVALID_VALUE)
        );
        let mut host = vec![0u32; 2];
        // A fixed device address, clear of the windows and the heap's range wherever the
        // allocator put `host`.
        let addr = 0x5000_0000_0000u64;
        // SAFETY: `host` outlives the heap's use of it (unmapped below).
        unsafe { heap.map_host(addr, host.as_mut_ptr().cast(), 8) }.unwrap();
        assert_eq!(
            m.bind(1, "counter", addr, 8, &mut heap),
            Err(Status::INVALID_VALUE)
        );
        assert_eq!(
            m.bind(1, "nope", addr, 4, &mut heap),
            Err(Status::INVALID_SYMBOL)
        );
        // A variable that is not `__managed__` stays where it is.
        assert_eq!(
            m.bind(1, "plain", addr, 4, &mut heap),
            Err(Status::INVALID_VALUE)
        );
        m.bind(1, "counter", addr, 4, &mut heap).unwrap();
        assert_eq!(m.symbol(1, "counter").unwrap(), (addr, 4));
        assert_ne!(old, addr);
        heap.unmap_host(addr).unwrap();
        assert_eq!(host[0], 5);
    }

    /// A large module parsing in one session does not hold up another session's load.
    #[test]
    fn parses_do_not_wait_for_each_other() {
        let cache = Arc::new(PtxCache::default());
        let big = ptx_fatbin(&kernels(20_000));
        let small = ptx_fatbin(&kernels(1));
        let start = Instant::now();
        let c = cache.clone();
        let t = std::thread::spawn(move || {
            c.get(Tenant::uid(0), &big).unwrap();
            start.elapsed()
        });
        std::thread::sleep(Duration::from_millis(20));
        cache.get(Tenant::uid(0), &small).unwrap();
        let small_done = start.elapsed();
        let big_done = t.join().unwrap();
        assert!(
            small_done < big_done,
            "the small module waited for the big one: {small_done:?} vs {big_done:?}"
        );
    }

    /// Past the session's budget of parsed images, the parse of the module used least lately
    /// is dropped (memory CuPy's thousands of modules grew without bound) and made again,
    /// the same, when that module is used.
    #[test]
    fn parses_past_the_budget_are_dropped_and_made_again() {
        use super::super::memory::{DeviceHeap, MemoryBudget};
        let mut heap = DeviceHeap::new(MemoryBudget::new(1 << 20), u64::MAX);
        heap.set_range(0x7f00_0000_0000, 1 << 30);
        // No cache shared with the loads: a dropped parse is gone until parsed again.
        let mut m = Modules::new(Arc::default(), Tenant::unique(), 1, None, false);
        let images: Vec<_> = (1..=3).map(|n| ptx_fatbin(&kernels(n))).collect();
        m.parsed_budget = (images[0].bytes.len() + images[2].bytes.len()) as u64;
        m.load(1, &images[0], &mut heap).unwrap();
        m.load(2, &images[1], &mut heap).unwrap();
        m.function(1, "k0", 0x100).unwrap();
        // Module 2 is the one used least lately now.
        m.load(3, &images[2], &mut heap).unwrap();
        let kept = |m: &Modules| {
            let mut v: Vec<u64> = m
                .loaded
                .iter()
                .filter(|(_, l)| l.ptx.is_some())
                .map(|(&h, _)| h)
                .collect();
            v.sort();
            v
        };
        assert_eq!(kept(&m), [1, 3]);
        assert!(m.parsed_bytes <= m.parsed_budget);
        // Still fully usable: looked up (without keeping the parse), then parsed again.
        assert_eq!(m.kernel_name(2, 1).unwrap(), (2, Some("k1".into())));
        assert_eq!(kept(&m), [1, 3]);
        let f = m.function(2, "k1", 0x200).unwrap();
        assert_eq!(f.handle, 0x200);
        assert!(m.loaded[&2].ptx.is_some());
        assert!(m.parsed_bytes <= m.parsed_budget);
        assert!(kept(&m).contains(&2));
        // Unloading gives the parse's bytes back.
        m.unload(2, &mut heap).unwrap();
        m.unload(1, &mut heap).unwrap();
        m.unload(3, &mut heap).unwrap();
        assert_eq!(m.parsed_bytes, 0);
    }

    #[test]
    fn ptx_version_is_the_target_architecture() {
        let t = |v: &[&str]| ptx_arch(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(t(&["sm_90"]), Some(90));
        assert_eq!(t(&["sm_90a", "texmode_independent"]), Some(90));
        assert_eq!(t(&["sm_120"]), Some(120));
        assert_eq!(t(&["debug"]), None);
    }
}
