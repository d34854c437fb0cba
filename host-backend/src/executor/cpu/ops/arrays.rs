// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CPU executor's arrays, mipmapped arrays, texture and surface objects
//! ([`ArrayOps`]), kept by `texture::Textures`.

use vcuda_protocol::{ArrayCreateReq, MemcpyArrayReq, MipmappedArrayCreateReq, TexObjectCreateReq};

use crate::executor::cpu::CpuExecutor;
use crate::executor::{ArrayOps, ExecResult};

impl ArrayOps for CpuExecutor {
    fn array_create(&mut self, r: &ArrayCreateReq) -> ExecResult<u64> {
        self.check_device(r.device)?;
        let h = self.new_handle();
        self.textures.array_create(&mut self.heap, r, h)?;
        Ok(h)
    }

    fn array_destroy(&mut self, array: u64) -> ExecResult<()> {
        self.textures.array_destroy(&mut self.heap, array)
    }

    fn memcpy_array(&mut self, r: &MemcpyArrayReq) -> ExecResult<()> {
        self.check_stream(r.stream)?;
        self.textures.memcpy(&mut self.heap, r)
    }

    fn mipmapped_array_create(&mut self, r: &MipmappedArrayCreateReq) -> ExecResult<u64> {
        self.check_device(r.array.device)?;
        let h = self.new_handle();
        self.textures.mipmapped_create(&mut self.heap, r, h)?;
        Ok(h)
    }

    fn mipmapped_array_destroy(&mut self, handle: u64) -> ExecResult<()> {
        self.textures.mipmapped_destroy(&mut self.heap, handle)
    }

    fn mipmapped_array_level(&mut self, handle: u64, level: u32) -> ExecResult<u64> {
        // (A number spent when the level has its handle already: handles only grow.)
        let fresh = self.new_handle();
        self.textures.mipmapped_level(handle, level, fresh)
    }

    fn tex_object_create(&mut self, r: &TexObjectCreateReq) -> ExecResult<u64> {
        self.check_device(r.device)?;
        let h = self.textures.object_handle();
        self.textures.object_create(&self.heap, r, h)?;
        Ok(h)
    }

    fn tex_object_destroy(&mut self, handle: u64, surface: bool) -> ExecResult<()> {
        self.textures.object_destroy(handle, surface)
    }
}
