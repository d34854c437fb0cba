// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The JIT linker (`cuLink*`) over [`crate::core::link`]: PTX and fat binaries link into a
//! fat binary holding their PTX. Cubins, objects and libraries hold machine code: those
//! answer `CUDA_ERROR_NOT_SUPPORTED` with the reason in the error log.

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};

use super::out;
use crate::core::link::{self, Input};
use crate::error::CuError;

/// `CUjitInputType`.
const INPUT_PTX: c_int = 1;
const INPUT_FATBINARY: c_int = 2;
/// `CU_JIT_INPUT_LIBRARY`: an archive; vcuda takes `libcudadevrt.a` only (`core::link`).
const INPUT_LIBRARY: c_int = 4;
/// `CUjit_option`: the most registers a thread may use (`CU_JIT_MAX_REGISTERS`).
const MAX_REGISTERS: c_int = 0;
/// `CUjit_option`: the error log buffer and its size.
const ERROR_LOG_BUFFER: c_int = 5;
const ERROR_LOG_BUFFER_SIZE_BYTES: c_int = 6;
const INFO_LOG_BUFFER: c_int = 3;
const INFO_LOG_BUFFER_SIZE_BYTES: c_int = 4;

/// A link in progress (`CUlinkState`).
pub struct LinkState {
    inputs: Vec<Input>,
    max_registers: Option<u32>,
    output: Vec<u8>,
    error_log: Option<(*mut c_char, usize)>,
}

/// The log buffers among JIT `options`: each is cleared, and the error log is kept to write
/// the reason a link fails into.
///
/// # Safety
///
/// `options` and `values` are null or hold `n` entries each (the driver API's contract).
unsafe fn log_buffers(
    n: c_uint,
    options: *const c_int,
    values: *const *mut c_void,
) -> Option<(*mut c_char, usize)> {
    if options.is_null() || values.is_null() {
        return None;
    }
    // SAFETY: `n` entries each (the caller's contract).
    let (opts, vals) = unsafe {
        (
            std::slice::from_raw_parts(options, n as usize),
            std::slice::from_raw_parts(values, n as usize),
        )
    };
    let find = |o: c_int| opts.iter().position(|&x| x == o).map(|i| vals[i]);
    for (buf, size) in [
        (INFO_LOG_BUFFER, INFO_LOG_BUFFER_SIZE_BYTES),
        (ERROR_LOG_BUFFER, ERROR_LOG_BUFFER_SIZE_BYTES),
    ] {
        if let (Some(b), Some(s)) = (find(buf), find(size))
            && !b.is_null()
            && s as usize > 0
        {
            // SAFETY: a caller's log buffer of at least one byte.
            unsafe { *b.cast::<c_char>() = 0 };
        }
    }
    match (find(ERROR_LOG_BUFFER), find(ERROR_LOG_BUFFER_SIZE_BYTES)) {
        (Some(b), Some(s)) if !b.is_null() && s as usize > 0 => Some((b.cast(), s as usize)),
        _ => None,
    }
}

/// `CU_JIT_MAX_REGISTERS` among JIT `options`, if given.
///
/// # Safety
///
/// `options` and `values` are null or hold `n` entries each (the driver API's contract).
unsafe fn max_registers(
    n: c_uint,
    options: *const c_int,
    values: *const *mut c_void,
) -> Option<u32> {
    if options.is_null() || values.is_null() {
        return None;
    }
    // SAFETY: `n` entries each (the caller's contract).
    let (opts, vals) = unsafe {
        (
            std::slice::from_raw_parts(options, n as usize),
            std::slice::from_raw_parts(values, n as usize),
        )
    };
    // The value is an unsigned int stored in the pointer-sized slot.
    opts.iter()
        .position(|&o| o == MAX_REGISTERS)
        .map(|i| vals[i] as usize as u32)
}

impl LinkState {
    fn fail(&self, why: &str) -> CuError {
        if let Some((buf, len)) = self.error_log {
            let n = why.len().min(len - 1);
            // SAFETY: the caller's error log buffer of `len` bytes, still valid while the
            // link state lives (the driver API's contract); we write n + 1 <= len bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(why.as_ptr().cast::<c_char>(), buf, n);
                *buf.add(n) = 0;
            }
        }
        log::warn!("cuLinkComplete: {why}");
        CuError::NOT_SUPPORTED
    }

    fn add(&mut self, kind: c_int, data: &[u8]) -> Result<(), CuError> {
        match kind {
            INPUT_PTX => {
                self.inputs.push(Input::Ptx(data.to_vec()));
                Ok(())
            }
            INPUT_FATBINARY => {
                self.inputs.push(Input::Fatbin(data.to_vec()));
                Ok(())
            }
            INPUT_LIBRARY => match link::classify(data) {
                Ok(link::Kind::DeviceRuntime) => {
                    self.inputs.push(Input::DeviceRuntime);
                    Ok(())
                }
                Ok(_) => Err(self.fail("a library input that is not an archive")),
                Err(why) => Err(self.fail(why)),
            },
            _ => Err(self.fail(
                "vcuda links PTX, fat binaries and libcudadevrt.a only (no cubins or objects)",
            )),
        }
    }
}

fn state<'a>(s: *mut LinkState) -> Result<&'a mut LinkState, CuError> {
    // SAFETY: a state from cuLinkCreate not yet destroyed (the driver API's contract).
    unsafe { s.as_mut() }.ok_or(CuError::INVALID_HANDLE)
}

entry_lib! {
    fn cuLinkCreate_v2(n: c_uint, options: *mut c_int, values: *mut *mut c_void, st: *mut *mut LinkState) -> Result<(), CuError> {
        crate::core::context::current()?;
        // SAFETY: the driver API's contract for the option arrays.
        let error_log = unsafe { log_buffers(n, options, values) };
        // SAFETY: as above.
        let max_registers = unsafe { max_registers(n, options, values) };
        let s = Box::into_raw(Box::new(LinkState { inputs: Vec::new(), max_registers, output: Vec::new(), error_log }));
        // SAFETY: the caller's output pointer.
        unsafe { out(st, s) }
    }

    fn cuLinkAddData_v2(st: *mut LinkState, kind: c_int, data: *mut c_void, size: usize, _name: *const c_char, _n: c_uint, _options: *mut c_int, _values: *mut *mut c_void) -> Result<(), CuError> {
        let s = state(st)?;
        if data.is_null() || size == 0 {
            return Err(CuError::INVALID_VALUE);
        }
        // SAFETY: `size` readable bytes at `data` (the driver API's contract).
        let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) };
        s.add(kind, bytes)
    }

    fn cuLinkAddFile_v2(st: *mut LinkState, kind: c_int, path: *const c_char, _n: c_uint, _options: *mut c_int, _values: *mut *mut c_void) -> Result<(), CuError> {
        let s = state(st)?;
        if path.is_null() {
            return Err(CuError::INVALID_VALUE);
        }
        // SAFETY: a NUL-terminated path (the driver API's contract).
        let p = unsafe { CStr::from_ptr(path) }.to_string_lossy().into_owned();
        let bytes = std::fs::read(&p).map_err(|_| CuError(301))?; // CUDA_ERROR_FILE_NOT_FOUND
        s.add(kind, &bytes)
    }

    fn cuLinkComplete(st: *mut LinkState, cubin: *mut *mut c_void, size: *mut usize) -> Result<(), CuError> {
        let s = state(st)?;
        if s.inputs.is_empty() {
            return Err(CuError::INVALID_VALUE);
        }
        link::limit_registers(&mut s.inputs, s.max_registers);
        s.output = link::link(&s.inputs).map_err(|why| s.fail(&why))?;
        // SAFETY: the caller's output pointers; the image lives until cuLinkDestroy.
        unsafe {
            out(cubin, s.output.as_mut_ptr().cast())?;
            out(size, s.output.len())
        }
    }

    fn cuLinkDestroy(st: *mut LinkState) -> Result<(), CuError> {
        state(st)?;
        // SAFETY: from Box::into_raw in cuLinkCreate, destroyed once (the driver API's
        // contract).
        drop(unsafe { Box::from_raw(st) });
        Ok(())
    }
}
