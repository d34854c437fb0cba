// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CUDA executor's modules and launches ([`ModuleOps`]), done in `modules.rs`.

use std::sync::Arc;

use vcuda_protocol::{
    LaunchReq, OccupancyClusterReq, OccupancyClusterResp, TensorMapEncodeReq, TensorMapResp,
};

use crate::executor::cuda::CudaExecutor;
use crate::executor::cuda::modules::Shape;
use crate::executor::{ExecResult, FunctionInfo, ModuleImage, ModuleOps, Status};

impl ModuleOps for CudaExecutor {
    fn module_load(&mut self, image: Arc<ModuleImage>) -> ExecResult<u64> {
        self.module_load_impl(image)
    }

    fn module_unload(&mut self, module: u64) -> ExecResult<()> {
        self.module_unload_impl(module)
    }

    fn function_get(&mut self, module: u64, name: &str) -> ExecResult<FunctionInfo> {
        self.function_get_impl(module, name)
    }

    fn symbol_get(&mut self, module: u64, name: &str) -> ExecResult<(u64, u64)> {
        self.symbol_get_impl(module, name)
    }

    fn module_function(&mut self, module: u64, index: u32) -> ExecResult<(u32, Option<String>)> {
        self.module_function_impl(module, index)
    }

    fn symbol_bind(&mut self, _module: u64, _name: &str, _addr: u64, _size: u64) -> ExecResult<()> {
        // Managed variables stay in device memory here (`prefers_managed_on_device`).
        Err(Status::NOT_SUPPORTED)
    }

    fn launch(&mut self, req: &LaunchReq, params: &[u8]) -> ExecResult<()> {
        self.launch_impl(req, params, Shape::Plain)
    }

    fn launch_cooperative(&mut self, req: &LaunchReq, params: &[u8]) -> ExecResult<()> {
        self.launch_impl(req, params, Shape::Cooperative)
    }

    fn launch_cluster(
        &mut self,
        req: &LaunchReq,
        cluster: [u32; 3],
        params: &[u8],
    ) -> ExecResult<()> {
        self.launch_impl(req, params, Shape::Cluster(cluster))
    }

    fn func_set_attribute(&mut self, function: u64, attr: u32, value: i32) -> ExecResult<()> {
        self.func_set_attribute_impl(function, attr, value)
    }

    fn occupancy_cluster(&mut self, req: &OccupancyClusterReq) -> ExecResult<OccupancyClusterResp> {
        self.occupancy_cluster_impl(req)
    }

    fn tensor_map_encode(&mut self, req: &TensorMapEncodeReq) -> ExecResult<TensorMapResp> {
        self.tensor_map_encode_impl(req)
    }

    fn tensor_map_replace_address(
        &mut self,
        map: [u64; 16],
        address: u64,
    ) -> ExecResult<TensorMapResp> {
        self.tensor_map_replace_address_impl(map, address)
    }
}
