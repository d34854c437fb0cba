// SPDX-License-Identifier: Apache-2.0 OR MIT
//! cuBLAS (`libcublas.so.13` and `.12`): handles, vector and matrix transfers, and the BLAS
//! routines, forwarded to the backend as `BlasCall` requests.
//!
//! The handle's stream, pointer mode and math mode live here and travel with every call,
//! so setting them costs no round trip. Calls that produce nothing on the host are posted
//! without waiting (their arguments are checked here first, with the same checks the
//! backend applies), like the asynchronous kernels cuBLAS launches; a reduction in host
//! pointer mode waits for its result. Names the library exports but does not implement
//! return `CUBLAS_STATUS_NOT_SUPPORTED` (see `entry_stub!`).

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_longlong, c_void};
use std::sync::Mutex;

use vcuda_protocol::blas::validate;
use vcuda_protocol::lib::{BLAS_DEVICE_POINTERS, BLAS_NOT_SUPPORTED, dtype, func};
use vcuda_protocol::{BlasCallReq, BlasCallResp, BlasCreateReq, HandleReq, HandleResp, ops};

use super::memory::copy_2d;
use super::stream::stream_handle;
use crate::client::{self, Client};
use crate::entry::Error;
use crate::ffi::{cudaStream_t, memcpy_kind};
use crate::state;

/// `cublasHandle_t`.
type H = *mut c_void;

const SUCCESS: u32 = 0;
const NOT_INITIALIZED: u32 = 1;
const INVALID_VALUE: u32 = 7;
const MAPPING_ERROR: u32 = 11;
const EXECUTION_FAILED: u32 = 13;

/// The cuBLAS version reported (13.0.2).
const VERSION: c_int = 130_002;
const VERSION_PARTS: [c_int; 3] = [13, 0, 2];

const R32: u32 = dtype::R_32F;
const R64: u32 = dtype::R_64F;
const C32: u32 = dtype::C_32F;
const C64: u32 = dtype::C_64F;

#[derive(Clone, Copy, Debug)]
struct HandleState {
    stream: usize,
    pointer_mode: c_int,
    math_mode: c_int,
    atomics: c_int,
}

static HANDLES: Mutex<Option<HashMap<u64, HandleState>>> = Mutex::new(None);

fn with_handles<R>(f: impl FnOnce(&mut HashMap<u64, HandleState>) -> R) -> R {
    let mut g = HANDLES.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(HashMap::new))
}

fn handle_state(h: H) -> Result<HandleState, u32> {
    with_handles(|m| m.get(&(h as u64)).copied()).ok_or(NOT_INITIALIZED)
}

fn update(h: H, f: impl FnOnce(&mut HandleState)) -> u32 {
    with_handles(|m| match m.get_mut(&(h as u64)) {
        Some(s) => {
            f(s);
            SUCCESS
        }
        None => NOT_INITIALIZED,
    })
}

/// A reply status as a `cublasStatus_t`: library statuses pass through; a CUDA error
/// (a memory fault, a lost backend, a pending asynchronous error) means the operation
/// could not run.
fn blas_err(e: Error) -> u32 {
    match e.0 {
        1 | 3 | 7 | 8 | 11 | 13 | 14 | 15 | 16 => e.0,
        _ => EXECUTION_FAILED,
    }
}

fn run(f: impl FnOnce() -> Result<(), u32>) -> u32 {
    match f() {
        Ok(()) => SUCCESS,
        Err(e) => e,
    }
}

fn elem_size(t: u32) -> usize {
    match t {
        dtype::R_16F => 2,
        R32 => 4,
        R64 | C32 => 8,
        C64 => 16,
        _ => 0,
    }
}

/// One call being built.
struct Call {
    r: BlasCallReq,
    c: &'static Client,
}

fn begin(h: H, f: u32, ty: u32) -> Result<Call, u32> {
    let s = handle_state(h)?;
    let c = client::client().map_err(|_| NOT_INITIALIZED)?;
    let stream = stream_handle(c, s.stream as cudaStream_t, false).map_err(|_| EXECUTION_FAILED)?;
    Ok(Call {
        r: BlasCallReq {
            handle: h as u64,
            stream,
            func: f,
            flags: if s.pointer_mode == 1 {
                BLAS_DEVICE_POINTERS
            } else {
                0
            },
            type_a: ty,
            type_b: ty,
            type_c: ty,
            math_mode: s.math_mode as u32,
            ..Default::default()
        },
        c,
    })
}

/// A scalar argument: its value (host pointer mode) or its device address.
fn scalar(device: bool, p: *const c_void, size: usize) -> Result<[u8; 16], u32> {
    if p.is_null() || size > 16 {
        return Err(INVALID_VALUE);
    }
    let mut out = [0u8; 16];
    if device {
        out[..8].copy_from_slice(&(p as u64).to_le_bytes());
    } else {
        // SAFETY: in host pointer mode the caller passes a pointer to a scalar of this type.
        let src = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), size) };
        out[..size].copy_from_slice(src);
    }
    Ok(out)
}

impl Call {
    fn device(&self) -> bool {
        self.r.flags & BLAS_DEVICE_POINTERS != 0
    }

    fn alpha(&mut self, p: *const c_void, size: usize) -> Result<&mut Self, u32> {
        self.r.alpha = scalar(self.device(), p, size)?;
        Ok(self)
    }

    fn beta(&mut self, p: *const c_void, size: usize) -> Result<&mut Self, u32> {
        self.r.beta = scalar(self.device(), p, size)?;
        Ok(self)
    }

    /// Posts an operation with no host result.
    fn post(&self) -> Result<(), u32> {
        validate(&self.r)?;
        self.c.post::<ops::BlasCall>(&self.r).map_err(blas_err)
    }

    /// Sends a call and waits for it (for results the host needs).
    fn wait(&self) -> Result<[u8; 16], u32> {
        validate(&self.r)?;
        let r: BlasCallResp = self.c.call::<ops::BlasCall>(&self.r).map_err(blas_err)?;
        Ok(r.value)
    }

    /// A reduction's `size`-byte result: written to `out` on the host, or (device pointer
    /// mode) by the backend to device address `out`, asynchronously.
    fn reduce(&mut self, out: *mut c_void, size: usize) -> Result<(), u32> {
        if out.is_null() {
            return Err(INVALID_VALUE);
        }
        if self.device() {
            self.r.result = out as u64;
            return self.post();
        }
        let v = self.wait()?;
        // SAFETY: the caller passes a host pointer to a result of this type.
        unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), out.cast::<u8>(), size) };
        Ok(())
    }
}

#[allow(clippy::too_many_arguments)]
fn reduce1(
    h: H,
    f: u32,
    ty: u32,
    n: c_int,
    x: *const c_void,
    incx: c_int,
    out: *mut c_void,
    size: usize,
) -> u32 {
    run(|| {
        let mut c = begin(h, f, ty)?;
        (c.r.n, c.r.x, c.r.incx) = (n.into(), x as u64, incx.into());
        c.reduce(out, size)
    })
}

/// `asum`/`nrm2`: a real result of the vector's precision.
fn real_reduce(
    h: H,
    f: u32,
    ty: u32,
    n: c_int,
    x: *const c_void,
    incx: c_int,
    out: *mut c_void,
) -> u32 {
    let size = if matches!(ty, R32 | C32) { 4 } else { 8 };
    reduce1(h, f, ty, n, x, incx, out, size)
}

fn index_reduce(
    h: H,
    f: u32,
    ty: u32,
    n: c_int,
    x: *const c_void,
    incx: c_int,
    out: *mut c_int,
) -> u32 {
    reduce1(h, f, ty, n, x, incx, out.cast(), 4)
}

#[allow(clippy::too_many_arguments)]
fn dot(
    h: H,
    f: u32,
    ty: u32,
    n: c_int,
    x: *const c_void,
    incx: c_int,
    y: *const c_void,
    incy: c_int,
    out: *mut c_void,
) -> u32 {
    run(|| {
        let mut c = begin(h, f, ty)?;
        (c.r.n, c.r.x, c.r.incx, c.r.y, c.r.incy) =
            (n.into(), x as u64, incx.into(), y as u64, incy.into());
        c.reduce(out, elem_size(ty))
    })
}

/// `axpy`, `copy`, `swap`, `rot` (`alpha` and `beta` are the scalars, or null).
#[allow(clippy::too_many_arguments)]
fn vec2(
    h: H,
    f: u32,
    ty: u32,
    n: c_int,
    alpha: *const c_void,
    beta: *const c_void,
    ssize: usize,
    x: *const c_void,
    incx: c_int,
    y: *const c_void,
    incy: c_int,
) -> u32 {
    run(|| {
        let mut c = begin(h, f, ty)?;
        if n <= 0 {
            return Ok(());
        }
        if !alpha.is_null() || f == func::AXPY || f == func::ROT {
            c.alpha(alpha, ssize)?;
        }
        if f == func::ROT {
            c.beta(beta, ssize)?;
        }
        (c.r.n, c.r.x, c.r.incx, c.r.y, c.r.incy) =
            (n.into(), x as u64, incx.into(), y as u64, incy.into());
        c.post()
    })
}

fn scal(
    h: H,
    ty: u32,
    sty: u32,
    n: c_int,
    alpha: *const c_void,
    x: *mut c_void,
    incx: c_int,
) -> u32 {
    run(|| {
        let mut c = begin(h, func::SCAL, ty)?;
        c.r.type_b = sty;
        c.alpha(alpha, elem_size(sty))?;
        (c.r.n, c.r.x, c.r.incx) = (n.into(), x as u64, incx.into());
        if n <= 0 || incx <= 0 {
            return Ok(());
        }
        c.post()
    })
}

#[allow(clippy::too_many_arguments)]
fn gemv(
    h: H,
    ty: u32,
    t: c_int,
    m: c_int,
    n: c_int,
    alpha: *const c_void,
    a: *const c_void,
    lda: c_int,
    x: *const c_void,
    incx: c_int,
    beta: *const c_void,
    y: *mut c_void,
    incy: c_int,
) -> u32 {
    run(|| {
        let mut c = begin(h, func::GEMV, ty)?;
        c.alpha(alpha, elem_size(ty))?.beta(beta, elem_size(ty))?;
        let r = &mut c.r;
        (r.trans_a, r.m, r.n, r.a, r.lda) = (t as u32, m.into(), n.into(), a as u64, lda.into());
        (r.x, r.incx, r.y, r.incy) = (x as u64, incx.into(), y as u64, incy.into());
        c.post()
    })
}

#[allow(clippy::too_many_arguments)]
fn ger(
    h: H,
    ty: u32,
    conj: bool,
    m: c_int,
    n: c_int,
    alpha: *const c_void,
    x: *const c_void,
    incx: c_int,
    y: *const c_void,
    incy: c_int,
    a: *mut c_void,
    lda: c_int,
) -> u32 {
    run(|| {
        let mut c = begin(h, func::GER, ty)?;
        c.alpha(alpha, elem_size(ty))?;
        let r = &mut c.r;
        r.trans_b = if conj { 2 } else { 0 };
        (r.m, r.n, r.a, r.lda) = (m.into(), n.into(), a as u64, lda.into());
        (r.x, r.incx, r.y, r.incy) = (x as u64, incx.into(), y as u64, incy.into());
        c.post()
    })
}

#[allow(clippy::too_many_arguments)]
fn symv(
    h: H,
    ty: u32,
    uplo: c_int,
    n: c_int,
    alpha: *const c_void,
    a: *const c_void,
    lda: c_int,
    x: *const c_void,
    incx: c_int,
    beta: *const c_void,
    y: *mut c_void,
    incy: c_int,
) -> u32 {
    run(|| {
        let mut c = begin(h, func::SYMV, ty)?;
        c.alpha(alpha, elem_size(ty))?.beta(beta, elem_size(ty))?;
        let r = &mut c.r;
        (r.uplo, r.n, r.a, r.lda) = (uplo as u32, n.into(), a as u64, lda.into());
        (r.x, r.incx, r.y, r.incy) = (x as u64, incx.into(), y as u64, incy.into());
        c.post()
    })
}

#[allow(clippy::too_many_arguments)]
fn trsv(
    h: H,
    ty: u32,
    uplo: c_int,
    t: c_int,
    diag: c_int,
    n: c_int,
    a: *const c_void,
    lda: c_int,
    x: *mut c_void,
    incx: c_int,
) -> u32 {
    run(|| {
        let mut c = begin(h, func::TRSV, ty)?;
        let r = &mut c.r;
        (r.uplo, r.trans_a, r.diag, r.n) = (uplo as u32, t as u32, diag as u32, n.into());
        (r.a, r.lda, r.x, r.incx) = (a as u64, lda.into(), x as u64, incx.into());
        c.post()
    })
}

/// The arguments of the GEMM family.
struct Gemm {
    ta: c_int,
    tb: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: *const c_void,
    a: u64,
    lda: c_int,
    b: u64,
    ldb: c_int,
    beta: *const c_void,
    c: u64,
    ldc: c_int,
}

/// Scalar bytes of a `cublasComputeType_t` for output type `tc`.
fn ex_scalar_size(compute: c_int, tc: u32) -> Result<usize, u32> {
    let complex = matches!(tc, C32 | C64);
    Ok(match compute {
        64 | 65 => 2,
        68 | 69 | 74 | 75 | 77 | 78 => {
            if complex {
                8
            } else {
                4
            }
        }
        70 | 71 => {
            if complex {
                16
            } else {
                8
            }
        }
        72 | 73 => 4,
        _ => return Err(INVALID_VALUE),
    })
}

/// The `GemmEx` type combinations every executor runs: one real or complex type
/// throughout with its own compute type, or half inputs with a half or float output.
fn common_ex(ta: u32, tb: u32, tc: u32, compute: c_int) -> bool {
    let c32 = matches!(compute, 68 | 69 | 74 | 75 | 77);
    let c64 = matches!(compute, 70 | 71);
    let same = ta == tb && tb == tc;
    match ta {
        R32 | C32 => same && c32,
        R64 | C64 => same && c64,
        dtype::R_16F => {
            tb == dtype::R_16F
                && (tc == R32 && c32 || tc == dtype::R_16F && (c32 || matches!(compute, 64 | 65)))
        }
        _ => false,
    }
}

/// Runs a GEMM: `types` = (A, B, C, compute), `batch` = (count, strides) for strided
/// batches, `array` for the pointer-array form.
fn gemm(
    h: H,
    g: &Gemm,
    types: (u32, u32, u32, c_int),
    f: u32,
    batch: Option<(c_int, [c_longlong; 3])>,
) -> u32 {
    run(|| {
        let (ta, tb, tc, compute) = types;
        let mut c = begin(h, f, ta)?;
        let ssize = if compute == 0 {
            elem_size(ta)
        } else {
            ex_scalar_size(compute, tc)?
        };
        c.alpha(g.alpha, ssize)?.beta(g.beta, ssize)?;
        let r = &mut c.r;
        (r.type_b, r.type_c, r.compute) = (tb, tc, compute as u32);
        (r.trans_a, r.trans_b, r.m, r.n, r.k) =
            (g.ta as u32, g.tb as u32, g.m.into(), g.n.into(), g.k.into());
        (r.a, r.lda, r.b, r.ldb, r.c, r.ldc) =
            (g.a, g.lda.into(), g.b, g.ldb.into(), g.c, g.ldc.into());
        if let Some((count, s)) = batch {
            if count < 0 {
                return Err(INVALID_VALUE);
            }
            if count == 0 {
                return validate(r);
            }
            (r.batch, r.stride_a, r.stride_b, r.stride_c) = (count.into(), s[0], s[1], s[2]);
        }
        if f == func::GEMM_BATCHED && r.batch == 0 {
            return validate(r);
        }
        // Uncommon type combinations wait for the backend's verdict, so one it cannot run
        // fails here (CUBLAS_STATUS_NOT_SUPPORTED) instead of asynchronously.
        if compute != 0 && !common_ex(ta, tb, tc, compute) {
            return c.wait().map(drop);
        }
        c.post()
    })
}

#[allow(clippy::too_many_arguments)]
fn symm(
    h: H,
    ty: u32,
    side: c_int,
    uplo: c_int,
    m: c_int,
    n: c_int,
    alpha: *const c_void,
    a: *const c_void,
    lda: c_int,
    b: *const c_void,
    ldb: c_int,
    beta: *const c_void,
    cc: *mut c_void,
    ldc: c_int,
) -> u32 {
    run(|| {
        let mut c = begin(h, func::SYMM, ty)?;
        c.alpha(alpha, elem_size(ty))?.beta(beta, elem_size(ty))?;
        let r = &mut c.r;
        (r.side, r.uplo, r.m, r.n) = (side as u32, uplo as u32, m.into(), n.into());
        (r.a, r.lda, r.b, r.ldb, r.c, r.ldc) = (
            a as u64,
            lda.into(),
            b as u64,
            ldb.into(),
            cc as u64,
            ldc.into(),
        );
        c.post()
    })
}

#[allow(clippy::too_many_arguments)]
fn syrk(
    h: H,
    ty: u32,
    uplo: c_int,
    t: c_int,
    n: c_int,
    k: c_int,
    alpha: *const c_void,
    a: *const c_void,
    lda: c_int,
    beta: *const c_void,
    cc: *mut c_void,
    ldc: c_int,
) -> u32 {
    run(|| {
        let mut c = begin(h, func::SYRK, ty)?;
        c.alpha(alpha, elem_size(ty))?.beta(beta, elem_size(ty))?;
        let r = &mut c.r;
        (r.uplo, r.trans_a, r.n, r.k) = (uplo as u32, t as u32, n.into(), k.into());
        (r.a, r.lda, r.c, r.ldc) = (a as u64, lda.into(), cc as u64, ldc.into());
        c.post()
    })
}

#[allow(clippy::too_many_arguments)]
fn trsm(
    h: H,
    ty: u32,
    side: c_int,
    uplo: c_int,
    t: c_int,
    diag: c_int,
    m: c_int,
    n: c_int,
    alpha: *const c_void,
    a: *const c_void,
    lda: c_int,
    b: *mut c_void,
    ldb: c_int,
) -> u32 {
    run(|| {
        let mut c = begin(h, func::TRSM, ty)?;
        c.alpha(alpha, elem_size(ty))?;
        let r = &mut c.r;
        (r.side, r.uplo, r.trans_a, r.diag, r.m, r.n) = (
            side as u32,
            uplo as u32,
            t as u32,
            diag as u32,
            m.into(),
            n.into(),
        );
        (r.a, r.lda, r.b, r.ldb) = (a as u64, lda.into(), b as u64, ldb.into());
        c.post()
    })
}

#[allow(clippy::too_many_arguments)]
fn geam(
    h: H,
    ty: u32,
    ta: c_int,
    tb: c_int,
    m: c_int,
    n: c_int,
    alpha: *const c_void,
    a: *const c_void,
    lda: c_int,
    beta: *const c_void,
    b: *const c_void,
    ldb: c_int,
    cc: *mut c_void,
    ldc: c_int,
) -> u32 {
    run(|| {
        let mut c = begin(h, func::GEAM, ty)?;
        c.alpha(alpha, elem_size(ty))?.beta(beta, elem_size(ty))?;
        let r = &mut c.r;
        (r.trans_a, r.trans_b, r.m, r.n) = (ta as u32, tb as u32, m.into(), n.into());
        (r.a, r.lda, r.b, r.ldb, r.c, r.ldc) = (
            a as u64,
            lda.into(),
            b as u64,
            ldb.into(),
            cc as u64,
            ldc.into(),
        );
        c.post()
    })
}

#[allow(clippy::too_many_arguments)]
fn getrf(
    h: H,
    ty: u32,
    n: c_int,
    a: *const c_void,
    lda: c_int,
    piv: *mut c_int,
    info: *mut c_int,
    batch: c_int,
) -> u32 {
    run(|| {
        let mut c = begin(h, func::GETRF_BATCHED, ty)?;
        if batch < 0 || info.is_null() {
            return Err(INVALID_VALUE);
        }
        let r = &mut c.r;
        (r.n, r.a, r.lda, r.x, r.y, r.batch) = (
            n.into(),
            a as u64,
            lda.into(),
            piv as u64,
            info as u64,
            batch.into(),
        );
        if batch == 0 {
            return validate(r);
        }
        c.post()
    })
}

#[allow(clippy::too_many_arguments)]
fn getrs(
    h: H,
    ty: u32,
    t: c_int,
    n: c_int,
    nrhs: c_int,
    a: *const c_void,
    lda: c_int,
    piv: *const c_int,
    b: *const c_void,
    ldb: c_int,
    info: *mut c_int,
    batch: c_int,
) -> u32 {
    run(|| {
        if info.is_null() {
            return Err(INVALID_VALUE);
        }
        let mut c = begin(h, func::GETRS_BATCHED, ty)?;
        let r = &mut c.r;
        (r.trans_a, r.n, r.k, r.a, r.lda, r.x) = (
            t as u32,
            n.into(),
            nrhs.into(),
            a as u64,
            lda.into(),
            piv as u64,
        );
        (r.b, r.ldb, r.batch) = (b as u64, ldb.into(), batch.into());
        // cuBLAS reports which argument is wrong through `info` (-i for argument i).
        let bad = if n < 0 {
            -3
        } else if nrhs < 0 {
            -4
        } else if lda < n.max(1) {
            -6
        } else if ldb < n.max(1) {
            -9
        } else if batch < 0 {
            -11
        } else {
            0
        };
        // SAFETY: checked non-null; the caller's host output.
        unsafe { info.write(bad) };
        if bad != 0 {
            return Err(INVALID_VALUE);
        }
        if batch == 0 {
            return Ok(());
        }
        c.wait().map(drop)
    })
}

/// `cublasSetVector`/`GetVector` and their async forms: `n` elements of `es` bytes, `incx`
/// and `incy` elements apart.
#[allow(clippy::too_many_arguments)]
fn vector_copy(
    n: c_int,
    es: c_int,
    src: *const c_void,
    incx: c_int,
    dst: *mut c_void,
    incy: c_int,
    kind: c_int,
    stream: Option<cudaStream_t>,
) -> u32 {
    if n < 0 || es <= 0 || incx <= 0 || incy <= 0 {
        return INVALID_VALUE;
    }
    if n == 0 {
        return SUCCESS;
    }
    let es = es as u64;
    transfer(
        dst as u64,
        incy as u64 * es,
        src as u64,
        incx as u64 * es,
        es,
        n as u64,
        kind,
        stream,
    )
}

/// `cublasSetMatrix`/`GetMatrix` and their async forms: column-major, `rows` elements of
/// `es` bytes per column.
#[allow(clippy::too_many_arguments)]
fn matrix_copy(
    rows: c_int,
    cols: c_int,
    es: c_int,
    src: *const c_void,
    lda: c_int,
    dst: *mut c_void,
    ldb: c_int,
    kind: c_int,
    stream: Option<cudaStream_t>,
) -> u32 {
    if rows < 0 || cols < 0 || es <= 0 || lda < rows.max(1) || ldb < rows.max(1) {
        return INVALID_VALUE;
    }
    if rows == 0 || cols == 0 {
        return SUCCESS;
    }
    let es = es as u64;
    transfer(
        dst as u64,
        ldb as u64 * es,
        src as u64,
        lda as u64 * es,
        rows as u64 * es,
        cols as u64,
        kind,
        stream,
    )
}

#[allow(clippy::too_many_arguments)]
fn transfer(
    dst: u64,
    dpitch: u64,
    src: u64,
    spitch: u64,
    width: u64,
    height: u64,
    kind: c_int,
    stream: Option<cudaStream_t>,
) -> u32 {
    if dst == 0 || src == 0 {
        return INVALID_VALUE;
    }
    let Ok(c) = client::client() else {
        return NOT_INITIALIZED;
    };
    let stream = match stream.map(|s| stream_handle(c, s, false)) {
        Some(Ok(h)) => Some(h),
        Some(Err(_)) => return INVALID_VALUE,
        None => None,
    };
    match copy_2d(dst, dpitch, src, spitch, width, height, kind, stream) {
        Ok(()) => SUCCESS,
        Err(e) => {
            // As cudart would have, remember the CUDA error for cudaGetLastError.
            state::set_last_error(e.0);
            MAPPING_ERROR
        }
    }
}

fn status_text(s: u32, name: bool) -> *const c_char {
    let (n, t): (&[u8], &[u8]) = match s {
        0 => (b"CUBLAS_STATUS_SUCCESS\0", b"success\0"),
        1 => (
            b"CUBLAS_STATUS_NOT_INITIALIZED\0",
            b"the library was not initialized\0",
        ),
        3 => (
            b"CUBLAS_STATUS_ALLOC_FAILED\0",
            b"the resource allocation failed\0",
        ),
        7 => (
            b"CUBLAS_STATUS_INVALID_VALUE\0",
            b"an invalid numeric value was used as an argument\0",
        ),
        8 => (
            b"CUBLAS_STATUS_ARCH_MISMATCH\0",
            b"an absent device architectural feature is required\0",
        ),
        11 => (
            b"CUBLAS_STATUS_MAPPING_ERROR\0",
            b"an access to GPU memory space failed\0",
        ),
        13 => (
            b"CUBLAS_STATUS_EXECUTION_FAILED\0",
            b"the GPU program failed to execute\0",
        ),
        14 => (
            b"CUBLAS_STATUS_INTERNAL_ERROR\0",
            b"an internal operation failed\0",
        ),
        15 => (
            b"CUBLAS_STATUS_NOT_SUPPORTED\0",
            b"the functionality requested is not supported\0",
        ),
        16 => (
            b"CUBLAS_STATUS_LICENSE_ERROR\0",
            b"there is an error with the license\0",
        ),
        _ => (b"CUBLAS_STATUS_UNKNOWN\0", b"unknown error\0"),
    };
    (if name { n } else { t }).as_ptr().cast()
}

fn set_out<T>(p: *mut T, v: T) -> u32 {
    if p.is_null() {
        return INVALID_VALUE;
    }
    // SAFETY: checked non-null; the caller's output pointer.
    unsafe { p.write(v) };
    SUCCESS
}

entry_raw! {
    fn cublasSasum_v2(h: H, n: c_int, x: *const f32, incx: c_int, result: *mut f32) -> u32 {
        real_reduce(h, func::ASUM, R32, n, x.cast(), incx, result.cast())
    }

    fn cublasSnrm2_v2(h: H, n: c_int, x: *const f32, incx: c_int, result: *mut f32) -> u32 {
        real_reduce(h, func::NRM2, R32, n, x.cast(), incx, result.cast())
    }

    fn cublasSdot_v2(h: H, n: c_int, x: *const f32, incx: c_int, y: *const f32, incy: c_int, result: *mut f32) -> u32 {
        dot(h, func::DOT, R32, n, x.cast(), incx, y.cast(), incy, result.cast())
    }

    fn cublasSrot_v2(h: H, n: c_int, x: *mut f32, incx: c_int, y: *mut f32, incy: c_int, c: *const f32, s: *const f32) -> u32 {
        vec2(h, func::ROT, R32, n, c.cast(), s.cast(), size_of::<f32>(), x.cast(), incx, y.cast(), incy)
    }

    fn cublasIsamax_v2(h: H, n: c_int, x: *const f32, incx: c_int, result: *mut c_int) -> u32 {
        index_reduce(h, func::IAMAX, R32, n, x.cast(), incx, result)
    }

    fn cublasIsamin_v2(h: H, n: c_int, x: *const f32, incx: c_int, result: *mut c_int) -> u32 {
        index_reduce(h, func::IAMIN, R32, n, x.cast(), incx, result)
    }

    fn cublasSger_v2(h: H, m: c_int, n: c_int, alpha: *const f32, x: *const f32, incx: c_int, y: *const f32, incy: c_int, a: *mut f32, lda: c_int) -> u32 {
        ger(h, R32, false, m, n, alpha.cast(), x.cast(), incx, y.cast(), incy, a.cast(), lda)
    }

    fn cublasSsymv_v2(h: H, uplo: c_int, n: c_int, alpha: *const f32, a: *const f32, lda: c_int, x: *const f32, incx: c_int, beta: *const f32, y: *mut f32, incy: c_int) -> u32 {
        symv(h, R32, uplo, n, alpha.cast(), a.cast(), lda, x.cast(), incx, beta.cast(), y.cast(), incy)
    }

    fn cublasSaxpy_v2(h: H, n: c_int, alpha: *const f32, x: *const f32, incx: c_int, y: *mut f32, incy: c_int) -> u32 {
        vec2(h, func::AXPY, R32, n, alpha.cast(), std::ptr::null(), size_of::<f32>(), x.cast(), incx, y.cast(), incy)
    }

    fn cublasScopy_v2(h: H, n: c_int, x: *const f32, incx: c_int, y: *mut f32, incy: c_int) -> u32 {
        vec2(h, func::COPY, R32, n, std::ptr::null(), std::ptr::null(), 0, x.cast(), incx, y.cast(), incy)
    }

    fn cublasSswap_v2(h: H, n: c_int, x: *mut f32, incx: c_int, y: *mut f32, incy: c_int) -> u32 {
        vec2(h, func::SWAP, R32, n, std::ptr::null(), std::ptr::null(), 0, x.cast(), incx, y.cast(), incy)
    }

    fn cublasSscal_v2(h: H, n: c_int, alpha: *const f32, x: *mut f32, incx: c_int) -> u32 {
        scal(h, R32, R32, n, alpha.cast(), x.cast(), incx)
    }

    fn cublasSgemv_v2(h: H, trans: c_int, m: c_int, n: c_int, alpha: *const f32, a: *const f32, lda: c_int, x: *const f32, incx: c_int, beta: *const f32, y: *mut f32, incy: c_int) -> u32 {
        gemv(h, R32, trans, m, n, alpha.cast(), a.cast(), lda, x.cast(), incx, beta.cast(), y.cast(), incy)
    }

    fn cublasStrsv_v2(h: H, uplo: c_int, trans: c_int, diag: c_int, n: c_int, a: *const f32, lda: c_int, x: *mut f32, incx: c_int) -> u32 {
        trsv(h, R32, uplo, trans, diag, n, a.cast(), lda, x.cast(), incx)
    }

    fn cublasSgemm_v2(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const f32, a: *const f32, lda: c_int, b: *const f32, ldb: c_int, beta: *const f32, c: *mut f32, ldc: c_int) -> u32 {
        gemm(h, &Gemm { ta, tb, m, n, k, alpha: alpha.cast(), a: a as u64, lda, b: b as u64, ldb, beta: beta.cast(), c: c as u64, ldc }, (R32, R32, R32, 0), func::GEMM, None)
    }

    fn cublasSgemmStridedBatched(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const f32, a: *const f32, lda: c_int, sa: c_longlong, b: *const f32, ldb: c_int, sb: c_longlong, beta: *const f32, c: *mut f32, ldc: c_int, sc: c_longlong, count: c_int) -> u32 {
        gemm(h, &Gemm { ta, tb, m, n, k, alpha: alpha.cast(), a: a as u64, lda, b: b as u64, ldb, beta: beta.cast(), c: c as u64, ldc }, (R32, R32, R32, 0), func::GEMM, Some((count, [sa, sb, sc])))
    }

    fn cublasSgemmBatched(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const f32, a: *const *const f32, lda: c_int, b: *const *const f32, ldb: c_int, beta: *const f32, c: *const *mut f32, ldc: c_int, count: c_int) -> u32 {
        if count < 0 { return INVALID_VALUE; }
        gemm(h, &Gemm { ta, tb, m, n, k, alpha: alpha.cast(), a: a as u64, lda, b: b as u64, ldb, beta: beta.cast(), c: c as u64, ldc }, (R32, R32, R32, 0), func::GEMM_BATCHED, Some((count, [0; 3])))
    }

    fn cublasSsymm_v2(h: H, side: c_int, uplo: c_int, m: c_int, n: c_int, alpha: *const f32, a: *const f32, lda: c_int, b: *const f32, ldb: c_int, beta: *const f32, c: *mut f32, ldc: c_int) -> u32 {
        symm(h, R32, side, uplo, m, n, alpha.cast(), a.cast(), lda, b.cast(), ldb, beta.cast(), c.cast(), ldc)
    }

    fn cublasSsyrk_v2(h: H, uplo: c_int, trans: c_int, n: c_int, k: c_int, alpha: *const f32, a: *const f32, lda: c_int, beta: *const f32, c: *mut f32, ldc: c_int) -> u32 {
        syrk(h, R32, uplo, trans, n, k, alpha.cast(), a.cast(), lda, beta.cast(), c.cast(), ldc)
    }

    fn cublasStrsm_v2(h: H, side: c_int, uplo: c_int, trans: c_int, diag: c_int, m: c_int, n: c_int, alpha: *const f32, a: *const f32, lda: c_int, b: *mut f32, ldb: c_int) -> u32 {
        trsm(h, R32, side, uplo, trans, diag, m, n, alpha.cast(), a.cast(), lda, b.cast(), ldb)
    }

    fn cublasSgeam(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, alpha: *const f32, a: *const f32, lda: c_int, beta: *const f32, b: *const f32, ldb: c_int, c: *mut f32, ldc: c_int) -> u32 {
        geam(h, R32, ta, tb, m, n, alpha.cast(), a.cast(), lda, beta.cast(), b.cast(), ldb, c.cast(), ldc)
    }

    fn cublasSgetrfBatched(h: H, n: c_int, a: *const *mut f32, lda: c_int, piv: *mut c_int, info: *mut c_int, count: c_int) -> u32 {
        getrf(h, R32, n, a.cast(), lda, piv, info, count)
    }

    fn cublasSgetrsBatched(h: H, trans: c_int, n: c_int, nrhs: c_int, a: *const *const f32, lda: c_int, piv: *const c_int, b: *const *mut f32, ldb: c_int, info: *mut c_int, count: c_int) -> u32 {
        getrs(h, R32, trans, n, nrhs, a.cast(), lda, piv, b.cast(), ldb, info, count)
    }

    fn cublasDasum_v2(h: H, n: c_int, x: *const f64, incx: c_int, result: *mut f64) -> u32 {
        real_reduce(h, func::ASUM, R64, n, x.cast(), incx, result.cast())
    }

    fn cublasDnrm2_v2(h: H, n: c_int, x: *const f64, incx: c_int, result: *mut f64) -> u32 {
        real_reduce(h, func::NRM2, R64, n, x.cast(), incx, result.cast())
    }

    fn cublasDdot_v2(h: H, n: c_int, x: *const f64, incx: c_int, y: *const f64, incy: c_int, result: *mut f64) -> u32 {
        dot(h, func::DOT, R64, n, x.cast(), incx, y.cast(), incy, result.cast())
    }

    fn cublasDrot_v2(h: H, n: c_int, x: *mut f64, incx: c_int, y: *mut f64, incy: c_int, c: *const f64, s: *const f64) -> u32 {
        vec2(h, func::ROT, R64, n, c.cast(), s.cast(), size_of::<f64>(), x.cast(), incx, y.cast(), incy)
    }

    fn cublasIdamax_v2(h: H, n: c_int, x: *const f64, incx: c_int, result: *mut c_int) -> u32 {
        index_reduce(h, func::IAMAX, R64, n, x.cast(), incx, result)
    }

    fn cublasIdamin_v2(h: H, n: c_int, x: *const f64, incx: c_int, result: *mut c_int) -> u32 {
        index_reduce(h, func::IAMIN, R64, n, x.cast(), incx, result)
    }

    fn cublasDger_v2(h: H, m: c_int, n: c_int, alpha: *const f64, x: *const f64, incx: c_int, y: *const f64, incy: c_int, a: *mut f64, lda: c_int) -> u32 {
        ger(h, R64, false, m, n, alpha.cast(), x.cast(), incx, y.cast(), incy, a.cast(), lda)
    }

    fn cublasDsymv_v2(h: H, uplo: c_int, n: c_int, alpha: *const f64, a: *const f64, lda: c_int, x: *const f64, incx: c_int, beta: *const f64, y: *mut f64, incy: c_int) -> u32 {
        symv(h, R64, uplo, n, alpha.cast(), a.cast(), lda, x.cast(), incx, beta.cast(), y.cast(), incy)
    }

    fn cublasDaxpy_v2(h: H, n: c_int, alpha: *const f64, x: *const f64, incx: c_int, y: *mut f64, incy: c_int) -> u32 {
        vec2(h, func::AXPY, R64, n, alpha.cast(), std::ptr::null(), size_of::<f64>(), x.cast(), incx, y.cast(), incy)
    }

    fn cublasDcopy_v2(h: H, n: c_int, x: *const f64, incx: c_int, y: *mut f64, incy: c_int) -> u32 {
        vec2(h, func::COPY, R64, n, std::ptr::null(), std::ptr::null(), 0, x.cast(), incx, y.cast(), incy)
    }

    fn cublasDswap_v2(h: H, n: c_int, x: *mut f64, incx: c_int, y: *mut f64, incy: c_int) -> u32 {
        vec2(h, func::SWAP, R64, n, std::ptr::null(), std::ptr::null(), 0, x.cast(), incx, y.cast(), incy)
    }

    fn cublasDscal_v2(h: H, n: c_int, alpha: *const f64, x: *mut f64, incx: c_int) -> u32 {
        scal(h, R64, R64, n, alpha.cast(), x.cast(), incx)
    }

    fn cublasDgemv_v2(h: H, trans: c_int, m: c_int, n: c_int, alpha: *const f64, a: *const f64, lda: c_int, x: *const f64, incx: c_int, beta: *const f64, y: *mut f64, incy: c_int) -> u32 {
        gemv(h, R64, trans, m, n, alpha.cast(), a.cast(), lda, x.cast(), incx, beta.cast(), y.cast(), incy)
    }

    fn cublasDtrsv_v2(h: H, uplo: c_int, trans: c_int, diag: c_int, n: c_int, a: *const f64, lda: c_int, x: *mut f64, incx: c_int) -> u32 {
        trsv(h, R64, uplo, trans, diag, n, a.cast(), lda, x.cast(), incx)
    }

    fn cublasDgemm_v2(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const f64, a: *const f64, lda: c_int, b: *const f64, ldb: c_int, beta: *const f64, c: *mut f64, ldc: c_int) -> u32 {
        gemm(h, &Gemm { ta, tb, m, n, k, alpha: alpha.cast(), a: a as u64, lda, b: b as u64, ldb, beta: beta.cast(), c: c as u64, ldc }, (R64, R64, R64, 0), func::GEMM, None)
    }

    fn cublasDgemmStridedBatched(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const f64, a: *const f64, lda: c_int, sa: c_longlong, b: *const f64, ldb: c_int, sb: c_longlong, beta: *const f64, c: *mut f64, ldc: c_int, sc: c_longlong, count: c_int) -> u32 {
        gemm(h, &Gemm { ta, tb, m, n, k, alpha: alpha.cast(), a: a as u64, lda, b: b as u64, ldb, beta: beta.cast(), c: c as u64, ldc }, (R64, R64, R64, 0), func::GEMM, Some((count, [sa, sb, sc])))
    }

    fn cublasDgemmBatched(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const f64, a: *const *const f64, lda: c_int, b: *const *const f64, ldb: c_int, beta: *const f64, c: *const *mut f64, ldc: c_int, count: c_int) -> u32 {
        if count < 0 { return INVALID_VALUE; }
        gemm(h, &Gemm { ta, tb, m, n, k, alpha: alpha.cast(), a: a as u64, lda, b: b as u64, ldb, beta: beta.cast(), c: c as u64, ldc }, (R64, R64, R64, 0), func::GEMM_BATCHED, Some((count, [0; 3])))
    }

    fn cublasDsymm_v2(h: H, side: c_int, uplo: c_int, m: c_int, n: c_int, alpha: *const f64, a: *const f64, lda: c_int, b: *const f64, ldb: c_int, beta: *const f64, c: *mut f64, ldc: c_int) -> u32 {
        symm(h, R64, side, uplo, m, n, alpha.cast(), a.cast(), lda, b.cast(), ldb, beta.cast(), c.cast(), ldc)
    }

    fn cublasDsyrk_v2(h: H, uplo: c_int, trans: c_int, n: c_int, k: c_int, alpha: *const f64, a: *const f64, lda: c_int, beta: *const f64, c: *mut f64, ldc: c_int) -> u32 {
        syrk(h, R64, uplo, trans, n, k, alpha.cast(), a.cast(), lda, beta.cast(), c.cast(), ldc)
    }

    fn cublasDtrsm_v2(h: H, side: c_int, uplo: c_int, trans: c_int, diag: c_int, m: c_int, n: c_int, alpha: *const f64, a: *const f64, lda: c_int, b: *mut f64, ldb: c_int) -> u32 {
        trsm(h, R64, side, uplo, trans, diag, m, n, alpha.cast(), a.cast(), lda, b.cast(), ldb)
    }

    fn cublasDgeam(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, alpha: *const f64, a: *const f64, lda: c_int, beta: *const f64, b: *const f64, ldb: c_int, c: *mut f64, ldc: c_int) -> u32 {
        geam(h, R64, ta, tb, m, n, alpha.cast(), a.cast(), lda, beta.cast(), b.cast(), ldb, c.cast(), ldc)
    }

    fn cublasDgetrfBatched(h: H, n: c_int, a: *const *mut f64, lda: c_int, piv: *mut c_int, info: *mut c_int, count: c_int) -> u32 {
        getrf(h, R64, n, a.cast(), lda, piv, info, count)
    }

    fn cublasDgetrsBatched(h: H, trans: c_int, n: c_int, nrhs: c_int, a: *const *const f64, lda: c_int, piv: *const c_int, b: *const *mut f64, ldb: c_int, info: *mut c_int, count: c_int) -> u32 {
        getrs(h, R64, trans, n, nrhs, a.cast(), lda, piv, b.cast(), ldb, info, count)
    }

    fn cublasScasum_v2(h: H, n: c_int, x: *const C32T, incx: c_int, result: *mut f32) -> u32 {
        real_reduce(h, func::ASUM, C32, n, x.cast(), incx, result.cast())
    }

    fn cublasScnrm2_v2(h: H, n: c_int, x: *const C32T, incx: c_int, result: *mut f32) -> u32 {
        real_reduce(h, func::NRM2, C32, n, x.cast(), incx, result.cast())
    }

    fn cublasCdotu_v2(h: H, n: c_int, x: *const C32T, incx: c_int, y: *const C32T, incy: c_int, result: *mut C32T) -> u32 {
        dot(h, func::DOT, C32, n, x.cast(), incx, y.cast(), incy, result.cast())
    }

    fn cublasCdotc_v2(h: H, n: c_int, x: *const C32T, incx: c_int, y: *const C32T, incy: c_int, result: *mut C32T) -> u32 {
        dot(h, func::DOTC, C32, n, x.cast(), incx, y.cast(), incy, result.cast())
    }

    fn cublasIcamax_v2(h: H, n: c_int, x: *const C32T, incx: c_int, result: *mut c_int) -> u32 {
        index_reduce(h, func::IAMAX, C32, n, x.cast(), incx, result)
    }

    fn cublasIcamin_v2(h: H, n: c_int, x: *const C32T, incx: c_int, result: *mut c_int) -> u32 {
        index_reduce(h, func::IAMIN, C32, n, x.cast(), incx, result)
    }

    fn cublasCsscal_v2(h: H, n: c_int, alpha: *const f32, x: *mut C32T, incx: c_int) -> u32 {
        scal(h, C32, R32, n, alpha.cast(), x.cast(), incx)
    }

    fn cublasCgeru_v2(h: H, m: c_int, n: c_int, alpha: *const C32T, x: *const C32T, incx: c_int, y: *const C32T, incy: c_int, a: *mut C32T, lda: c_int) -> u32 {
        ger(h, C32, false, m, n, alpha.cast(), x.cast(), incx, y.cast(), incy, a.cast(), lda)
    }

    fn cublasCgerc_v2(h: H, m: c_int, n: c_int, alpha: *const C32T, x: *const C32T, incx: c_int, y: *const C32T, incy: c_int, a: *mut C32T, lda: c_int) -> u32 {
        ger(h, C32, true, m, n, alpha.cast(), x.cast(), incx, y.cast(), incy, a.cast(), lda)
    }

    fn cublasCaxpy_v2(h: H, n: c_int, alpha: *const C32T, x: *const C32T, incx: c_int, y: *mut C32T, incy: c_int) -> u32 {
        vec2(h, func::AXPY, C32, n, alpha.cast(), std::ptr::null(), size_of::<C32T>(), x.cast(), incx, y.cast(), incy)
    }

    fn cublasCcopy_v2(h: H, n: c_int, x: *const C32T, incx: c_int, y: *mut C32T, incy: c_int) -> u32 {
        vec2(h, func::COPY, C32, n, std::ptr::null(), std::ptr::null(), 0, x.cast(), incx, y.cast(), incy)
    }

    fn cublasCswap_v2(h: H, n: c_int, x: *mut C32T, incx: c_int, y: *mut C32T, incy: c_int) -> u32 {
        vec2(h, func::SWAP, C32, n, std::ptr::null(), std::ptr::null(), 0, x.cast(), incx, y.cast(), incy)
    }

    fn cublasCscal_v2(h: H, n: c_int, alpha: *const C32T, x: *mut C32T, incx: c_int) -> u32 {
        scal(h, C32, C32, n, alpha.cast(), x.cast(), incx)
    }

    fn cublasCgemv_v2(h: H, trans: c_int, m: c_int, n: c_int, alpha: *const C32T, a: *const C32T, lda: c_int, x: *const C32T, incx: c_int, beta: *const C32T, y: *mut C32T, incy: c_int) -> u32 {
        gemv(h, C32, trans, m, n, alpha.cast(), a.cast(), lda, x.cast(), incx, beta.cast(), y.cast(), incy)
    }

    fn cublasCtrsv_v2(h: H, uplo: c_int, trans: c_int, diag: c_int, n: c_int, a: *const C32T, lda: c_int, x: *mut C32T, incx: c_int) -> u32 {
        trsv(h, C32, uplo, trans, diag, n, a.cast(), lda, x.cast(), incx)
    }

    fn cublasCgemm_v2(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const C32T, a: *const C32T, lda: c_int, b: *const C32T, ldb: c_int, beta: *const C32T, c: *mut C32T, ldc: c_int) -> u32 {
        gemm(h, &Gemm { ta, tb, m, n, k, alpha: alpha.cast(), a: a as u64, lda, b: b as u64, ldb, beta: beta.cast(), c: c as u64, ldc }, (C32, C32, C32, 0), func::GEMM, None)
    }

    fn cublasCgemmStridedBatched(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const C32T, a: *const C32T, lda: c_int, sa: c_longlong, b: *const C32T, ldb: c_int, sb: c_longlong, beta: *const C32T, c: *mut C32T, ldc: c_int, sc: c_longlong, count: c_int) -> u32 {
        gemm(h, &Gemm { ta, tb, m, n, k, alpha: alpha.cast(), a: a as u64, lda, b: b as u64, ldb, beta: beta.cast(), c: c as u64, ldc }, (C32, C32, C32, 0), func::GEMM, Some((count, [sa, sb, sc])))
    }

    fn cublasCgemmBatched(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const C32T, a: *const *const C32T, lda: c_int, b: *const *const C32T, ldb: c_int, beta: *const C32T, c: *const *mut C32T, ldc: c_int, count: c_int) -> u32 {
        if count < 0 { return INVALID_VALUE; }
        gemm(h, &Gemm { ta, tb, m, n, k, alpha: alpha.cast(), a: a as u64, lda, b: b as u64, ldb, beta: beta.cast(), c: c as u64, ldc }, (C32, C32, C32, 0), func::GEMM_BATCHED, Some((count, [0; 3])))
    }

    fn cublasCsymm_v2(h: H, side: c_int, uplo: c_int, m: c_int, n: c_int, alpha: *const C32T, a: *const C32T, lda: c_int, b: *const C32T, ldb: c_int, beta: *const C32T, c: *mut C32T, ldc: c_int) -> u32 {
        symm(h, C32, side, uplo, m, n, alpha.cast(), a.cast(), lda, b.cast(), ldb, beta.cast(), c.cast(), ldc)
    }

    fn cublasCsyrk_v2(h: H, uplo: c_int, trans: c_int, n: c_int, k: c_int, alpha: *const C32T, a: *const C32T, lda: c_int, beta: *const C32T, c: *mut C32T, ldc: c_int) -> u32 {
        syrk(h, C32, uplo, trans, n, k, alpha.cast(), a.cast(), lda, beta.cast(), c.cast(), ldc)
    }

    fn cublasCtrsm_v2(h: H, side: c_int, uplo: c_int, trans: c_int, diag: c_int, m: c_int, n: c_int, alpha: *const C32T, a: *const C32T, lda: c_int, b: *mut C32T, ldb: c_int) -> u32 {
        trsm(h, C32, side, uplo, trans, diag, m, n, alpha.cast(), a.cast(), lda, b.cast(), ldb)
    }

    fn cublasCgeam(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, alpha: *const C32T, a: *const C32T, lda: c_int, beta: *const C32T, b: *const C32T, ldb: c_int, c: *mut C32T, ldc: c_int) -> u32 {
        geam(h, C32, ta, tb, m, n, alpha.cast(), a.cast(), lda, beta.cast(), b.cast(), ldb, c.cast(), ldc)
    }

    fn cublasCgetrfBatched(h: H, n: c_int, a: *const *mut C32T, lda: c_int, piv: *mut c_int, info: *mut c_int, count: c_int) -> u32 {
        getrf(h, C32, n, a.cast(), lda, piv, info, count)
    }

    fn cublasCgetrsBatched(h: H, trans: c_int, n: c_int, nrhs: c_int, a: *const *const C32T, lda: c_int, piv: *const c_int, b: *const *mut C32T, ldb: c_int, info: *mut c_int, count: c_int) -> u32 {
        getrs(h, C32, trans, n, nrhs, a.cast(), lda, piv, b.cast(), ldb, info, count)
    }

    fn cublasDzasum_v2(h: H, n: c_int, x: *const C64T, incx: c_int, result: *mut f64) -> u32 {
        real_reduce(h, func::ASUM, C64, n, x.cast(), incx, result.cast())
    }

    fn cublasDznrm2_v2(h: H, n: c_int, x: *const C64T, incx: c_int, result: *mut f64) -> u32 {
        real_reduce(h, func::NRM2, C64, n, x.cast(), incx, result.cast())
    }

    fn cublasZdotu_v2(h: H, n: c_int, x: *const C64T, incx: c_int, y: *const C64T, incy: c_int, result: *mut C64T) -> u32 {
        dot(h, func::DOT, C64, n, x.cast(), incx, y.cast(), incy, result.cast())
    }

    fn cublasZdotc_v2(h: H, n: c_int, x: *const C64T, incx: c_int, y: *const C64T, incy: c_int, result: *mut C64T) -> u32 {
        dot(h, func::DOTC, C64, n, x.cast(), incx, y.cast(), incy, result.cast())
    }

    fn cublasIzamax_v2(h: H, n: c_int, x: *const C64T, incx: c_int, result: *mut c_int) -> u32 {
        index_reduce(h, func::IAMAX, C64, n, x.cast(), incx, result)
    }

    fn cublasIzamin_v2(h: H, n: c_int, x: *const C64T, incx: c_int, result: *mut c_int) -> u32 {
        index_reduce(h, func::IAMIN, C64, n, x.cast(), incx, result)
    }

    fn cublasZdscal_v2(h: H, n: c_int, alpha: *const f64, x: *mut C64T, incx: c_int) -> u32 {
        scal(h, C64, R64, n, alpha.cast(), x.cast(), incx)
    }

    fn cublasZgeru_v2(h: H, m: c_int, n: c_int, alpha: *const C64T, x: *const C64T, incx: c_int, y: *const C64T, incy: c_int, a: *mut C64T, lda: c_int) -> u32 {
        ger(h, C64, false, m, n, alpha.cast(), x.cast(), incx, y.cast(), incy, a.cast(), lda)
    }

    fn cublasZgerc_v2(h: H, m: c_int, n: c_int, alpha: *const C64T, x: *const C64T, incx: c_int, y: *const C64T, incy: c_int, a: *mut C64T, lda: c_int) -> u32 {
        ger(h, C64, true, m, n, alpha.cast(), x.cast(), incx, y.cast(), incy, a.cast(), lda)
    }

    fn cublasZaxpy_v2(h: H, n: c_int, alpha: *const C64T, x: *const C64T, incx: c_int, y: *mut C64T, incy: c_int) -> u32 {
        vec2(h, func::AXPY, C64, n, alpha.cast(), std::ptr::null(), size_of::<C64T>(), x.cast(), incx, y.cast(), incy)
    }

    fn cublasZcopy_v2(h: H, n: c_int, x: *const C64T, incx: c_int, y: *mut C64T, incy: c_int) -> u32 {
        vec2(h, func::COPY, C64, n, std::ptr::null(), std::ptr::null(), 0, x.cast(), incx, y.cast(), incy)
    }

    fn cublasZswap_v2(h: H, n: c_int, x: *mut C64T, incx: c_int, y: *mut C64T, incy: c_int) -> u32 {
        vec2(h, func::SWAP, C64, n, std::ptr::null(), std::ptr::null(), 0, x.cast(), incx, y.cast(), incy)
    }

    fn cublasZscal_v2(h: H, n: c_int, alpha: *const C64T, x: *mut C64T, incx: c_int) -> u32 {
        scal(h, C64, C64, n, alpha.cast(), x.cast(), incx)
    }

    fn cublasZgemv_v2(h: H, trans: c_int, m: c_int, n: c_int, alpha: *const C64T, a: *const C64T, lda: c_int, x: *const C64T, incx: c_int, beta: *const C64T, y: *mut C64T, incy: c_int) -> u32 {
        gemv(h, C64, trans, m, n, alpha.cast(), a.cast(), lda, x.cast(), incx, beta.cast(), y.cast(), incy)
    }

    fn cublasZtrsv_v2(h: H, uplo: c_int, trans: c_int, diag: c_int, n: c_int, a: *const C64T, lda: c_int, x: *mut C64T, incx: c_int) -> u32 {
        trsv(h, C64, uplo, trans, diag, n, a.cast(), lda, x.cast(), incx)
    }

    fn cublasZgemm_v2(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const C64T, a: *const C64T, lda: c_int, b: *const C64T, ldb: c_int, beta: *const C64T, c: *mut C64T, ldc: c_int) -> u32 {
        gemm(h, &Gemm { ta, tb, m, n, k, alpha: alpha.cast(), a: a as u64, lda, b: b as u64, ldb, beta: beta.cast(), c: c as u64, ldc }, (C64, C64, C64, 0), func::GEMM, None)
    }

    fn cublasZgemmStridedBatched(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const C64T, a: *const C64T, lda: c_int, sa: c_longlong, b: *const C64T, ldb: c_int, sb: c_longlong, beta: *const C64T, c: *mut C64T, ldc: c_int, sc: c_longlong, count: c_int) -> u32 {
        gemm(h, &Gemm { ta, tb, m, n, k, alpha: alpha.cast(), a: a as u64, lda, b: b as u64, ldb, beta: beta.cast(), c: c as u64, ldc }, (C64, C64, C64, 0), func::GEMM, Some((count, [sa, sb, sc])))
    }

    fn cublasZgemmBatched(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const C64T, a: *const *const C64T, lda: c_int, b: *const *const C64T, ldb: c_int, beta: *const C64T, c: *const *mut C64T, ldc: c_int, count: c_int) -> u32 {
        if count < 0 { return INVALID_VALUE; }
        gemm(h, &Gemm { ta, tb, m, n, k, alpha: alpha.cast(), a: a as u64, lda, b: b as u64, ldb, beta: beta.cast(), c: c as u64, ldc }, (C64, C64, C64, 0), func::GEMM_BATCHED, Some((count, [0; 3])))
    }

    fn cublasZsymm_v2(h: H, side: c_int, uplo: c_int, m: c_int, n: c_int, alpha: *const C64T, a: *const C64T, lda: c_int, b: *const C64T, ldb: c_int, beta: *const C64T, c: *mut C64T, ldc: c_int) -> u32 {
        symm(h, C64, side, uplo, m, n, alpha.cast(), a.cast(), lda, b.cast(), ldb, beta.cast(), c.cast(), ldc)
    }

    fn cublasZsyrk_v2(h: H, uplo: c_int, trans: c_int, n: c_int, k: c_int, alpha: *const C64T, a: *const C64T, lda: c_int, beta: *const C64T, c: *mut C64T, ldc: c_int) -> u32 {
        syrk(h, C64, uplo, trans, n, k, alpha.cast(), a.cast(), lda, beta.cast(), c.cast(), ldc)
    }

    fn cublasZtrsm_v2(h: H, side: c_int, uplo: c_int, trans: c_int, diag: c_int, m: c_int, n: c_int, alpha: *const C64T, a: *const C64T, lda: c_int, b: *mut C64T, ldb: c_int) -> u32 {
        trsm(h, C64, side, uplo, trans, diag, m, n, alpha.cast(), a.cast(), lda, b.cast(), ldb)
    }

    fn cublasZgeam(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, alpha: *const C64T, a: *const C64T, lda: c_int, beta: *const C64T, b: *const C64T, ldb: c_int, c: *mut C64T, ldc: c_int) -> u32 {
        geam(h, C64, ta, tb, m, n, alpha.cast(), a.cast(), lda, beta.cast(), b.cast(), ldb, c.cast(), ldc)
    }

    fn cublasZgetrfBatched(h: H, n: c_int, a: *const *mut C64T, lda: c_int, piv: *mut c_int, info: *mut c_int, count: c_int) -> u32 {
        getrf(h, C64, n, a.cast(), lda, piv, info, count)
    }

    fn cublasZgetrsBatched(h: H, trans: c_int, n: c_int, nrhs: c_int, a: *const *const C64T, lda: c_int, piv: *const c_int, b: *const *mut C64T, ldb: c_int, info: *mut c_int, count: c_int) -> u32 {
        getrs(h, C64, trans, n, nrhs, a.cast(), lda, piv, b.cast(), ldb, info, count)
    }

    fn cublasGemmEx(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const c_void, a: *const c_void, at: u32, lda: c_int, b: *const c_void, bt: u32, ldb: c_int, beta: *const c_void, c: *mut c_void, ct: u32, ldc: c_int, compute: c_int, _algo: c_int) -> u32 {
        gemm(h, &Gemm { ta, tb, m, n, k, alpha, a: a as u64, lda, b: b as u64, ldb, beta, c: c as u64, ldc }, (at, bt, ct, compute), func::GEMM, None)
    }

    fn cublasGemmStridedBatchedEx(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const c_void, a: *const c_void, at: u32, lda: c_int, sa: c_longlong, b: *const c_void, bt: u32, ldb: c_int, sb: c_longlong, beta: *const c_void, c: *mut c_void, ct: u32, ldc: c_int, sc: c_longlong, count: c_int, compute: c_int, _algo: c_int) -> u32 {
        gemm(h, &Gemm { ta, tb, m, n, k, alpha, a: a as u64, lda, b: b as u64, ldb, beta, c: c as u64, ldc }, (at, bt, ct, compute), func::GEMM, Some((count, [sa, sb, sc])))
    }

    fn cublasGemmBatchedEx(h: H, ta: c_int, tb: c_int, m: c_int, n: c_int, k: c_int, alpha: *const c_void, a: *const *const c_void, at: u32, lda: c_int, b: *const *const c_void, bt: u32, ldb: c_int, beta: *const c_void, c: *const *mut c_void, ct: u32, ldc: c_int, count: c_int, compute: c_int, _algo: c_int) -> u32 {
        gemm(h, &Gemm { ta, tb, m, n, k, alpha, a: a as u64, lda, b: b as u64, ldb, beta, c: c as u64, ldc }, (at, bt, ct, compute), func::GEMM_BATCHED, Some((count, [0; 3])))
    }
}

/// `cuComplex`.
type C32T = [f32; 2];
/// `cuDoubleComplex`.
type C64T = [f64; 2];

entry_raw! {
    fn cublasCreate_v2(out: *mut H) -> u32 {
        run(|| {
            if out.is_null() {
                return Err(INVALID_VALUE);
            }
            let c = client::client().map_err(|_| NOT_INITIALIZED)?;
            let device = c.check_device(state::device()).map_err(|_| NOT_INITIALIZED)?;
            let r: HandleResp = c
                .call::<ops::BlasCreate>(&BlasCreateReq { device, reserved: 0 })
                .map_err(|e| if e.0 == BLAS_NOT_SUPPORTED { BLAS_NOT_SUPPORTED } else { NOT_INITIALIZED })?;
            let st = HandleState { stream: 0, pointer_mode: 0, math_mode: 0, atomics: 0 };
            with_handles(|m| m.insert(r.handle, st));
            // SAFETY: checked non-null; the caller's output.
            unsafe { out.write(r.handle as H) };
            Ok(())
        })
    }

    fn cublasDestroy_v2(h: H) -> u32 {
        run(|| {
            with_handles(|m| m.remove(&(h as u64))).ok_or(NOT_INITIALIZED)?;
            let c = client::client().map_err(|_| NOT_INITIALIZED)?;
            // Destroying waits for the handle's work, as cuBLAS does.
            c.call::<ops::BlasDestroy>(&HandleReq { handle: h as u64 })
                .map_err(blas_err)
        })
    }

    fn cublasSetStream_v2(h: H, stream: cudaStream_t) -> u32 {
        update(h, |s| s.stream = stream as usize)
    }

    fn cublasGetStream_v2(h: H, out: *mut cudaStream_t) -> u32 {
        match handle_state(h) {
            Ok(s) => set_out(out, s.stream as cudaStream_t),
            Err(e) => e,
        }
    }

    fn cublasSetPointerMode_v2(h: H, mode: c_int) -> u32 {
        if !matches!(mode, 0 | 1) {
            return INVALID_VALUE;
        }
        update(h, |s| s.pointer_mode = mode)
    }

    fn cublasGetPointerMode_v2(h: H, out: *mut c_int) -> u32 {
        match handle_state(h) {
            Ok(s) => set_out(out, s.pointer_mode),
            Err(e) => e,
        }
    }

    fn cublasSetMathMode(h: H, mode: c_int) -> u32 {
        if !matches!(mode & 0xf, 0..=4) || mode & !0x1f != 0 {
            return INVALID_VALUE;
        }
        update(h, |s| s.math_mode = mode)
    }

    fn cublasGetMathMode(h: H, out: *mut c_int) -> u32 {
        match handle_state(h) {
            Ok(s) => set_out(out, s.math_mode),
            Err(e) => e,
        }
    }

    fn cublasSetAtomicsMode(h: H, mode: c_int) -> u32 {
        if !matches!(mode, 0 | 1) {
            return INVALID_VALUE;
        }
        update(h, |s| s.atomics = mode)
    }

    fn cublasGetAtomicsMode(h: H, out: *mut c_int) -> u32 {
        match handle_state(h) {
            Ok(s) => set_out(out, s.atomics),
            Err(e) => e,
        }
    }

    fn cublasSetWorkspace_v2(h: H, _workspace: *mut c_void, _size: usize) -> u32 {
        // The backend brings its own workspace; the guest's is not needed.
        handle_state(h).map_or_else(|e| e, |_| SUCCESS)
    }

    fn cublasGetVersion_v2(h: H, out: *mut c_int) -> u32 {
        match handle_state(h) {
            Ok(_) => set_out(out, VERSION),
            Err(e) => e,
        }
    }

    fn cublasGetVersion(out: *mut c_int) -> u32 {
        set_out(out, VERSION)
    }

    fn cublasGetProperty(ty: c_int, out: *mut c_int) -> u32 {
        match VERSION_PARTS.get(ty as usize) {
            Some(&v) if ty >= 0 => set_out(out, v),
            _ => INVALID_VALUE,
        }
    }

    fn cublasGetCudartVersion() -> usize {
        client::RUNTIME_VERSION as usize
    }

    fn cublasGetStatusName(s: u32) -> *const c_char {
        status_text(s, true)
    }

    fn cublasGetStatusString(s: u32) -> *const c_char {
        status_text(s, false)
    }

    fn cublasLoggerConfigure(_on: c_int, _stdout: c_int, _stderr: c_int, _file: *const c_char) -> u32 {
        SUCCESS
    }

    fn cublasSetVector(n: c_int, es: c_int, x: *const c_void, incx: c_int, y: *mut c_void, incy: c_int) -> u32 {
        vector_copy(n, es, x, incx, y, incy, memcpy_kind::H2D, None)
    }

    fn cublasGetVector(n: c_int, es: c_int, x: *const c_void, incx: c_int, y: *mut c_void, incy: c_int) -> u32 {
        vector_copy(n, es, x, incx, y, incy, memcpy_kind::D2H, None)
    }

    fn cublasSetVectorAsync(n: c_int, es: c_int, x: *const c_void, incx: c_int, y: *mut c_void, incy: c_int, s: cudaStream_t) -> u32 {
        vector_copy(n, es, x, incx, y, incy, memcpy_kind::H2D, Some(s))
    }

    fn cublasGetVectorAsync(n: c_int, es: c_int, x: *const c_void, incx: c_int, y: *mut c_void, incy: c_int, s: cudaStream_t) -> u32 {
        vector_copy(n, es, x, incx, y, incy, memcpy_kind::D2H, Some(s))
    }

    fn cublasSetMatrix(rows: c_int, cols: c_int, es: c_int, a: *const c_void, lda: c_int, b: *mut c_void, ldb: c_int) -> u32 {
        matrix_copy(rows, cols, es, a, lda, b, ldb, memcpy_kind::H2D, None)
    }

    fn cublasGetMatrix(rows: c_int, cols: c_int, es: c_int, a: *const c_void, lda: c_int, b: *mut c_void, ldb: c_int) -> u32 {
        matrix_copy(rows, cols, es, a, lda, b, ldb, memcpy_kind::D2H, None)
    }

    fn cublasSetMatrixAsync(rows: c_int, cols: c_int, es: c_int, a: *const c_void, lda: c_int, b: *mut c_void, ldb: c_int, s: cudaStream_t) -> u32 {
        matrix_copy(rows, cols, es, a, lda, b, ldb, memcpy_kind::H2D, Some(s))
    }

    fn cublasGetMatrixAsync(rows: c_int, cols: c_int, es: c_int, a: *const c_void, lda: c_int, b: *mut c_void, ldb: c_int, s: cudaStream_t) -> u32 {
        matrix_copy(rows, cols, es, a, lda, b, ldb, memcpy_kind::D2H, Some(s))
    }
}
