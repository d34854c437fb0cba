// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CPU executor's modules and launches ([`ModuleOps`]), run by `module::Modules`.

use std::sync::Arc;

use vcuda_protocol::{
    LaunchReq, OCCUPANCY_MAX_ACTIVE_CLUSTERS, OCCUPANCY_MAX_CLUSTER_SIZE, OccupancyClusterReq,
    OccupancyClusterResp, TensorMapEncodeReq, TensorMapResp,
};
use vcuda_ptx::tensormap::{self, TENSOR_MAP_SIZE, TensorMapError, TiledParams};

use crate::executor::cpu::{CpuExecutor, memory};
use crate::executor::{ExecResult, FunctionInfo, ModuleImage, ModuleOps, Status};

impl ModuleOps for CpuExecutor {
    fn module_load(&mut self, image: Arc<ModuleImage>) -> ExecResult<u64> {
        let h = self.new_handle();
        self.modules.load(h, &image, &mut self.heap)?;
        Ok(h)
    }

    fn module_unload(&mut self, module: u64) -> ExecResult<()> {
        self.modules.unload(module, &mut self.heap)
    }

    fn function_get(&mut self, module: u64, name: &str) -> ExecResult<FunctionInfo> {
        let h = self.new_handle();
        self.modules.function(module, name, h)
    }

    fn symbol_get(&mut self, module: u64, name: &str) -> ExecResult<(u64, u64)> {
        self.modules.symbol(module, name)
    }

    fn module_function(&mut self, module: u64, index: u32) -> ExecResult<(u32, Option<String>)> {
        self.modules.kernel_name(module, index)
    }

    fn symbol_bind(&mut self, module: u64, name: &str, addr: u64, size: u64) -> ExecResult<()> {
        self.modules.bind(module, name, addr, size, &mut self.heap)
    }

    fn launch(&mut self, req: &LaunchReq, params: &[u8]) -> ExecResult<()> {
        self.check_stream(req.stream)?;
        self.ensure_malloc_heap(req.function)?;
        self.modules
            .launch(req, params, &self.heap, &self.textures.objects, (0, [0; 3]))
    }

    fn launch_cluster(
        &mut self,
        req: &LaunchReq,
        cluster: [u32; 3],
        params: &[u8],
    ) -> ExecResult<()> {
        self.check_stream(req.stream)?;
        self.ensure_malloc_heap(req.function)?;
        self.modules.launch(
            req,
            params,
            &self.heap,
            &self.textures.objects,
            (0, cluster),
        )
    }

    fn launch_cooperative(&mut self, req: &LaunchReq, params: &[u8]) -> ExecResult<()> {
        self.check_stream(req.stream)?;
        // Saturating: the dimensions are the guest's (three u32s overflow a u64).
        let blocks = req
            .grid
            .iter()
            .fold(1u64, |a, &g| a.saturating_mul(u64::from(g)));
        if blocks > vcuda_ptx::MAX_COOPERATIVE_BLOCKS {
            return Err(Status(vcuda_protocol::status::COOPERATIVE_LAUNCH_TOO_LARGE));
        }
        self.ensure_malloc_heap(req.function)?;
        // The grid workspace: private to this launch, zeroed, freed after it.
        let size = vcuda_ptx::GRID_WORKSPACE_SIZE;
        let ws = self.heap.alloc(size, memory::AllocKind::Symbol)?;
        let r = match self.heap.bytes_mut(ws, size) {
            Ok(b) => {
                b.fill(0);
                self.modules.launch(
                    req,
                    params,
                    &self.heap,
                    &self.textures.objects,
                    (ws, [0; 3]),
                )
            }
            Err(e) => Err(e),
        };
        if let Err(e) = self.heap.free(ws, memory::AllocKind::Symbol) {
            log::warn!("freeing a cooperative launch's workspace: {e:?}");
        }
        r
    }

    fn func_set_attribute(&mut self, function: u64, attr: u32, value: i32) -> ExecResult<()> {
        self.modules.set_attribute(function, attr, value)
    }

    /// The CPU executor runs any number of clusters at once; it answers for the device it
    /// describes, whose multiprocessors hold `blocks_per_sm` blocks each (the library's
    /// occupancy calculator), clusters of up to eight blocks (fewer where the kernel's
    /// `.maxclusterrank` says so; a kernel's compile-time shape is its only size).
    fn occupancy_cluster(&mut self, req: &OccupancyClusterReq) -> ExecResult<OccupancyClusterResp> {
        let (required, rank) = self.modules.cluster_limits(req.function)?;
        let sms = self.threads.clamp(1, 1024) as u64;
        let resident = u64::from(req.blocks_per_sm).saturating_mul(sms);
        let max = u64::from(rank.unwrap_or(u32::MAX).min(vcuda_ptx::MAX_CLUSTER_SIZE));
        let invalid = Status(vcuda_protocol::status::INVALID_CLUSTER_SIZE);
        let size_of = |s: [u32; 3]| s.iter().fold(1u64, |a, &d| a.saturating_mul(u64::from(d)));
        let value = match (req.query, required) {
            (OCCUPANCY_MAX_CLUSTER_SIZE, Some(r)) => {
                let size = size_of(r);
                if size <= resident.min(max) { size } else { 0 }
            }
            (OCCUPANCY_MAX_CLUSTER_SIZE, None) => resident.min(max),
            (OCCUPANCY_MAX_ACTIVE_CLUSTERS, _) => {
                let given = (req.cluster != [0; 3]).then_some(req.cluster);
                let shape = match (given, required) {
                    (Some(g), Some(r)) if g != r => return Err(invalid),
                    (Some(s), _) | (None, Some(s)) => s,
                    (None, None) => return Err(invalid),
                };
                let size = size_of(shape);
                if size == 0 || size > max {
                    return Err(invalid);
                }
                resident / size
            }
            _ => return Err(Status::INVALID_VALUE),
        };
        Ok(OccupancyClusterResp {
            value: value.min(u64::from(u32::MAX)) as u32,
            reserved: 0,
        })
    }

    fn tensor_map_encode(&mut self, req: &TensorMapEncodeReq) -> ExecResult<TensorMapResp> {
        let p = TiledParams {
            data_type: req.data_type,
            rank: req.rank,
            address: req.address,
            global_dim: req.global_dim,
            global_strides: req.global_strides,
            box_dim: req.box_dim,
            element_strides: req.element_strides,
            interleave: req.interleave,
            swizzle: req.swizzle,
            l2_promotion: req.l2_promotion,
            oob_fill: req.oob_fill,
        };
        tensormap::encode_tiled(&p).map(map_resp).map_err(map_error)
    }

    fn tensor_map_replace_address(
        &mut self,
        map: [u64; 16],
        address: u64,
    ) -> ExecResult<TensorMapResp> {
        let bytes: [u8; TENSOR_MAP_SIZE] = zerocopy::transmute!(map);
        tensormap::replace_address(&bytes, address)
            .map(map_resp)
            .map_err(map_error)
    }
}

fn map_resp(bytes: [u8; TENSOR_MAP_SIZE]) -> TensorMapResp {
    TensorMapResp {
        map: zerocopy::transmute!(bytes),
    }
}

fn map_error(e: TensorMapError) -> Status {
    match e {
        TensorMapError::Invalid(_) => Status::INVALID_VALUE,
        TensorMapError::Unsupported(what) => {
            log::warn!("tensor map refused: {what} (the CPU executor copies tiled tensors only)");
            Status::NOT_SUPPORTED
        }
    }
}
