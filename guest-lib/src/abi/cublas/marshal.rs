// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Marshaling of cuBLAS calls: the `BlasCallReq` builder ([`Call`]: handle state, scalars in
//! either pointer mode, posting or waiting), the argument packing of each routine family,
//! the checks made before a call is posted without waiting (`validate`, the GEMM type and
//! batch checks, `getrs`'s `info`), and the vector and matrix transfers.
//!
//! Each function returns the cuBLAS status the entry point answers; a reply's CUDA error
//! converts with [`BlasError::from`].

use std::ffi::{c_int, c_longlong, c_void};

use vcuda_protocol::blas::validate;
use vcuda_protocol::lib::{BLAS_DEVICE_POINTERS, dtype, func};
use vcuda_protocol::{BlasCallReq, BlasCallResp, ops};

use super::handle::{H, handle_state};
use crate::client::{self, Client};
use crate::core::capture::stream_handle;
use crate::core::memory::copy_2d;
use crate::error::BlasError;
use crate::ffi::cudaStream_t;
use crate::state;

/// Results of cuBLAS's internals.
pub(super) type Result<T> = std::result::Result<T, BlasError>;

/// `CUDA_R_32F`.
pub(super) const R32: u32 = dtype::R_32F;
/// `CUDA_R_64F`.
pub(super) const R64: u32 = dtype::R_64F;
/// `CUDA_C_32F`.
pub(super) const C32: u32 = dtype::C_32F;
/// `CUDA_C_64F`.
pub(super) const C64: u32 = dtype::C_64F;

pub(super) fn elem_size(t: u32) -> usize {
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

fn begin(h: H, f: u32, ty: u32) -> Result<Call> {
    let s = handle_state(h)?;
    let c = client::client().map_err(|_| BlasError::NOT_INITIALIZED)?;
    let stream = stream_handle(c, s.stream as cudaStream_t, false)
        .map_err(|_| BlasError::EXECUTION_FAILED)?;
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
fn scalar(device: bool, p: *const c_void, size: usize) -> Result<[u8; 16]> {
    if p.is_null() || size > 16 {
        return Err(BlasError::INVALID_VALUE);
    }
    let mut out = [0u8; 16];
    if device {
        out[..8].copy_from_slice(&(p as u64).to_le_bytes());
    } else {
        // SAFETY: `p` is non-null (checked above), and in host pointer mode cuBLAS's contract
        // makes it point to a readable scalar of the routine's type, which is `size` bytes.
        let src = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), size) };
        out[..size].copy_from_slice(src);
    }
    Ok(out)
}

impl Call {
    fn device(&self) -> bool {
        self.r.flags & BLAS_DEVICE_POINTERS != 0
    }

    fn alpha(&mut self, p: *const c_void, size: usize) -> Result<&mut Self> {
        self.r.alpha = scalar(self.device(), p, size)?;
        Ok(self)
    }

    fn beta(&mut self, p: *const c_void, size: usize) -> Result<&mut Self> {
        self.r.beta = scalar(self.device(), p, size)?;
        Ok(self)
    }

    /// Posts an operation with no host result.
    fn post(&self) -> Result<()> {
        validate(&self.r).map_err(BlasError)?;
        self.c
            .post::<ops::BlasCall>(&self.r)
            .map_err(BlasError::from)
    }

    /// Sends a call and waits for it (for results the host needs).
    fn wait(&self) -> Result<[u8; 16]> {
        validate(&self.r).map_err(BlasError)?;
        let r: BlasCallResp = self
            .c
            .call::<ops::BlasCall>(&self.r)
            .map_err(BlasError::from)?;
        Ok(r.value)
    }

    /// A reduction's `size`-byte result: written to `out` on the host, or (device pointer
    /// mode) by the backend to device address `out`, asynchronously.
    fn reduce(&mut self, out: *mut c_void, size: usize) -> Result<()> {
        if out.is_null() {
            return Err(BlasError::INVALID_VALUE);
        }
        if self.device() {
            self.r.result = out as u64;
            return self.post();
        }
        let v = self.wait()?;
        // SAFETY: `out` is non-null (checked above), and in host pointer mode cuBLAS's
        // contract makes it a writable host result of the routine's type, `size` bytes; `v`
        // holds 16 >= `size` bytes and is a local, so the ranges do not overlap.
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
) -> Result<()> {
    let mut c = begin(h, f, ty)?;
    (c.r.n, c.r.x, c.r.incx) = (n.into(), x as u64, incx.into());
    c.reduce(out, size)
}

/// `asum`/`nrm2`: a real result of the vector's precision.
pub(super) fn real_reduce(
    h: H,
    f: u32,
    ty: u32,
    n: c_int,
    x: *const c_void,
    incx: c_int,
    out: *mut c_void,
) -> Result<()> {
    let size = if matches!(ty, R32 | C32) { 4 } else { 8 };
    reduce1(h, f, ty, n, x, incx, out, size)
}

pub(super) fn index_reduce(
    h: H,
    f: u32,
    ty: u32,
    n: c_int,
    x: *const c_void,
    incx: c_int,
    out: *mut c_int,
) -> Result<()> {
    reduce1(h, f, ty, n, x, incx, out.cast(), 4)
}

#[allow(clippy::too_many_arguments)]
pub(super) fn dot(
    h: H,
    f: u32,
    ty: u32,
    n: c_int,
    x: *const c_void,
    incx: c_int,
    y: *const c_void,
    incy: c_int,
    out: *mut c_void,
) -> Result<()> {
    let mut c = begin(h, f, ty)?;
    (c.r.n, c.r.x, c.r.incx, c.r.y, c.r.incy) =
        (n.into(), x as u64, incx.into(), y as u64, incy.into());
    c.reduce(out, elem_size(ty))
}

/// `axpy`, `copy`, `swap`, `rot` (`alpha` and `beta` are the scalars, or null).
#[allow(clippy::too_many_arguments)]
pub(super) fn vec2(
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
) -> Result<()> {
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
}

pub(super) fn scal(
    h: H,
    ty: u32,
    sty: u32,
    n: c_int,
    alpha: *const c_void,
    x: *mut c_void,
    incx: c_int,
) -> Result<()> {
    let mut c = begin(h, func::SCAL, ty)?;
    c.r.type_b = sty;
    c.alpha(alpha, elem_size(sty))?;
    (c.r.n, c.r.x, c.r.incx) = (n.into(), x as u64, incx.into());
    if n <= 0 || incx <= 0 {
        return Ok(());
    }
    c.post()
}

#[allow(clippy::too_many_arguments)]
pub(super) fn gemv(
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
) -> Result<()> {
    let mut c = begin(h, func::GEMV, ty)?;
    c.alpha(alpha, elem_size(ty))?.beta(beta, elem_size(ty))?;
    let r = &mut c.r;
    (r.trans_a, r.m, r.n, r.a, r.lda) = (t as u32, m.into(), n.into(), a as u64, lda.into());
    (r.x, r.incx, r.y, r.incy) = (x as u64, incx.into(), y as u64, incy.into());
    c.post()
}

#[allow(clippy::too_many_arguments)]
pub(super) fn ger(
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
) -> Result<()> {
    let mut c = begin(h, func::GER, ty)?;
    c.alpha(alpha, elem_size(ty))?;
    let r = &mut c.r;
    r.trans_b = if conj { 2 } else { 0 };
    (r.m, r.n, r.a, r.lda) = (m.into(), n.into(), a as u64, lda.into());
    (r.x, r.incx, r.y, r.incy) = (x as u64, incx.into(), y as u64, incy.into());
    c.post()
}

#[allow(clippy::too_many_arguments)]
pub(super) fn symv(
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
) -> Result<()> {
    let mut c = begin(h, func::SYMV, ty)?;
    c.alpha(alpha, elem_size(ty))?.beta(beta, elem_size(ty))?;
    let r = &mut c.r;
    (r.uplo, r.n, r.a, r.lda) = (uplo as u32, n.into(), a as u64, lda.into());
    (r.x, r.incx, r.y, r.incy) = (x as u64, incx.into(), y as u64, incy.into());
    c.post()
}

#[allow(clippy::too_many_arguments)]
pub(super) fn trsv(
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
) -> Result<()> {
    let mut c = begin(h, func::TRSV, ty)?;
    let r = &mut c.r;
    (r.uplo, r.trans_a, r.diag, r.n) = (uplo as u32, t as u32, diag as u32, n.into());
    (r.a, r.lda, r.x, r.incx) = (a as u64, lda.into(), x as u64, incx.into());
    c.post()
}

/// The arguments of the GEMM family.
pub(super) struct Gemm {
    pub(super) ta: c_int,
    pub(super) tb: c_int,
    pub(super) m: c_int,
    pub(super) n: c_int,
    pub(super) k: c_int,
    pub(super) alpha: *const c_void,
    pub(super) a: u64,
    pub(super) lda: c_int,
    pub(super) b: u64,
    pub(super) ldb: c_int,
    pub(super) beta: *const c_void,
    pub(super) c: u64,
    pub(super) ldc: c_int,
}

/// Scalar bytes of a `cublasComputeType_t` for output type `tc`.
fn ex_scalar_size(compute: c_int, tc: u32) -> Result<usize> {
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
        _ => return Err(BlasError::INVALID_VALUE),
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
        dtype::R_16BF => tb == dtype::R_16BF && (tc == R32 || tc == dtype::R_16BF) && c32,
        _ => false,
    }
}

/// Runs a GEMM: `types` = (A, B, C, compute), `batch` = (count, strides) for strided
/// batches, `array` for the pointer-array form.
pub(super) fn gemm(
    h: H,
    g: &Gemm,
    types: (u32, u32, u32, c_int),
    f: u32,
    batch: Option<(c_int, [c_longlong; 3])>,
) -> Result<()> {
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
            return Err(BlasError::INVALID_VALUE);
        }
        if count == 0 {
            return validate(r).map_err(BlasError);
        }
        (r.batch, r.stride_a, r.stride_b, r.stride_c) = (count.into(), s[0], s[1], s[2]);
    }
    if f == func::GEMM_BATCHED && r.batch == 0 {
        return validate(r).map_err(BlasError);
    }
    // Uncommon type combinations wait for the backend's verdict, so one it cannot run
    // fails here (CUBLAS_STATUS_NOT_SUPPORTED) instead of asynchronously.
    if compute != 0 && !common_ex(ta, tb, tc, compute) {
        return c.wait().map(drop);
    }
    c.post()
}

#[allow(clippy::too_many_arguments)]
pub(super) fn symm(
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
) -> Result<()> {
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
}

#[allow(clippy::too_many_arguments)]
pub(super) fn syrk(
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
) -> Result<()> {
    let mut c = begin(h, func::SYRK, ty)?;
    c.alpha(alpha, elem_size(ty))?.beta(beta, elem_size(ty))?;
    let r = &mut c.r;
    (r.uplo, r.trans_a, r.n, r.k) = (uplo as u32, t as u32, n.into(), k.into());
    (r.a, r.lda, r.c, r.ldc) = (a as u64, lda.into(), cc as u64, ldc.into());
    c.post()
}

#[allow(clippy::too_many_arguments)]
pub(super) fn trsm(
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
) -> Result<()> {
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
}

#[allow(clippy::too_many_arguments)]
pub(super) fn geam(
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
) -> Result<()> {
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
}

#[allow(clippy::too_many_arguments)]
pub(super) fn getrf(
    h: H,
    ty: u32,
    n: c_int,
    a: *const c_void,
    lda: c_int,
    piv: *mut c_int,
    info: *mut c_int,
    batch: c_int,
) -> Result<()> {
    let mut c = begin(h, func::GETRF_BATCHED, ty)?;
    if batch < 0 || info.is_null() {
        return Err(BlasError::INVALID_VALUE);
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
        return validate(r).map_err(BlasError);
    }
    c.post()
}

#[allow(clippy::too_many_arguments)]
pub(super) fn getrs(
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
) -> Result<()> {
    if info.is_null() {
        return Err(BlasError::INVALID_VALUE);
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
    // SAFETY: `info` was checked non-null above, and cuBLAS's contract makes it a writable
    // host `int`.
    unsafe { info.write(bad) };
    if bad != 0 {
        return Err(BlasError::INVALID_VALUE);
    }
    if batch == 0 {
        return Ok(());
    }
    c.wait().map(drop)
}

/// `cublasSetVector`/`GetVector` and their async forms: `n` elements of `es` bytes, `incx`
/// and `incy` elements apart.
#[allow(clippy::too_many_arguments)]
pub(super) fn vector_copy(
    n: c_int,
    es: c_int,
    src: *const c_void,
    incx: c_int,
    dst: *mut c_void,
    incy: c_int,
    kind: c_int,
    stream: Option<cudaStream_t>,
) -> Result<()> {
    if n < 0 || es <= 0 || incx <= 0 || incy <= 0 {
        return Err(BlasError::INVALID_VALUE);
    }
    if n == 0 {
        return Ok(());
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
pub(super) fn matrix_copy(
    rows: c_int,
    cols: c_int,
    es: c_int,
    src: *const c_void,
    lda: c_int,
    dst: *mut c_void,
    ldb: c_int,
    kind: c_int,
    stream: Option<cudaStream_t>,
) -> Result<()> {
    if rows < 0 || cols < 0 || es <= 0 || lda < rows.max(1) || ldb < rows.max(1) {
        return Err(BlasError::INVALID_VALUE);
    }
    if rows == 0 || cols == 0 {
        return Ok(());
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
) -> Result<()> {
    if dst == 0 || src == 0 {
        return Err(BlasError::INVALID_VALUE);
    }
    let Ok(c) = client::client() else {
        return Err(BlasError::NOT_INITIALIZED);
    };
    let stream = match stream.map(|s| stream_handle(c, s, false)) {
        Some(Ok(h)) => Some(h),
        Some(Err(_)) => return Err(BlasError::INVALID_VALUE),
        None => None,
    };
    copy_2d(dst, dpitch, src, spitch, width, height, kind, stream).map_err(|e| {
        // As cudart would have, remember the CUDA error for cudaGetLastError.
        state::set_last_error(e.0);
        BlasError::MAPPING_ERROR
    })
}
