// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CPU executor's modules and launches ([`ModuleOps`]), run by `module::Modules`.

use std::sync::Arc;

use vcuda_protocol::LaunchReq;

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
            .launch(req, params, &self.heap, &self.textures.objects, 0)
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
                self.modules
                    .launch(req, params, &self.heap, &self.textures.objects, ws)
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
}
