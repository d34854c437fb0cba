// SPDX-License-Identifier: Apache-2.0 OR MIT
//! `cublasGemmEx` and friends on the CPU: GEMM over mixed element types (half-precision
//! inputs) with a `cublasComputeType_t`, computed in `f32`.

use half::{bf16, f16};
use vcuda_protocol::lib::{dtype, func};

use super::call::{Ctx, UNSUPPORTED, compute, int, stored};
use super::elem::Elem;
use super::extent::{mat_extent, offset};
use super::lazy::{C32, C64};
use super::level3::{gemm, gemm_operands};
use crate::executor::ExecResult;

/// A matrix of `GemmEx` operands converted to `f32` or `f64`.
fn load_matrix<W: Copy>(
    cx: &Ctx<'_>,
    t: u32,
    addr: u64,
    rows: i64,
    cols: i64,
    ld: i64,
    conv: impl Fn(&[u8]) -> W,
) -> ExecResult<Vec<W>> {
    let size = type_size(t).ok_or(UNSUPPORTED)?;
    let p = cx.raw(addr, mat_extent(rows, cols, ld)?, size, size)?;
    let mut out = Vec::with_capacity((rows.max(0) * cols.max(0)) as usize);
    for j in 0..cols {
        for i in 0..rows {
            let off = ((i + j * ld) as u64 * size) as usize;
            // SAFETY: (i, j) is inside the `rows x cols` matrix (leading dimension `ld`,
            // elements of `size` bytes) whose extent `raw` checked.
            let b = unsafe { std::slice::from_raw_parts(p.add(off), size as usize) };
            out.push(conv(b));
        }
    }
    Ok(out)
}

fn type_size(t: u32) -> Option<u64> {
    match t {
        dtype::R_16F | dtype::R_16BF => Some(2),
        dtype::R_32F => Some(4),
        dtype::R_64F | dtype::C_32F => Some(8),
        dtype::C_64F => Some(16),
        _ => None,
    }
}

fn to_f32(t: u32) -> impl Fn(&[u8]) -> f32 {
    move |b: &[u8]| match t {
        dtype::R_16F => f16::from_le_bytes([b[0], b[1]]).to_f32(),
        dtype::R_16BF => bf16::from_le_bytes([b[0], b[1]]).to_f32(),
        _ => f32::from_le_bytes(b[..4].try_into().unwrap_or_default()),
    }
}

/// `cublasGemmEx` and friends for the type combinations the plain routines do not cover:
/// `R_16F` (or `R_16BF`) inputs with an output of the same type or `R_32F`, computed in
/// `f32` (the scalars are `f32`, or `f16` for `CUBLAS_COMPUTE_16F` over `R_16F`). Same-type `f32`/`f64`/complex requests run
/// the plain routines.
pub(super) fn gemm_ex(cx: &mut Ctx<'_>) -> ExecResult<()> {
    let r = *cx.r;
    use compute::*;
    let c32 = matches!(
        r.compute,
        C32F | C32F_PEDANTIC
            | C32F_FAST_16F
            | C32F_FAST_16BF
            | C32F_FAST_TF32
            | C32F_EMULATED_16BFX9
    );
    let c64 = matches!(r.compute, C64F | C64F_PEDANTIC);
    let c16 = matches!(r.compute, C16F | C16F_PEDANTIC);
    let same = r.type_a == r.type_b && r.type_a == r.type_c;
    match (r.type_a, same) {
        (dtype::R_32F | dtype::C_32F, true) if c32 => {
            return if r.type_a == dtype::R_32F {
                gemm::<f32>(cx)
            } else {
                gemm::<C32>(cx)
            };
        }
        (dtype::R_64F | dtype::C_64F, true) if c64 => {
            return if r.type_a == dtype::R_64F {
                gemm::<f64>(cx)
            } else {
                gemm::<C64>(cx)
            };
        }
        _ => {}
    }
    let half = r.type_a;
    let half_out = r.type_c == half;
    if !matches!(half, dtype::R_16F | dtype::R_16BF)
        || r.type_b != half
        || !(half_out || r.type_c == dtype::R_32F)
        || !(c32 || (c16 && half_out && half == dtype::R_16F))
    {
        return Err(UNSUPPORTED);
    }
    let scalar = |cx: &Ctx<'_>, f: &[u8; 16]| -> ExecResult<f32> {
        if c16 {
            let b = cx.scalar_bytes(f, 2)?;
            Ok(f16::from_le_bytes([b[0], b[1]]).to_f32())
        } else {
            cx.scalar::<f32>(f)
        }
    };
    let (alpha, beta) = (scalar(cx, &r.alpha)?, scalar(cx, &r.beta)?);
    let (ar, ac) = stored(r.trans_a, r.m, r.k);
    let (br, bc) = stored(r.trans_b, r.k, r.n);
    let csize = type_size(r.type_c).ok_or(UNSUPPORTED)?;
    let ops = gemm_operands(cx, 2)?;
    // Strides of a strided batch count elements of each operand's own type.
    let ops: Vec<_> = if r.func == func::GEMM && r.batch > 0 {
        (0..r.batch)
            .map(|i| {
                Ok((
                    offset(r.a, i, r.stride_a, 2)?,
                    offset(r.b, i, r.stride_b, 2)?,
                    offset(r.c, i, r.stride_c, csize)?,
                ))
            })
            .collect::<ExecResult<_>>()?
    } else {
        ops
    };
    for &(a, b, c) in &ops {
        // Check everything before writing anything.
        cx.raw(a, mat_extent(ar, ac, r.lda)?, 2, 2)?;
        cx.raw(b, mat_extent(br, bc, r.ldb)?, 2, 2)?;
        cx.raw(c, mat_extent(r.m, r.n, r.ldc)?, csize, csize)?;
    }
    if r.m == 0 || r.n == 0 {
        return Ok(());
    }
    for (a, b, c) in ops {
        let am = load_matrix(cx, half, a, ar, ac, r.lda, to_f32(half))?;
        let bm = load_matrix(cx, half, b, br, bc, r.ldb, to_f32(half))?;
        let mut cm = if beta == 0.0 {
            vec![0.0f32; (r.m * r.n) as usize]
        } else {
            load_matrix(cx, r.type_c, c, r.m, r.n, r.ldc, to_f32(r.type_c))?
        };
        // SAFETY: `am`, `bm` and `cm` are dense local buffers of the stored op(A), op(B)
        // and C, their leading dimensions the rows of each.
        unsafe {
            f32::gemm(
                r.trans_a,
                r.trans_b,
                int(r.m),
                int(r.n),
                int(r.k),
                alpha,
                am.as_ptr(),
                int(ar.max(1)),
                bm.as_ptr(),
                int(br.max(1)),
                beta,
                cm.as_mut_ptr(),
                int(r.m),
            )
        };
        let p = cx.raw(c, mat_extent(r.m, r.n, r.ldc)?, csize, csize)?;
        for j in 0..r.n {
            for i in 0..r.m {
                let v = cm[(i + j * r.m) as usize];
                let off = ((i + j * r.ldc) as u64 * csize) as usize;
                let bytes: &[u8] = if half_out && half == dtype::R_16BF {
                    &bf16::from_f32(v).to_le_bytes()
                } else if half_out {
                    &f16::from_f32(v).to_le_bytes()
                } else {
                    &v.to_le_bytes()
                };
                // SAFETY: (i, j) is inside C (m x n, leading dimension ldc, `csize`-byte
                // elements), whose extent `raw` checked just above; `bytes` is a local of
                // `csize` bytes and cannot overlap device memory.
                unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), p.add(off), bytes.len()) };
            }
        }
    }
    Ok(())
}
