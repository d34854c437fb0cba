// SPDX-License-Identifier: Apache-2.0 OR MIT
//! What a decoded module is: [`Module`] and its public metadata ([`KernelInfo`],
//! [`GlobalInfo`], relocations), the symbols and functions the engines read, the generic
//! address windows, and the limits lowering keeps against hostile input.

use std::{
    any::Any,
    collections::HashMap,
    sync::{Arc, Mutex},
};

use crate::ir::*;

/// Base of the generic-address window for shared memory (4 GiB, one per block).
pub const SHARED_WINDOW: u64 = 0x0000_1000_0000_0000;
/// Base of the generic-address window for local memory (4 GiB, one per thread).
pub const LOCAL_WINDOW: u64 = 0x0000_2000_0000_0000;
/// Base of the generic-address window for kernel parameters (read only).
pub const PARAM_WINDOW: u64 = 0x0000_3000_0000_0000;
/// Base of the window for function addresses (`mov.u64 %rd, func`); not dereferenceable.
pub const FUNC_WINDOW: u64 = 0x0000_4000_0000_0000;
/// Size of each window.
pub const WINDOW_SIZE: u64 = 1 << 32;

/// Limit on decoded instructions and registers, against hostile input.
pub(super) const MAX_CODE: usize = 1 << 24;
/// Limit on registers per function.
pub(super) const MAX_REGS: u32 = 1 << 18;
/// Limit on any single variable or frame size.
pub(super) const MAX_VAR_BYTES: u64 = 1 << 32;

/// Index of a kernel in [`Module::kernels`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KernelId(pub u32);

/// Index of a module variable in [`Module::globals`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GlobalId(pub u32);

/// One kernel parameter as laid out in the parameter buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamInfo {
    pub offset: u32,
    pub size: u32,
    pub align: u32,
}

/// A `.entry` function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelInfo {
    /// The (mangled) name.
    pub name: String,
    pub params: Vec<ParamInfo>,
    /// Bytes of the parameter buffer: end of the last parameter, not rounded up.
    pub param_size: u32,
    /// Static shared memory per block, including module-scope `.shared` variables it uses.
    pub static_shared: u32,
    /// Local memory per thread for the kernel's own frame plus the deepest non-recursive call
    /// chain.
    pub local_bytes: u32,
    pub reqntid: Option<[u32; 3]>,
    pub maxntid: Option<[u32; 3]>,
    pub minnctapersm: Option<u32>,
    pub maxnreg: Option<u32>,
    /// `.reqnctapercluster`: the cluster shape every launch of the kernel has (`__cluster_dims__`).
    pub reqnctapercluster: Option<[u32; 3]>,
    /// `.explicitcluster`: launches need a cluster shape (from the kernel or the launch).
    pub explicit_cluster: bool,
    /// `.maxclusterrank`: most blocks in one of the kernel's clusters.
    pub maxclusterrank: Option<u32>,
    pub(crate) func: u32,
    pub(crate) shared_base: u32,
    pub(crate) dyn_align: u32,
    /// The module-scope shared variables the kernel and its callees use: (symbol index,
    /// offset in the kernel's shared memory), by symbol index. Each kernel lays out only
    /// its own, as ptxas does: a module of many kernels does not add up their buffers.
    pub(crate) module_shared: Vec<(u32, u32)>,
}

impl KernelInfo {
    /// Where module-scope shared variable `sym` lies in this kernel's shared memory (0 for
    /// one the kernel does not use).
    pub(crate) fn module_shared_offset(&self, sym: u32) -> u64 {
        self.module_shared
            .binary_search_by_key(&sym, |&(s, _)| s)
            .map_or(0, |i| u64::from(self.module_shared[i].1))
    }
}

/// State space of a module variable the executor owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GlobalSpace {
    Global,
    Const,
}

/// What a relocation in an initializer points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RelocTarget {
    Global(GlobalId),
    /// A function; its address is `FUNC_WINDOW + index` (not dereferenceable).
    Function(u32),
}

/// An address stored in an initializer: `size` bytes at `offset` get the target's address plus
/// `addend`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reloc {
    pub offset: u64,
    pub size: u32,
    pub target: RelocTarget,
    pub addend: i64,
}

/// A module-scope `.global` or `.const` variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalInfo {
    pub name: String,
    pub space: GlobalSpace,
    pub size: u64,
    pub align: u32,
    /// The initialized prefix of the variable (at most `size` bytes; zeros where a relocation
    /// goes). Bytes from `init.len()` to `size` are zero: a large uninitialized array costs
    /// nothing here.
    pub init: Vec<u8>,
    /// Addresses to patch into `init` (see [`GlobalInfo::initial_bytes`]).
    pub relocs: Vec<Reloc>,
    /// Declared `.extern` (defined elsewhere; never in a whole-program module).
    pub is_extern: bool,
    pub visible: bool,
    /// Declared `.attribute(.managed)` (a `__managed__` variable).
    pub managed: bool,
}

impl GlobalInfo {
    /// The initialized prefix with relocations applied (the rest of the variable is zero).
    pub fn initial_bytes(&self, global_addr: &dyn Fn(GlobalId) -> u64) -> Vec<u8> {
        let mut b = self.init.clone();
        for r in &self.relocs {
            let base = match r.target {
                RelocTarget::Global(g) => global_addr(g),
                RelocTarget::Function(f) => FUNC_WINDOW + f as u64,
            };
            let v = base.wrapping_add(r.addend as u64).to_le_bytes();
            let (o, n) = (r.offset as usize, r.size as usize);
            if let Some(dst) = b.get_mut(o..o.saturating_add(n)) {
                dst.copy_from_slice(&v[..n.min(8)]);
            }
        }
        b
    }
}

/// What a symbol operand (`Src::Sym`) resolves to at launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sym {
    Global(GlobalId),
    /// A module-scope shared variable (or a device function's `.shared` one): each kernel
    /// that uses it lays it out in its own shared memory ([`KernelInfo`]'s table).
    SharedModule,
    /// Offset after the kernel's shared base.
    SharedKernel(u32),
    SharedDynamic,
    Func(u32),
}

#[derive(Debug, Clone)]
pub(crate) struct Func {
    pub name: String,
    pub entry: u32,
    pub nregs: u32,
    /// Registers its `.reg` declarations name.
    pub declared_regs: u32,
    pub frame_size: u32,
    pub is_kernel: bool,
    pub defined: bool,
    pub intrinsic: Option<Intrinsic>,
    /// Frame offsets and sizes of the formal parameters and return values.
    pub params: Vec<(u32, u32)>,
    pub rets: Vec<(u32, u32)>,
    pub callees: Vec<u32>,
    /// The module-scope shared variables (symbol indices) the function refers to.
    pub module_shared: Vec<u32>,
    /// Calls through function addresses (virtual functions).
    pub indirect_calls: bool,
    /// Uses `bar.warp.sync` (`__syncwarp`, cooperative groups' tile sync): warp-synchronous
    /// code, which only lockstep execution of a warp runs right.
    pub warp_sync: bool,
}

/// Per-kernel state an engine attaches to a [`Module`], by kernel index (`None`: the engine
/// has nothing for that kernel). The module only holds it: the compiler keeps its compiled
/// code here (`jit::get`), so a module and its compiled kernels live and die together.
#[derive(Default)]
pub(crate) struct KernelCache(pub(crate) Mutex<HashMap<u32, Option<Arc<dyn Any + Send + Sync>>>>);

impl std::fmt::Debug for KernelCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("jit::Cache")
    }
}

/// A parsed and decoded PTX module. Immutable, `Send + Sync`.
#[derive(Debug)]
pub struct Module {
    pub(crate) code: Vec<Inst>,
    pub(crate) funcs: Vec<Func>,
    pub(crate) kernels: Vec<KernelInfo>,
    pub(crate) globals: Vec<GlobalInfo>,
    pub(crate) syms: Vec<Sym>,
    /// Functions whose address is taken (possible targets of indirect calls).
    pub(crate) addr_taken: Vec<u32>,
    pub(super) version: Option<f64>,
    pub(super) target: Vec<String>,
    /// Per-kernel state an engine keeps with the module (the compiler's code, compiled on
    /// first launch).
    pub(crate) jit: KernelCache,
}

impl Module {
    /// All `.entry` kernels, in source order (a kernel's [`KernelId`] is its index).
    pub fn kernels(&self) -> &[KernelInfo] {
        &self.kernels
    }

    /// Whether any code of the module may call device-side `malloc` (the executor then
    /// needs a device heap: [`crate::DeviceMemory::malloc`]).
    pub fn uses_device_malloc(&self) -> bool {
        self.funcs
            .iter()
            .any(|f| f.intrinsic == Some(crate::ir::Intrinsic::Malloc))
    }

    pub fn kernel(&self, name: &str) -> Option<KernelId> {
        self.kernels
            .iter()
            .position(|k| k.name == name)
            .map(|i| KernelId(i as u32))
    }

    pub fn kernel_info(&self, id: KernelId) -> Option<&KernelInfo> {
        self.kernels.get(id.0 as usize)
    }

    /// The registers kernel `id`'s own code declares (`.reg`; `%r<N>` counts N), as a
    /// stand-in for what ptxas would allocate, within what ptxas would allow: its
    /// `.maxnreg`, 255, and what lets a block of its largest size (`.reqntid`/`.maxntid`, else
    /// 1024 threads) fit in a 64K-register multiprocessor, as ptxas keeps launch bounds (so
    /// the occupancy calculator never finds a legal block size that fits no block). At
    /// least 1.
    pub fn kernel_registers(&self, id: KernelId) -> Option<u32> {
        let k = self.kernels.get(id.0 as usize)?;
        let declared = self.funcs.get(k.func as usize)?.declared_regs;
        let threads = k
            .reqntid
            .or(k.maxntid)
            .map_or(1024, |d| {
                d.iter().fold(1u32, |a, &x| a.saturating_mul(x.max(1)))
            })
            .clamp(1, 1024);
        let cap = k
            .maxnreg
            .unwrap_or(255)
            .min(255)
            .min(65536 / threads)
            .max(1);
        Some(declared.clamp(1, cap))
    }

    /// Bytes of the module's `.const` variables (what `CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES`
    /// reports for each of its kernels).
    pub fn const_bytes(&self) -> u64 {
        self.globals
            .iter()
            .filter(|g| g.space == GlobalSpace::Const && !g.is_extern)
            .fold(0u64, |a, g| a.saturating_add(g.size))
    }

    /// Every module-scope `.global` and `.const` variable (a [`GlobalId`] is its index).
    pub fn globals(&self) -> &[GlobalInfo] {
        &self.globals
    }

    pub fn global(&self, name: &str) -> Option<GlobalId> {
        self.globals
            .iter()
            .position(|g| g.name == name)
            .map(|i| GlobalId(i as u32))
    }

    /// The `.version` directive, if present.
    pub fn version(&self) -> Option<f64> {
        self.version
    }

    /// The `.target` list.
    pub fn target(&self) -> &[String] {
        &self.target
    }

    /// Number of decoded instructions.
    pub fn instruction_count(&self) -> usize {
        self.code.len()
    }
}
