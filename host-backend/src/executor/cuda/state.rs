// SPDX-License-Identifier: Apache-2.0 OR MIT
//! What a CUDA session keeps per domain, apart from the code that works on it, so the
//! session ([`super::CudaExecutor`], whose fields these are) and the domain modules that
//! implement its calls both take them from here: cuBLAS handles (`blas`), cuRAND
//! generators (`rand`), graphs (`graphs`), VMM allocations (`vmm`), loaded modules and
//! kernels (`modules`), streams (`streams`), arrays and texture objects (`texture`).

use std::collections::HashMap;
use std::rc::Rc;

use cudarc::driver::sys;
use vcuda_protocol::region::Region;
use vcuda_protocol::{
    ArrayCreateReq, MAX_PARAM_LEN, MipmappedArrayCreateReq, STREAM_LEGACY, TexObjectCreateReq,
};

use super::handles::{HandleTable, Kind};
use super::owned::{Graph, Kernel, Module, Stream, StreamRef};
use crate::executor::array::{ArrayShape, MipShape};
use crate::executor::{ExecResult, FunctionInfo};
use crate::migrate::state::RandStep;

/// The session's cuBLAS handles (raw `cublasHandle_t`s, owned here).
#[derive(Debug, Default)]
pub(super) struct Handles {
    pub(super) map: HashMap<u64, Handle>,
    pub(super) next: u64,
}

/// A cuBLAS handle and the stream it was last set to. `cublasSetStream` resets the
/// handle's workspace, so it is called only when a call names another stream.
#[derive(Debug, Clone, Copy)]
pub(super) struct Handle {
    pub(super) raw: usize,
    pub(super) stream: Option<usize>,
}

/// The session's generators (`rand.rs`), and the counter behind the next handle.
#[derive(Debug, Default)]
pub(super) struct Generators {
    pub(super) map: HashMap<u64, Generator>,
    pub(super) next: u64,
}

/// A cuRAND generator: the raw `curandGenerator_t` (owned here) and what was set on it and
/// drawn from it, which is what a migrated session makes it again from.
#[derive(Debug, Clone)]
pub(super) struct Generator {
    pub(super) raw: usize,
    /// A host generator (`curandCreateGeneratorHost`).
    pub(super) host: bool,
    /// Its `curandRngType_t`, as the guest gave it.
    pub(super) rng_type: u32,
    pub(super) seed: u64,
    /// Outputs (pseudo-random) or points (quasi-random) skipped or generated so far.
    pub(super) offset: u64,
    pub(super) dims: u32,
    pub(super) ordering: u32,
    /// A Mersenne Twister's calls since it was made, which a migration repeats (`rand.rs`);
    /// `None` once they exceed what a load repeats, and empty for the other generators.
    pub(super) log: Option<Vec<RandStep>>,
    /// The numbers the draws of `log` made, and the draws.
    pub(super) log_drawn: (u64, u64),
}

/// A CUDA graph of the session and the device memory its copies and memsets reach.
#[derive(Debug)]
pub(super) struct NativeGraph {
    pub(super) graph: Graph,
    pub(super) regions: Vec<Region>,
}

/// What the session keeps of a physical allocation.
#[derive(Debug, Clone, Copy)]
pub(super) struct Phys {
    pub(super) raw: u64,
    pub(super) charge: u64,
}

/// The parameter buffer handed to the driver: aligned, and as long as any kernel's
/// parameters may be, so the driver never reads past it.
#[repr(C, align(16))]
pub(super) struct ParamBuf(pub(super) [u8; PARAM_BUF_LEN]);

/// [`MAX_PARAM_LEN`] rounded up to 16.
pub(super) const PARAM_BUF_LEN: usize = (MAX_PARAM_LEN as usize).next_multiple_of(16);

/// A kernel the session looked up.
#[derive(Debug)]
pub(super) struct Function {
    pub(super) kernel: Kernel,
    /// The module handle it was looked up through.
    pub(super) module: u64,
    pub(super) info: FunctionInfo,
}

/// A module image loaded in the session's context.
#[derive(Debug)]
pub(super) struct LoadedModule {
    /// Shared with the kernels looked up in it.
    pub(super) module: Rc<Module>,
    /// Module handles referring to it.
    pub(super) refs: usize,
    /// Its kernels' names, once asked for (`ModuleFunction` asks once per kernel).
    pub(super) names: Option<Vec<String>>,
    /// The image it was loaded from (a migrated session loads it again).
    pub(super) image: std::sync::Arc<crate::executor::ModuleImage>,
    /// The variables whose address the guest asked for (`SymbolGet`).
    pub(super) seen: std::collections::BTreeSet<String>,
}

/// The stream behind a guest stream handle (`STREAM_LEGACY`: the legacy default stream).
///
/// A function of the table rather than a method, so the result borrows only the table
/// and the caller may still update the executor's other fields.
pub(super) fn stream_ref(streams: &HandleTable<Stream>, handle: u64) -> ExecResult<StreamRef<'_>> {
    if handle == STREAM_LEGACY {
        return Ok(StreamRef::Legacy);
    }
    streams.get(handle).map(StreamRef::Created)
}

/// One array.
#[derive(Debug)]
pub(super) struct Array {
    pub(super) raw: sys::CUarray,
    pub(super) shape: ArrayShape,
    /// Bytes charged to the session (0 for a level: its mipmapped array is charged).
    pub(super) charged: u64,
    /// The mipmapped array this is a level of (which owns it).
    pub(super) level_of: Option<u64>,
    /// The request that made it (none for a level), which live migration carries.
    pub(super) req: Option<ArrayCreateReq>,
    /// The module handle counter when it was made: a migrated session makes its arrays
    /// and modules again in the order they were made (see `ops/state/textures.rs`).
    pub(super) modules_before: u64,
}

/// One mipmapped array.
#[derive(Debug)]
pub(super) struct Mipmapped {
    pub(super) raw: sys::CUmipmappedArray,
    pub(super) shape: MipShape,
    /// Bytes charged to the session.
    pub(super) charged: u64,
    /// The array handles given out for its levels, by level.
    pub(super) levels: HashMap<u32, u64>,
    /// The request that made it.
    pub(super) req: MipmappedArrayCreateReq,
    /// The module handle counter when it was made (as [`Array::modules_before`]).
    pub(super) modules_before: u64,
}

/// A session's arrays and objects.
#[derive(Debug)]
pub(super) struct Textures {
    pub(super) arrays: HandleTable<Array>,
    pub(super) mipmapped: HandleTable<Mipmapped>,
    /// The objects by (is a surface, handle), with the request that made each: the driver
    /// numbers the two kinds apart.
    pub(super) objects: HashMap<(bool, u64), TexObjectCreateReq>,
}

impl Default for Textures {
    fn default() -> Self {
        Self {
            arrays: HandleTable::new(Kind::Array),
            mipmapped: HandleTable::new(Kind::Mipmapped),
            objects: HashMap::new(),
        }
    }
}

impl Textures {
    /// Forgets everything (the context that held it is gone).
    pub(super) fn clear(&mut self) {
        self.arrays.clear();
        self.mipmapped.clear();
        self.objects.clear();
    }
}
