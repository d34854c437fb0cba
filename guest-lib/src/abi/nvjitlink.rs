// SPDX-License-Identifier: Apache-2.0 OR MIT
//! nvJitLink (`libnvJitLink.so.13`), the linker `pip install 'numba-cuda[cu13]'` brings:
//! Numba (through `cuda.core`) links its PTX with it and loads the "cubin" it returns. vcuda's
//! version links as its `cuLink*` does ([`crate::core::link`]): the cubin is a fat binary
//! that keeps the PTX, which vcuda's driver loads on either executor (the CPU executor runs
//! PTX; the CUDA executor hands it to the real driver, which compiles it). `vcuda lib-dir`
//! holds a `libnvJitLink.so.13` shim and `vcuda run` preloads it, so loaders that look for
//! an already-loaded nvJitLink first (cuda-pathfinder does) take vcuda's over the wheel's.
//!
//! Options: `-arch=sm_NN` (or `compute_NN`) is required, as by NVIDIA's; `-ptx` asks for
//! linked PTX (one PTX unit only); the optimization, debug and diagnostic options are
//! accepted (and passed to NVIDIA's linker for LTO-IR). Inputs: PTX and fat binaries (their
//! PTX); LTO-IR, which Numba writes when it finds an nvJitLink, is turned into PTX by
//! NVIDIA's own nvJitLink where the program has it ([`super::nvjitlink_lto`]); cubins,
//! objects and libraries (`libcudadevrt.a`) fail with the reason in the error log.

use std::ffi::{CStr, c_char, c_uint, c_void};

use crate::core::link::{self, Input, Kind};
use crate::error::JitLinkError;

/// `nvJitLinkInputType`.
const INPUT_CUBIN: c_uint = 1;
const INPUT_PTX: c_uint = 2;
const INPUT_LTOIR: c_uint = 3;
const INPUT_FATBIN: c_uint = 4;
const INPUT_OBJECT: c_uint = 5;
const INPUT_LIBRARY: c_uint = 6;
const INPUT_ANY: c_uint = 10;

/// The nvJitLink version this library answers (`nvJitLinkVersion`).
const VERSION: (c_uint, c_uint) = (13, 0);

/// Options with no effect here (compiler tuning, debug information, diagnostics), by
/// prefix.
const IGNORED_OPTIONS: &[&str] = &[
    "-O",
    "-g",
    "-lineinfo",
    "-maxrregcount",
    "-time",
    "-verbose",
    "-kernels-used",
    "-variables-used",
    "-optimize-unused-variables",
    "-ftz",
    "-prec-div",
    "-prec-sqrt",
    "-fma",
    "-split-compile",
    "-jump-table-density",
    "-no-cache",
    "-device-stack-protector",
    "-Xptxas",
    "-Xnvvm",
    "-Xfatbinary",
];

/// A link (`nvJitLinkHandle`).
#[derive(Debug, Default)]
pub struct Link {
    options: Vec<String>,
    /// `-maxrregcount=N`.
    max_registers: Option<u32>,
    ptx_output: bool,
    inputs: Vec<Input>,
    /// LTO-IR inputs and their names, linked to PTX at completion
    /// ([`super::nvjitlink_lto`]).
    ltoir: Vec<(Vec<u8>, String)>,
    cubin: Option<Vec<u8>>,
    ptx: Option<Vec<u8>>,
    error_log: String,
    info_log: String,
}

impl Link {
    /// Fails with `e`, saying `why` in the error log.
    fn fail(&mut self, e: JitLinkError, why: &str) -> JitLinkError {
        log::warn!("nvJitLink: {why}");
        self.error_log.push_str(why);
        self.error_log.push('\n');
        e
    }

    fn options(&mut self, opts: &[String]) -> Result<(), JitLinkError> {
        let mut arch = false;
        for o in opts {
            if let Some(a) = o.strip_prefix("-arch=") {
                if !(a.starts_with("sm_") || a.starts_with("compute_")) {
                    return Err(self.fail(
                        JitLinkError::UNRECOGNIZED_OPTION,
                        &format!("unrecognized architecture {a}"),
                    ));
                }
                arch = true;
            } else if let Some(n) = o.strip_prefix("-maxrregcount=") {
                match n.parse::<u32>() {
                    Ok(n) => self.max_registers = Some(n),
                    Err(_) => {
                        return Err(self.fail(
                            JitLinkError::UNRECOGNIZED_OPTION,
                            &format!("bad register count in {o}"),
                        ));
                    }
                }
            } else if o == "-ptx" {
                self.ptx_output = true;
            } else if o == "-lto" {
                // LTO-IR inputs go through NVIDIA's nvJitLink (see the module docs).
            } else if !IGNORED_OPTIONS.iter().any(|p| o.starts_with(p)) {
                return Err(self.fail(
                    JitLinkError::UNRECOGNIZED_OPTION,
                    &format!("unrecognized option {o}"),
                ));
            }
        }
        if !arch {
            return Err(self.fail(JitLinkError::MISSING_ARCH, "-arch=sm_NN not given"));
        }
        self.options = opts.to_vec();
        Ok(())
    }

    fn add(&mut self, kind: c_uint, data: &[u8], name: &str) -> Result<(), JitLinkError> {
        if self.cubin.is_some() {
            return Err(self.fail(
                JitLinkError::INVALID_INPUT,
                "input added after the link completed",
            ));
        }
        let k = match kind {
            INPUT_PTX => Ok(Kind::Ptx),
            INPUT_FATBIN => Ok(Kind::Fatbin),
            INPUT_LTOIR => Ok(Kind::Ltoir),
            INPUT_ANY => link::classify(data),
            INPUT_CUBIN | INPUT_OBJECT => {
                Err("a cubin or object (machine code): vcuda links PTX and fat binaries only")
            }
            INPUT_LIBRARY => link::classify(data),
            _ => {
                return Err(self.fail(
                    JitLinkError::UNRECOGNIZED_INPUT,
                    &format!("{name}: input type {kind}"),
                ));
            }
        };
        match k {
            Ok(Kind::Ptx) => self.inputs.push(Input::Ptx(data.to_vec())),
            Ok(Kind::Fatbin) => self.inputs.push(Input::Fatbin(data.to_vec())),
            Ok(Kind::Ltoir) => self.ltoir.push((data.to_vec(), name.to_owned())),
            Ok(Kind::DeviceRuntime) => self.inputs.push(Input::DeviceRuntime),
            Err(why) => {
                return Err(self.fail(JitLinkError::INVALID_INPUT, &format!("{name}: {why}")));
            }
        }
        Ok(())
    }

    fn complete(&mut self) -> Result<(), JitLinkError> {
        if !self.ltoir.is_empty() {
            let ltoir = std::mem::take(&mut self.ltoir);
            match super::nvjitlink_lto::ltoir_to_ptx(&self.options, &ltoir) {
                // The LTO-ed code first: it holds the kernels the other inputs serve.
                Ok(ptx) => self.inputs.insert(0, Input::Ptx(ptx)),
                Err(why) => {
                    return Err(self.fail(
                        JitLinkError::FINALIZE,
                        &format!(
                            "LTO-IR needs NVIDIA's nvJitLink, which vcuda runs to make PTX: {why}"
                        ),
                    ));
                }
            }
        }
        link::limit_registers(&mut self.inputs, self.max_registers);
        let cubin = match link::link(&self.inputs) {
            Ok(c) => c,
            Err(why) => return Err(self.fail(JitLinkError::FINALIZE, &why)),
        };
        if self.ptx_output {
            match link::linked_ptx(&self.inputs) {
                Ok(p) => self.ptx = Some(p),
                Err(why) => return Err(self.fail(JitLinkError::FINALIZE, &why)),
            }
        }
        self.cubin = Some(cubin);
        Ok(())
    }
}

fn link_mut<'a>(h: *mut Link) -> Result<&'a mut Link, JitLinkError> {
    // SAFETY: a handle from nvJitLinkCreate not yet destroyed (nvJitLink's contract).
    unsafe { h.as_mut() }.ok_or(JitLinkError::INVALID_INPUT)
}

/// Writes `v` to `p` (nvJitLink's output arguments).
///
/// # Safety
///
/// `p` is null or valid for a write of `T`.
unsafe fn out<T>(p: *mut T, v: T) -> Result<(), JitLinkError> {
    if p.is_null() {
        return Err(JitLinkError::NULL_INPUT);
    }
    // SAFETY: non-null (checked) and valid for writes (the caller's guarantee).
    unsafe { p.write(v) };
    Ok(())
}

/// Copies `bytes` to `dst` (a buffer the caller sized with the matching `...Size` call).
///
/// # Safety
///
/// `dst` is null or valid for `bytes.len()` bytes of writes.
unsafe fn copy_out(dst: *mut c_void, bytes: &[u8]) -> Result<(), JitLinkError> {
    if dst.is_null() {
        return Err(JitLinkError::NULL_INPUT);
    }
    // SAFETY: `dst` holds `bytes.len()` bytes (the caller's guarantee), and cannot overlap
    // the link's own buffer.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst.cast::<u8>(), bytes.len()) };
    Ok(())
}

/// A log with its terminating NUL.
fn log_bytes(log: &str) -> Vec<u8> {
    let mut v = log.as_bytes().to_vec();
    v.push(0);
    v
}

entry_lib! {
    fn nvJitLinkCreate(handle: *mut *mut Link, num_options: u32, options: *const *const c_char) -> Result<(), JitLinkError> {
        if handle.is_null() || (num_options > 0 && options.is_null()) {
            return Err(JitLinkError::NULL_INPUT);
        }
        // SAFETY: `num_options` option strings (nvJitLink's contract).
        let opts: Vec<String> = (0..num_options as usize)
            .map(|i| unsafe { *options.add(i) })
            .filter(|p| !p.is_null())
            // SAFETY: each a NUL-terminated string (nvJitLink's contract).
            .map(|p| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
            .collect();
        let mut l = Box::new(Link::default());
        l.options(&opts)?;
        // SAFETY: checked non-null; the caller's output pointer.
        unsafe { out(handle, Box::into_raw(l)) }
    }

    fn nvJitLinkDestroy(handle: *mut *mut Link) -> Result<(), JitLinkError> {
        if handle.is_null() {
            return Err(JitLinkError::NULL_INPUT);
        }
        // SAFETY: the caller's handle variable.
        let h = unsafe { handle.read() };
        if !h.is_null() {
            // SAFETY: from Box::into_raw in nvJitLinkCreate, destroyed once (nvJitLink's
            // contract); the variable is cleared below.
            drop(unsafe { Box::from_raw(h) });
        }
        // SAFETY: as above.
        unsafe { handle.write(std::ptr::null_mut()) };
        Ok(())
    }

    fn nvJitLinkAddData(handle: *mut Link, kind: c_uint, data: *const c_void, size: usize, name: *const c_char) -> Result<(), JitLinkError> {
        let l = link_mut(handle)?;
        if data.is_null() || size == 0 {
            return Err(l.fail(JitLinkError::NULL_INPUT, "an input without data"));
        }
        // SAFETY: `size` readable bytes at `data` (nvJitLink's contract).
        let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) };
        let name = if name.is_null() {
            "(unnamed)".to_owned()
        } else {
            // SAFETY: a NUL-terminated name (nvJitLink's contract).
            unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned()
        };
        l.add(kind, bytes, &name)
    }

    fn nvJitLinkAddFile(handle: *mut Link, kind: c_uint, path: *const c_char) -> Result<(), JitLinkError> {
        let l = link_mut(handle)?;
        if path.is_null() {
            return Err(JitLinkError::NULL_INPUT);
        }
        // SAFETY: a NUL-terminated path (nvJitLink's contract).
        let p = unsafe { CStr::from_ptr(path) }.to_string_lossy().into_owned();
        match std::fs::read(&p) {
            Ok(bytes) => l.add(kind, &bytes, &p),
            Err(e) => Err(l.fail(JitLinkError::INVALID_INPUT, &format!("{p}: {e}"))),
        }
    }

    fn nvJitLinkComplete(handle: *mut Link) -> Result<(), JitLinkError> {
        link_mut(handle)?.complete()
    }

    fn nvJitLinkGetLinkedCubinSize(handle: *mut Link, size: *mut usize) -> Result<(), JitLinkError> {
        let l = link_mut(handle)?;
        let n = l.cubin.as_ref().map(Vec::len).ok_or(JitLinkError::INVALID_INPUT)?;
        // SAFETY: the caller's output pointer.
        unsafe { out(size, n) }
    }

    fn nvJitLinkGetLinkedCubin(handle: *mut Link, cubin: *mut c_void) -> Result<(), JitLinkError> {
        let l = link_mut(handle)?;
        let c = l.cubin.as_ref().ok_or(JitLinkError::INVALID_INPUT)?;
        // SAFETY: a buffer of nvJitLinkGetLinkedCubinSize bytes (nvJitLink's contract).
        unsafe { copy_out(cubin, c) }
    }

    fn nvJitLinkGetLinkedPtxSize(handle: *mut Link, size: *mut usize) -> Result<(), JitLinkError> {
        let l = link_mut(handle)?;
        let n = l.ptx.as_ref().map(Vec::len).ok_or(JitLinkError::INVALID_INPUT)?;
        // SAFETY: the caller's output pointer.
        unsafe { out(size, n) }
    }

    fn nvJitLinkGetLinkedPtx(handle: *mut Link, ptx: *mut c_char) -> Result<(), JitLinkError> {
        let l = link_mut(handle)?;
        let p = l.ptx.as_ref().ok_or(JitLinkError::INVALID_INPUT)?;
        // SAFETY: a buffer of nvJitLinkGetLinkedPtxSize bytes (nvJitLink's contract).
        unsafe { copy_out(ptx.cast(), p) }
    }

    fn nvJitLinkGetLinkedLTOIRSize(handle: *mut Link, _size: *mut usize) -> Result<(), JitLinkError> {
        link_mut(handle)?;
        Err(JitLinkError::LTO_NOT_ENABLED)
    }

    fn nvJitLinkGetLinkedLTOIR(handle: *mut Link, _ltoir: *mut c_void) -> Result<(), JitLinkError> {
        link_mut(handle)?;
        Err(JitLinkError::LTO_NOT_ENABLED)
    }

    fn nvJitLinkGetErrorLogSize(handle: *mut Link, size: *mut usize) -> Result<(), JitLinkError> {
        let n = log_bytes(&link_mut(handle)?.error_log).len();
        // SAFETY: the caller's output pointer.
        unsafe { out(size, n) }
    }

    fn nvJitLinkGetErrorLog(handle: *mut Link, log: *mut c_char) -> Result<(), JitLinkError> {
        let b = log_bytes(&link_mut(handle)?.error_log);
        // SAFETY: a buffer of nvJitLinkGetErrorLogSize bytes (nvJitLink's contract).
        unsafe { copy_out(log.cast(), &b) }
    }

    fn nvJitLinkGetInfoLogSize(handle: *mut Link, size: *mut usize) -> Result<(), JitLinkError> {
        let n = log_bytes(&link_mut(handle)?.info_log).len();
        // SAFETY: the caller's output pointer.
        unsafe { out(size, n) }
    }

    fn nvJitLinkGetInfoLog(handle: *mut Link, log: *mut c_char) -> Result<(), JitLinkError> {
        let b = log_bytes(&link_mut(handle)?.info_log);
        // SAFETY: a buffer of nvJitLinkGetInfoLogSize bytes (nvJitLink's contract).
        unsafe { copy_out(log.cast(), &b) }
    }

    fn nvJitLinkVersion(major: *mut c_uint, minor: *mut c_uint) -> Result<(), JitLinkError> {
        // SAFETY: the caller's output pointers.
        unsafe {
            out(major, VERSION.0)?;
            out(minor, VERSION.1)
        }
    }
}
