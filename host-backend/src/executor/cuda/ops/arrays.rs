// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CUDA executor's arrays, mipmapped arrays, texture and surface objects ([`ArrayOps`]),
//! done in `texture.rs`.

use vcuda_protocol::{ArrayCreateReq, MemcpyArrayReq, MipmappedArrayCreateReq, TexObjectCreateReq};

use crate::executor::cuda::CudaExecutor;
use crate::executor::{ArrayOps, ExecResult};

impl ArrayOps for CudaExecutor {
    fn array_create(&mut self, req: &ArrayCreateReq) -> ExecResult<u64> {
        self.array_create_impl(req)
    }

    fn array_destroy(&mut self, array: u64) -> ExecResult<()> {
        self.array_destroy_impl(array)
    }

    fn memcpy_array(&mut self, req: &MemcpyArrayReq) -> ExecResult<()> {
        self.memcpy_array_impl(req)
    }

    fn mipmapped_array_create(&mut self, req: &MipmappedArrayCreateReq) -> ExecResult<u64> {
        self.mipmapped_create_impl(req)
    }

    fn mipmapped_array_destroy(&mut self, handle: u64) -> ExecResult<()> {
        self.mipmapped_destroy_impl(handle)
    }

    fn mipmapped_array_level(&mut self, handle: u64, level: u32) -> ExecResult<u64> {
        self.mipmapped_level_impl(handle, level)
    }

    fn tex_object_create(&mut self, req: &TexObjectCreateReq) -> ExecResult<u64> {
        self.tex_object_create_impl(req)
    }

    fn tex_object_destroy(&mut self, handle: u64, surface: bool) -> ExecResult<()> {
        self.tex_object_destroy_impl(handle, surface)
    }
}
