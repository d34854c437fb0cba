// SPDX-License-Identifier: Apache-2.0 OR MIT
//! `cuGetProcAddress` and the runtime's `cudaGetDriverEntryPoint`: a driver API name and a
//! CUDA version give the variant of the entry point that version's `cuda.h` declared
//! (`cuMemAlloc` at 12000 is `cuMemAlloc_v2`), from this library's own exports.

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::sync::OnceLock;

use super::out;
use super::procs_gen::PROCS;
use crate::error::{CuError, Error};

/// `CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM`.
const PER_THREAD: u64 = 2;
/// `CU_GET_PROC_ADDRESS_SUCCESS`, `_SYMBOL_NOT_FOUND`, `_VERSION_NOT_SUFFICIENT`.
const FOUND: c_int = 0;
const NOT_FOUND: c_int = 1;
const VERSION_NOT_SUFFICIENT: c_int = 2;

/// The symbol exporting `name` at `version`: `Ok`, or the query result saying why not.
pub fn resolve(name: &str, version: u32, per_thread: bool) -> Result<&'static str, c_int> {
    let start = PROCS.partition_point(|p| p.0 < name);
    let all: Vec<_> = PROCS[start..].iter().take_while(|p| p.0 == name).collect();
    if all.is_empty() {
        return Err(NOT_FOUND);
    }
    let newest = |pt: bool| {
        all.iter()
            .filter(|p| p.1 == pt && p.2 <= version)
            .max_by_key(|p| p.2)
            .map(|p| p.3)
    };
    let pick = if per_thread {
        newest(true).or_else(|| newest(false))
    } else {
        newest(false)
    };
    pick.ok_or(VERSION_NOT_SUFFICIENT)
}

/// This library's own export `symbol` (not whatever another library may define).
fn own_symbol(symbol: &str) -> Option<*mut c_void> {
    static SELF: OnceLock<usize> = OnceLock::new();
    let handle = *SELF.get_or_init(|| {
        // SAFETY: Dl_info is plain pointers, for which all-zero bytes are valid (null).
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        // SAFETY: dladdr only reads the address (of a function in this library) and fills
        // `info`; `dli_fname` then names this library's file.
        let ok = unsafe { libc::dladdr(own_symbol as *const c_void, &mut info) } != 0;
        if !ok || info.dli_fname.is_null() {
            return 0;
        }
        // SAFETY: `dli_fname` is a NUL-terminated path; RTLD_NOLOAD only takes a reference
        // to the already-loaded library.
        unsafe { libc::dlopen(info.dli_fname, libc::RTLD_LAZY | libc::RTLD_NOLOAD) as usize }
    });
    if handle == 0 {
        return None;
    }
    let c = CString::new(symbol).ok()?;
    // SAFETY: a live handle (kept open for the process's life) and a NUL-terminated name.
    let p = unsafe { libc::dlsym(handle as *mut c_void, c.as_ptr()) };
    (!p.is_null()).then_some(p)
}

/// Looks `symbol` up for `version` and writes the function pointer and the query result.
pub(crate) fn lookup(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: u64,
    status: *mut c_int,
) -> Result<(), CuError> {
    if symbol.is_null() || pfn.is_null() || version <= 0 || flags > 2 {
        return Err(CuError::INVALID_VALUE);
    }
    // SAFETY: a NUL-terminated name (the API's contract).
    let name = unsafe { CStr::from_ptr(symbol) }.to_str().unwrap_or("");
    let r = resolve(name, version as u32, flags & PER_THREAD != 0)
        .and_then(|s| own_symbol(s).ok_or(NOT_FOUND));
    let (p, st) = match r {
        Ok(p) => (p, FOUND),
        Err(st) => (std::ptr::null_mut(), st),
    };
    // SAFETY: the caller's output pointers (checked above; `status` may be null).
    unsafe {
        out(pfn, p)?;
        if !status.is_null() {
            out(status, st)?;
        }
    }
    // cuda.h: "The API will return CUDA_SUCCESS and set the returned pfn to NULL if the
    // requested driver function is not supported on the platform, no ABI compatible driver
    // function exists for the specified cudaVersion or if the driver symbol is invalid."
    Ok(())
}

entry_lib! {
    fn cuGetProcAddress_v2(symbol: *const c_char, pfn: *mut *mut c_void, version: c_int, flags: u64, status: *mut c_int) -> Result<(), CuError> {
        lookup(symbol, pfn, version, flags, status)
    }

    fn cuGetProcAddress(symbol: *const c_char, pfn: *mut *mut c_void, version: c_int, flags: u64) -> Result<(), CuError> {
        lookup(symbol, pfn, version, flags, std::ptr::null_mut())
    }
}

/// The runtime's view: a name that is not found is no error (the query result says so, and
/// the function pointer is null), as NVIDIA's runtime answers (measured on an H100).
pub(crate) fn runtime(r: Result<(), CuError>) -> crate::Result<()> {
    r.map_err(|e| Error(e.0))
}

entry! {
    fn cudaGetDriverEntryPoint(symbol: *const c_char, pfn: *mut *mut c_void, flags: u64, status: *mut c_int) {
        runtime(lookup(symbol, pfn, crate::client::RUNTIME_VERSION as c_int, flags, status))
    }

    fn cudaGetDriverEntryPointByVersion(symbol: *const c_char, pfn: *mut *mut c_void, version: u32, flags: u64, status: *mut c_int) {
        runtime(lookup(symbol, pfn, version as c_int, flags, status))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_to_the_variant_of_their_version() {
        assert_eq!(resolve("cuMemAlloc", 12000, false), Ok("cuMemAlloc_v2"));
        assert_eq!(resolve("cuMemAlloc", 2000, false), Ok("cuMemAlloc"));
        assert_eq!(resolve("cuCtxCreate", 12000, false), Ok("cuCtxCreate_v3"));
        assert_eq!(resolve("cuCtxCreate", 13000, false), Ok("cuCtxCreate_v4"));
        assert_eq!(
            resolve("cuMemcpyAsync", 13000, true),
            Ok("cuMemcpyAsync_ptsz")
        );
        assert_eq!(resolve("cuMemcpyAsync", 13000, false), Ok("cuMemcpyAsync"));
        assert_eq!(
            resolve("cuGetProcAddress", 13000, false),
            Ok("cuGetProcAddress_v2")
        );
        assert_eq!(
            resolve("cuCtxCreate", 1000, false),
            Err(VERSION_NOT_SUFFICIENT)
        );
        assert_eq!(resolve("cuNoSuchThing", 13000, false), Err(NOT_FOUND));
    }
}
