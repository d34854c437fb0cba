// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Texture and surface objects: `cudaCreateTextureObject`, `cudaCreateSurfaceObject`, their
//! destruction and descriptor queries.
//!
//! The backend creates the object and answers the handle kernels take (on a GPU, the
//! driver's own `CUtexObject`). Textures view an array, a mipmapped array (with the
//! descriptor's mipmap filter mode, level bias and level clamps), linear memory or pitched
//! 2-D memory; surfaces view an array created with `cudaArraySurfaceLoadStore`. A texture
//! over an array or a mipmapped array may take a resource view (`cudaResourceViewDesc`):
//! another format of the same texel size, a range of levels, a range of layers (whole cubes
//! of a cube map). Block-compressed view formats and anisotropic filtering are not
//! supported: a descriptor that asks for them fails with `cudaErrorNotSupported`.

use crate::core::texture::*;
use crate::error::Error;
use crate::ffi::{read_in, write_out};

entry! {
    fn cudaCreateTextureObject(out: *mut u64, res: *const cudaResourceDesc, tex: *const cudaTextureDesc, v: *const cudaResourceViewDesc) {
        if out.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        // SAFETY: the caller's descriptors (the API's contract); `read_in` checks for null.
        let (res, tex, v) = unsafe { (read_in(res)?, read_in(tex)?, if v.is_null() { None } else { Some(read_in(v)?) }) };
        let h = create(&res, Some(&tex), v.as_ref())?;
        // SAFETY: checked non-null; the caller's output pointer.
        unsafe { write_out(out, h) }
    }

    fn cudaDestroyTextureObject(h: u64) {
        destroy(h, false)
    }

    fn cudaCreateSurfaceObject(out: *mut u64, res: *const cudaResourceDesc) {
        if out.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        // SAFETY: the caller's descriptor (the API's contract); `read_in` checks for null.
        let h = create(&unsafe { read_in(res)? }, None, None)?;
        // SAFETY: checked non-null; the caller's output pointer.
        unsafe { write_out(out, h) }
    }

    fn cudaDestroySurfaceObject(h: u64) {
        destroy(h, true)
    }

    fn cudaGetTextureObjectResourceDesc(out: *mut cudaResourceDesc, h: u64) {
        let o = object(h, false)?;
        // SAFETY: the caller's output pointer (checked for null by `write_out`).
        unsafe { write_out(out, o.res) }
    }

    fn cudaGetTextureObjectTextureDesc(out: *mut cudaTextureDesc, h: u64) {
        let o = object(h, false)?;
        // SAFETY: as above.
        unsafe { write_out(out, o.tex.unwrap_or_default()) }
    }

    fn cudaGetTextureObjectResourceViewDesc(out: *mut cudaResourceViewDesc, h: u64) {
        let v = view_of(h)?;
        // SAFETY: as above (the part CUDA 12 and 13 share).
        unsafe { write_out(out, v) }
    }

    fn cudaGetSurfaceObjectResourceDesc(out: *mut cudaResourceDesc, h: u64) {
        let o = object(h, true)?;
        // SAFETY: as above.
        unsafe { write_out(out, o.res) }
    }
}
