// SPDX-License-Identifier: Apache-2.0 OR MIT
//! LTO-IR through NVIDIA's own nvJitLink, where the program has it (the
//! `nvidia-nvjitlink` wheel beside Numba's NVVM): Numba compiles kernels to LTO-IR when it
//! finds an nvJitLink, and LTO-IR is a container only NVIDIA's linker reads. It runs on
//! the CPU (no GPU or driver involved) with `-lto -ptx`, which turns LTO-IR into PTX; that
//! PTX then links like any other input, so the image still keeps PTX.
//!
//! Where: `$VCUDA_NVJITLINK` if set, else the nvJitLink of the wheels a loaded NVIDIA
//! compiler library (libnvvm, libnvrtc, as Numba and CuPy load them) came from, found in
//! `/proc/self/maps`: `libnvJitLink.so.13` beside it (CUDA 13's wheels share one
//! `nvidia/cu13/lib`), or `nvidia/nvjitlink/lib/libnvJitLink.so.12` (CUDA 12's wheels
//! each have their own directory under `nvidia/`). It is loaded with `RTLD_LOCAL`
//! (vcuda's preloaded names keep serving everyone else) and must export `__nvJitLinkAPI`,
//! which vcuda's does not, so vcuda never calls itself.

use std::ffi::{CString, c_char, c_uint, c_void};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libloading::os::unix::{Library, RTLD_LAZY, RTLD_LOCAL, Symbol};

/// nvJitLink's entry points this needs.
struct Real {
    _lib: Library,
    create: unsafe extern "C" fn(*mut *mut c_void, u32, *const *const c_char) -> c_uint,
    destroy: unsafe extern "C" fn(*mut *mut c_void) -> c_uint,
    add_data:
        unsafe extern "C" fn(*mut c_void, c_uint, *const c_void, usize, *const c_char) -> c_uint,
    complete: unsafe extern "C" fn(*mut c_void) -> c_uint,
    ptx_size: unsafe extern "C" fn(*mut c_void, *mut usize) -> c_uint,
    ptx: unsafe extern "C" fn(*mut c_void, *mut c_char) -> c_uint,
    log_size: unsafe extern "C" fn(*mut c_void, *mut usize) -> c_uint,
    log: unsafe extern "C" fn(*mut c_void, *mut c_char) -> c_uint,
}

/// `NVJITLINK_INPUT_LTOIR`.
const INPUT_LTOIR: c_uint = 3;

/// The directories of loaded NVIDIA compiler libraries, from `/proc/self/maps`.
fn wheel_dirs() -> Vec<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = Vec::new();
    for line in maps.lines() {
        let Some(path) = line.split_whitespace().nth(5) else {
            continue;
        };
        let p = Path::new(path);
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if (name.starts_with("libnvvm.so") || name.starts_with("libnvrtc.so"))
            && let Some(d) = p.parent()
            && !dirs.iter().any(|x| x == d)
        {
            dirs.push(d.to_path_buf());
        }
    }
    dirs
}

/// Where NVIDIA's nvJitLink would be, given the directory `d` of a loaded compiler library.
fn candidates(d: &Path) -> Vec<PathBuf> {
    let mut c = vec![d.join("libnvJitLink.so.13"), d.join("libnvJitLink.so.12")];
    // CUDA 12's wheels: `.../nvidia/cuda_nvcc/nvvm/lib64`, `.../nvidia/cuda_nvrtc/lib`.
    if let Some(nvidia) = d
        .ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == "nvidia"))
    {
        c.push(nvidia.join("nvjitlink/lib/libnvJitLink.so.12"));
    }
    c
}

/// NVIDIA's nvJitLink at `path`, if it is one.
fn open(path: &Path) -> Result<Real, String> {
    // SAFETY: loading a shared object runs its initializers; NVIDIA's nvJitLink has no
    // requirements on them. RTLD_LOCAL keeps its names out of the global scope.
    let lib = unsafe { Library::open(Some(path), RTLD_LAZY | RTLD_LOCAL) }
        .map_err(|e| format!("{}: {e}", path.display()))?;
    // SAFETY: looking up a name; only its presence matters (it marks NVIDIA's library).
    if unsafe { lib.get::<*const c_void>(b"__nvJitLinkAPI\0") }.is_err() {
        return Err(format!("{} is not NVIDIA's nvJitLink", path.display()));
    }
    macro_rules! sym {
        ($name:literal) => {{
            // SAFETY: the name is one of nvJitLink's documented functions, with the
            // signature of the field it fills (nvJitLink.h).
            let s: Symbol<_> = unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                .map_err(|e| format!("{}: {e}", path.display()))?;
            *s
        }};
    }
    Ok(Real {
        create: sym!("nvJitLinkCreate"),
        destroy: sym!("nvJitLinkDestroy"),
        add_data: sym!("nvJitLinkAddData"),
        complete: sym!("nvJitLinkComplete"),
        ptx_size: sym!("nvJitLinkGetLinkedPtxSize"),
        ptx: sym!("nvJitLinkGetLinkedPtx"),
        log_size: sym!("nvJitLinkGetErrorLogSize"),
        log: sym!("nvJitLinkGetErrorLog"),
        _lib: lib,
    })
}

/// NVIDIA's nvJitLink, found once.
fn real() -> Result<&'static Real, String> {
    static REAL: OnceLock<Result<Real, String>> = OnceLock::new();
    let found = |p: &Path| {
        log::info!(
            "LTO-IR is linked to PTX by NVIDIA's nvJitLink at {}",
            p.display()
        );
    };
    REAL.get_or_init(|| {
        if let Some(p) = std::env::var_os("VCUDA_NVJITLINK") {
            return open(Path::new(&p)).inspect(|_| found(Path::new(&p)));
        }
        let mut why = Vec::new();
        for p in wheel_dirs().iter().flat_map(|d| candidates(d)) {
            if p.exists() {
                match open(&p) {
                    Ok(r) => {
                        found(&p);
                        return Ok(r);
                    }
                    Err(e) => why.push(e),
                }
            }
        }
        why.push(
            "no NVIDIA nvJitLink found beside a loaded libnvvm or libnvrtc (set VCUDA_NVJITLINK)"
                .into(),
        );
        Err(why.join("; "))
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// Links `inputs` (LTO-IR, with their names) with NVIDIA's nvJitLink into PTX (without its
/// terminating NUL), with `options` (the caller's, less `-lto` and `-ptx`, which this adds).
pub fn ltoir_to_ptx(options: &[String], inputs: &[(Vec<u8>, String)]) -> Result<Vec<u8>, String> {
    let r = real()?;
    let mut opts: Vec<CString> = options
        .iter()
        .filter(|o| *o != "-lto" && *o != "-ptx")
        .filter_map(|o| CString::new(o.as_str()).ok())
        .collect();
    opts.push(c"-lto".into());
    opts.push(c"-ptx".into());
    let ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
    let mut h: *mut c_void = std::ptr::null_mut();
    // SAFETY: nvJitLink's contract: an output handle and `ptrs.len()` option strings, which
    // live through the call.
    let st = unsafe { (r.create)(&mut h, ptrs.len() as u32, ptrs.as_ptr()) };
    if st != 0 || h.is_null() {
        return Err(format!(
            "NVIDIA's nvJitLink refused the options (error {st})"
        ));
    }
    let result = (|| {
        for (data, name) in inputs {
            let name = CString::new(name.replace('\0', "")).unwrap_or_default();
            // SAFETY: a live handle; `data` holds `data.len()` bytes for the call.
            let st = unsafe {
                (r.add_data)(
                    h,
                    INPUT_LTOIR,
                    data.as_ptr().cast(),
                    data.len(),
                    name.as_ptr(),
                )
            };
            if st != 0 {
                return Err(error_log(r, h, st));
            }
        }
        // SAFETY: a live handle.
        let st = unsafe { (r.complete)(h) };
        if st != 0 {
            return Err(error_log(r, h, st));
        }
        let mut n = 0usize;
        // SAFETY: a live, completed handle and an output size.
        let st = unsafe { (r.ptx_size)(h, &mut n) };
        if st != 0 {
            return Err(error_log(r, h, st));
        }
        let mut ptx = vec![0u8; n];
        // SAFETY: a buffer of the size nvJitLink gave.
        let st = unsafe { (r.ptx)(h, ptx.as_mut_ptr().cast()) };
        if st != 0 {
            return Err(error_log(r, h, st));
        }
        while ptx.last() == Some(&0) {
            ptx.pop();
        }
        Ok(ptx)
    })();
    // SAFETY: destroys the handle made above, once.
    unsafe { (r.destroy)(&mut h) };
    result
}

/// NVIDIA's error log for a failed call that returned `st`.
fn error_log(r: &Real, h: *mut c_void, st: c_uint) -> String {
    let mut n = 0usize;
    // SAFETY: a live handle and an output size.
    if unsafe { (r.log_size)(h, &mut n) } != 0 || n == 0 {
        return format!("NVIDIA's nvJitLink failed (error {st})");
    }
    let mut buf = vec![0u8; n];
    // SAFETY: a buffer of the size nvJitLink gave.
    unsafe { (r.log)(h, buf.as_mut_ptr().cast()) };
    let text = String::from_utf8_lossy(&buf);
    format!(
        "NVIDIA's nvJitLink failed (error {st}): {}",
        text.trim_end_matches('\0').trim()
    )
}
