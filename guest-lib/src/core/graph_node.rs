// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The nodes of CUDA graphs ([`super::graph`]): what each kind keeps (a copy of the
//! caller's parameters) and the C parameter structs it is made from and read back as.

use crate::error::{Error, Result};
use crate::ffi::{dim3, memcpy_kind};
use std::ffi::{c_int, c_uint, c_void};

pub use crate::core::callback::HostFn;

/// `struct cudaKernelNodeParams`.
#[repr(C)]
pub struct cudaKernelNodeParams {
    pub(crate) func: *mut c_void,
    pub(crate) grid: dim3,
    pub(crate) block: dim3,
    pub(crate) shared_mem: c_uint,
    pub(crate) kernel_params: *mut *mut c_void,
    pub(crate) extra: *mut *mut c_void,
}

/// `struct cudaPos`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct cudaPos {
    pub(crate) x: usize,
    pub(crate) y: usize,
    pub(crate) z: usize,
}

/// `struct cudaPitchedPtr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct cudaPitchedPtr {
    pub(crate) ptr: *mut c_void,
    pub(crate) pitch: usize,
    pub(crate) xsize: usize,
    pub(crate) ysize: usize,
}

/// `struct cudaExtent`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct cudaExtent {
    pub(crate) width: usize,
    pub(crate) height: usize,
    pub(crate) depth: usize,
}

/// `struct cudaMemcpy3DParms`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct cudaMemcpy3DParms {
    pub(crate) src_array: *mut c_void,
    pub(crate) src_pos: cudaPos,
    pub(crate) src_ptr: cudaPitchedPtr,
    pub(crate) dst_array: *mut c_void,
    pub(crate) dst_pos: cudaPos,
    pub(crate) dst_ptr: cudaPitchedPtr,
    pub(crate) extent: cudaExtent,
    pub(crate) kind: c_int,
}

/// `struct cudaMemsetParams`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct cudaMemsetParams {
    pub(crate) dst: *mut c_void,
    pub(crate) pitch: usize,
    pub(crate) value: c_uint,
    pub(crate) element_size: c_uint,
    pub(crate) width: usize,
    pub(crate) height: usize,
}

/// `struct cudaHostNodeParams`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct cudaHostNodeParams {
    pub(crate) func: Option<HostFn>,
    pub(crate) user_data: *mut c_void,
}

/// A kernel node: the kernel (its host stub), its configuration and a copy of its
/// parameter bytes.
pub(crate) struct Kernel {
    pub func: usize,
    /// For a kernel launched through the driver API (`func` is then its `CUfunction`):
    /// the backend's function handle, launched as it is.
    pub backend: Option<u64>,
    pub grid: dim3,
    pub block: dim3,
    pub shmem: u32,
    pub params: Box<[u8]>,
    pub(crate) layout: Vec<(u32, u32)>,
    /// A pointer into `params` per parameter: `kernelParams` of `GetParams`.
    pub(crate) argv: Box<[usize]>,
    /// Launched cooperatively (`cudaLaunchAttributeCooperative`, or a captured
    /// `cudaLaunchCooperativeKernel`): every block resident at once.
    pub cooperative: bool,
    /// Launched in thread-block clusters of this shape (a captured launch in clusters, or
    /// `cudaLaunchAttributeClusterDimension` set on the node).
    pub cluster: Option<[u32; 3]>,
    /// A driver kernel's name (`cudaGraphDebugDotPrint`; the runtime's come from the
    /// registry).
    pub(crate) name: Option<String>,
}

impl Kernel {
    pub(crate) fn new(
        func: usize,
        (grid, block, shmem): (dim3, dim3, u32),
        params: Vec<u8>,
        layout: Vec<(u32, u32)>,
    ) -> Self {
        let params = params.into_boxed_slice();
        let base = params.as_ptr() as usize;
        let argv = layout.iter().map(|&(off, _)| base + off as usize).collect();
        Self {
            func,
            backend: None,
            grid,
            block,
            shmem,
            params,
            layout,
            argv,
            cooperative: false,
            cluster: None,
            name: None,
        }
    }

    /// A kernel node for a driver-API launch of `func` (a `CUfunction`), whose backend
    /// handle is `handle`.
    pub(crate) fn driver(
        func: usize,
        handle: u64,
        cfg: (dim3, dim3, u32),
        params: Vec<u8>,
        layout: Vec<(u32, u32)>,
    ) -> Self {
        Self {
            backend: Some(handle),
            ..Self::new(func, cfg, params, layout)
        }
    }

    /// How the node launches.
    pub(crate) fn shape(&self) -> crate::core::function::Shape {
        use crate::core::function::Shape;
        match (self.cooperative, self.cluster) {
            (true, _) => Shape::Cooperative,
            (false, Some(d)) => Shape::Cluster(d),
            (false, None) => Shape::Plain,
        }
    }

    pub(crate) fn to_c(&self) -> cudaKernelNodeParams {
        cudaKernelNodeParams {
            func: self.func as *mut c_void,
            grid: self.grid,
            block: self.block,
            shared_mem: self.shmem,
            kernel_params: if self.argv.is_empty() {
                std::ptr::null_mut()
            } else {
                self.argv.as_ptr() as *mut *mut c_void
            },
            extra: std::ptr::null_mut(),
        }
    }
}

impl Clone for Kernel {
    fn clone(&self) -> Self {
        Self {
            backend: self.backend,
            cooperative: self.cooperative,
            cluster: self.cluster,
            name: self.name.clone(),
            ..Self::new(
                self.func,
                (self.grid, self.block, self.shmem),
                self.params.to_vec(),
                self.layout.clone(),
            )
        }
    }
}

/// One side of a copy: a pitched pointer and a position in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Side {
    pub ptr: u64,
    pub pitch: u64,
    pub xsize: u64,
    pub ysize: u64,
    pub pos: [u64; 3],
}

impl Side {
    pub(crate) fn linear(ptr: u64, count: u64) -> Self {
        Self {
            ptr,
            pitch: count,
            xsize: count,
            ysize: 1,
            pos: [0; 3],
        }
    }

    /// The address of row `y`, slice `z` (relative to the position).
    pub(crate) fn at(&self, y: u64, z: u64) -> u64 {
        let slice = self.pitch.wrapping_mul(self.ysize);
        self.ptr
            .wrapping_add((self.pos[2] + z).wrapping_mul(slice))
            .wrapping_add((self.pos[1] + y).wrapping_mul(self.pitch))
            .wrapping_add(self.pos[0])
    }
}

/// A copy node: `depth` slices of `height` rows of `width` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Copy3D {
    pub src: Side,
    pub dst: Side,
    pub extent: [u64; 3],
    pub kind: c_int,
    /// The memory types (`CUmemorytype`) of the source and destination as a driver call
    /// declared them, given back by `cuGraphMemcpyNodeGetParams`; 0 where the runtime made
    /// the copy.
    pub declared: [u32; 2],
}

impl Copy3D {
    /// A 2-D copy (what `cudaMemcpyAsync` and `cudaMemcpy2DAsync` capture).
    pub(crate) fn new_2d(
        (dst, dpitch): (u64, u64),
        (src, spitch): (u64, u64),
        (width, height): (u64, u64),
        kind: c_int,
    ) -> Result<Self> {
        check_kind(kind)?;
        let side = |ptr, pitch| Side {
            ysize: height,
            ..Side::linear(ptr, pitch)
        };
        Ok(Self {
            src: side(src, spitch),
            dst: side(dst, dpitch),
            extent: [width, height, 1],
            kind,
            declared: [0; 2],
        })
    }

    pub(crate) fn linear(dst: u64, src: u64, count: u64, kind: c_int) -> Result<Self> {
        check_kind(kind)?;
        Ok(Self {
            src: Side::linear(src, count),
            dst: Side::linear(dst, count),
            extent: [count, 1, 1],
            kind,
            declared: [0; 2],
        })
    }

    pub(crate) fn from_c(p: &cudaMemcpy3DParms) -> Result<Self> {
        if !p.src_array.is_null() || !p.dst_array.is_null() {
            // CUDA arrays are not supported by the library.
            return Err(Error::NOT_SUPPORTED);
        }
        check_kind(p.kind)?;
        let side = |q: &cudaPitchedPtr, pos: &cudaPos| Side {
            ptr: q.ptr as u64,
            pitch: q.pitch as u64,
            xsize: q.xsize as u64,
            ysize: q.ysize as u64,
            pos: [pos.x as u64, pos.y as u64, pos.z as u64],
        };
        let e = &p.extent;
        let cp = Self {
            src: side(&p.src_ptr, &p.src_pos),
            dst: side(&p.dst_ptr, &p.dst_pos),
            extent: [e.width as u64, e.height as u64, e.depth as u64],
            kind: p.kind,
            declared: [0; 2],
        };
        if cp.extent.contains(&0) {
            return Err(Error::INVALID_VALUE);
        }
        for s in [&cp.src, &cp.dst] {
            if s.ptr == 0 {
                return Err(Error::INVALID_VALUE);
            }
            // NVIDIA's runtime names a pitch below the width (CUDA 13.0, measured).
            if (cp.extent[1] > 1 || cp.extent[2] > 1) && s.pitch < cp.extent[0] {
                return Err(Error::INVALID_PITCH);
            }
            if cp.extent[2] > 1 && s.ysize < cp.extent[1] {
                return Err(Error::INVALID_VALUE);
            }
        }
        Ok(cp)
    }

    pub(crate) fn to_c(self) -> cudaMemcpy3DParms {
        let ptr = |s: &Side| cudaPitchedPtr {
            ptr: s.ptr as *mut c_void,
            pitch: s.pitch as usize,
            xsize: s.xsize as usize,
            ysize: s.ysize as usize,
        };
        let pos = |s: &Side| cudaPos {
            x: s.pos[0] as usize,
            y: s.pos[1] as usize,
            z: s.pos[2] as usize,
        };
        cudaMemcpy3DParms {
            src_array: std::ptr::null_mut(),
            src_pos: pos(&self.src),
            src_ptr: ptr(&self.src),
            dst_array: std::ptr::null_mut(),
            dst_pos: pos(&self.dst),
            dst_ptr: ptr(&self.dst),
            extent: cudaExtent {
                width: self.extent[0] as usize,
                height: self.extent[1] as usize,
                depth: self.extent[2] as usize,
            },
            kind: self.kind,
        }
    }
}

pub(crate) fn check_kind(kind: c_int) -> Result<()> {
    if (memcpy_kind::H2H..=memcpy_kind::DEFAULT).contains(&kind) {
        Ok(())
    } else {
        Err(Error::INVALID_MEMCPY_DIRECTION)
    }
}

/// A memset node: `height` rows of `width` elements of `elem` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Memset {
    pub dst: u64,
    pub pitch: u64,
    pub value: u32,
    pub elem: u32,
    pub width: u64,
    pub height: u64,
}

impl Memset {
    pub(crate) fn new(
        dst: u64,
        pitch: u64,
        value: u32,
        elem: u32,
        width: u64,
        height: u64,
    ) -> Result<Self> {
        if !matches!(elem, 1 | 2 | 4) || dst == 0 || width == 0 || height == 0 {
            return Err(Error::INVALID_VALUE);
        }
        let row = width
            .checked_mul(u64::from(elem))
            .ok_or(Error::INVALID_VALUE)?;
        let pitch = if height == 1 { row } else { pitch };
        if pitch < row {
            return Err(Error::INVALID_VALUE);
        }
        let value = match elem {
            1 => value & 0xff,
            2 => value & 0xffff,
            _ => value,
        };
        Ok(Self {
            dst,
            pitch,
            value,
            elem,
            width,
            height,
        })
    }

    pub(crate) fn from_c(p: &cudaMemsetParams) -> Result<Self> {
        Self::new(
            p.dst as u64,
            p.pitch as u64,
            p.value,
            p.element_size,
            p.width as u64,
            p.height as u64,
        )
    }

    pub(crate) fn to_c(self) -> cudaMemsetParams {
        cudaMemsetParams {
            dst: self.dst as *mut c_void,
            pitch: self.pitch as usize,
            value: self.value,
            element_size: self.elem,
            width: self.width as usize,
            height: self.height as usize,
        }
    }
}

/// A host node: the function and its argument.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Host {
    pub func: HostFn,
    pub data: usize,
}

impl Host {
    pub(crate) fn to_c(self) -> cudaHostNodeParams {
        cudaHostNodeParams {
            func: Some(self.func),
            user_data: self.data as *mut c_void,
        }
    }

    pub(crate) fn from_c(p: &cudaHostNodeParams) -> Result<Self> {
        Ok(Self {
            func: p.func.ok_or(Error::INVALID_VALUE)?,
            data: p.user_data as usize,
        })
    }
}

/// What a node does.
#[derive(Clone)]
pub(crate) enum Kind {
    Kernel(Kernel),
    Memcpy(Copy3D),
    Memset(Memset),
    Host(Host),
    Empty,
    /// The child graph this node owns.
    Child(u64),
    EventRecord(u64),
    EventWait(u64),
    /// A graph allocation (see `graph_mem`): its address and size.
    MemAlloc {
        ptr: u64,
        size: u64,
    },
    /// Frees a graph allocation.
    MemFree(u64),
}

impl Kind {
    /// New parameters for a node that was `old`: a kernel keeps its cooperative attribute
    /// and cluster shape, which are not among its parameters.
    pub(crate) fn keep_attributes_of(&mut self, old: &Kind) {
        if let (Kind::Kernel(new), Kind::Kernel(old)) = (self, old) {
            new.cooperative = old.cooperative;
            new.cluster = old.cluster;
        }
    }

    /// `cudaGraphNodeType`.
    pub(crate) fn type_code(&self) -> u32 {
        match self {
            Kind::Kernel(_) => node_type::KERNEL,
            Kind::Memcpy(_) => node_type::MEMCPY,
            Kind::Memset(_) => node_type::MEMSET,
            Kind::Host(_) => node_type::HOST,
            Kind::Empty => node_type::EMPTY,
            Kind::Child(_) => node_type::GRAPH,
            Kind::EventRecord(_) => node_type::EVENT_RECORD,
            Kind::EventWait(_) => node_type::WAIT_EVENT,
            Kind::MemAlloc { .. } => node_type::MEM_ALLOC,
            Kind::MemFree(_) => node_type::MEM_FREE,
        }
    }
}

/// `cudaGraphNodeType`.
pub mod node_type {
    /// `cudaGraphNodeTypeKernel`.
    pub const KERNEL: u32 = 0;
    /// `cudaGraphNodeTypeMemcpy`.
    pub const MEMCPY: u32 = 1;
    /// `cudaGraphNodeTypeMemset`.
    pub const MEMSET: u32 = 2;
    /// `cudaGraphNodeTypeHost`.
    pub const HOST: u32 = 3;
    /// `cudaGraphNodeTypeGraph`.
    pub const GRAPH: u32 = 4;
    /// `cudaGraphNodeTypeEmpty`.
    pub const EMPTY: u32 = 5;
    /// `cudaGraphNodeTypeWaitEvent`.
    pub const WAIT_EVENT: u32 = 6;
    /// `cudaGraphNodeTypeEventRecord`.
    pub const EVENT_RECORD: u32 = 7;
    /// `cudaGraphNodeTypeMemAlloc`.
    pub const MEM_ALLOC: u32 = 10;
    /// `cudaGraphNodeTypeMemFree`.
    pub const MEM_FREE: u32 = 11;
}
