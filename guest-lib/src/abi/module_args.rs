// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Module images and names as the program passes them (`cuModuleLoadData`,
//! `cuLibraryLoadData`, `cudaLibraryLoadData`, the static runtime's wrappers, file paths,
//! kernel and variable names), turned into byte slices and strings for
//! [`crate::core::module`].
//!
//! An image's length is not passed: it is read from the image's own header (a fat binary's
//! size, PTX's NUL), as CUDA reads it. Each function is `unsafe`: its pointers must be valid
//! as the C API requires of its caller.

use crate::core::function::Function;
use crate::core::module::{Module, session};
use crate::error::CuError;
use std::ffi::{CStr, c_char, c_void};

/// The magic of nvcc's `__fatBinC_Wrapper_t`.
const FATBIN_WRAPPER_MAGIC: u32 = 0x4662_43B1;

/// The size of a module image: a fat binary (header and payload), a bare ELF cubin (to the
/// end of its last table, section or segment), or NUL-terminated PTX text.
///
/// # Safety
///
/// `image` points to a readable image of one of those kinds.
unsafe fn image_len(image: *const u8) -> Result<usize, CuError> {
    // SAFETY: every image is at least 16 bytes or NUL-terminated text (the caller's
    // contract); each read below stays within what the header read so far describes.
    unsafe {
        let magic = image.cast::<u32>().read_unaligned();
        if magic == crate::core::module::FATBIN_MAGIC {
            let size = image.add(8).cast::<u64>().read_unaligned();
            return crate::core::module::fatbin_len(size);
        }
        if magic == crate::core::module::ELF_MAGIC {
            // The 64-byte header, then the tables it places: both inside the cubin.
            let header = std::slice::from_raw_parts(image, 64);
            let tables = crate::core::module::elf_tables_end(header)?;
            return crate::core::module::elf_len(std::slice::from_raw_parts(image, tables));
        }
        Ok(CStr::from_ptr(image.cast::<c_char>())
            .to_bytes_with_nul()
            .len())
    }
}

/// Loads a module from a module image (`cuModuleLoadData`): a fat binary, the wrapper nvcc
/// registers around one, or PTX.
///
/// # Safety
///
/// `image` is null or a module image of one of those kinds, readable while this runs.
pub(crate) unsafe fn load(image: *const c_void, library: bool) -> Result<*mut Module, CuError> {
    session()?;
    if image.is_null() {
        return Err(CuError::INVALID_VALUE);
    }
    // SAFETY: every module image starts with at least 4 readable bytes.
    if unsafe { image.cast::<u32>().read_unaligned() } == FATBIN_WRAPPER_MAGIC {
        // What nvcc's host code registers, which the static runtime passes on as is.
        // SAFETY: a wrapper, by its magic; the caller's contract keeps it mapped.
        return unsafe { load_wrapper(image, library) };
    }
    // SAFETY: the caller's contract: `image` is a module image.
    let len = unsafe { image_len(image.cast()) }?;
    // SAFETY: `len` bytes of the image are readable (computed from the image itself).
    let bytes = unsafe { std::slice::from_raw_parts(image.cast::<u8>(), len) };
    crate::core::module::load_bytes(bytes, library)
}

/// Loads the module of the fat binary a `__fatBinC_Wrapper_t` points to (with the units of
/// a device-linked program), as the runtime's registration does.
///
/// # Safety
///
/// `wrapper` is null or a wrapper nvcc's host code made, whose fat binaries stay mapped
/// while this runs.
pub(crate) unsafe fn load_wrapper(
    wrapper: *const c_void,
    library: bool,
) -> Result<*mut Module, CuError> {
    session()?;
    if wrapper.is_null() {
        return Err(CuError::INVALID_VALUE);
    }
    // SAFETY: the caller's contract.
    let (bytes, units) = unsafe {
        (
            vcuda_fatbin::fatbin_from_wrapper::<'_>(wrapper),
            vcuda_fatbin::prelinked_fatbins::<'_>(wrapper),
        )
    };
    match (bytes, units) {
        (Ok(b), Ok(u)) => crate::core::module::load_units(b, &u, library),
        (Err(e), _) | (_, Err(e)) => {
            log::error!("cannot read a fat binary the runtime loads: {e}");
            Err(CuError::INVALID_IMAGE)
        }
    }
}

/// `cuModuleLoad` (and `cuLibraryLoadFromFile`): loads the module image in the file `path`.
///
/// # Safety
///
/// `path` is null or a NUL-terminated string.
pub(crate) unsafe fn load_file(path: *const c_char, library: bool) -> Result<*mut Module, CuError> {
    // SAFETY: the caller's NUL-terminated path; `c_path` checks it for null.
    let path = unsafe { crate::ffi::c_path(path) }.map_err(|_| CuError::INVALID_VALUE)?;
    crate::core::module::load_file(path, library)
}

/// A kernel or variable name the program passes (`CUDA_ERROR_NOT_FOUND` if not UTF-8).
///
/// # Safety
///
/// `name` is null or a NUL-terminated string that lives for `'a`.
pub(crate) unsafe fn c_name<'a>(name: *const c_char) -> Result<&'a str, CuError> {
    // SAFETY: the caller's NUL-terminated string; `c_str` checks it for null.
    let s = unsafe { crate::ffi::c_str(name) }.map_err(|_| CuError::INVALID_VALUE)?;
    s.to_str().map_err(|_| CuError::NOT_FOUND)
}

/// `cuModuleEnumerateFunctions`: writes handles of up to `num` of the module's kernels to
/// `out`, and returns them.
///
/// # Safety
///
/// `out` is null or valid for writes of `num` handles.
pub(crate) unsafe fn enumerate(
    out: *mut *const Function,
    num: std::ffi::c_uint,
    mp: *mut Module,
) -> Result<Vec<*const Function>, CuError> {
    let fs = crate::core::module::enumerate(!out.is_null(), num, mp)?;
    for (i, &f) in fs.iter().enumerate() {
        // SAFETY: the caller's array of `num` handles (`enumerate` gives at most `num`).
        unsafe { out.add(i).write_unaligned(f) };
    }
    Ok(fs)
}
