// SPDX-License-Identifier: Apache-2.0 OR MIT
//! BLAS level 1 on the CPU: vector reductions (`asum`, `nrm2`, `iamax`, `iamin`, `dot`)
//! and vector updates (`axpy`, `copy`, `swap`, `rot`, `scal`).

use vcuda_protocol::blas as check;
use vcuda_protocol::lib::func;

use super::call::{Ctx, UNSUPPORTED, int};
use super::elem::Elem;
use crate::executor::ExecResult;

/// `asum` or `nrm2`: a real result, 0 for an empty vector or a non-positive increment.
pub(super) fn asum_nrm2<T: Elem>(cx: &mut Ctx<'_>) -> ExecResult<[u8; 16]> {
    let r = *cx.r;
    let v = if r.n <= 0 || r.incx <= 0 {
        0.0
    } else {
        let x = cx.vector::<T>(r.x, r.n, r.incx)?;
        // SAFETY: `x` covers n elements incx apart (checked by `vector`).
        unsafe {
            if r.func == func::ASUM {
                T::asum(int(r.n), x, int(r.incx))
            } else {
                T::nrm2(int(r.n), x, int(r.incx))
            }
        }
    };
    cx.result(&T::real_bytes(v)[..T::REAL_SIZE])
}

/// `iamax` or `iamin`: the 1-based index of the first largest (smallest) `|re| + |im|`,
/// 0 for an empty vector or a non-positive increment.
pub(super) fn iamax_iamin<T: Elem>(cx: &mut Ctx<'_>) -> ExecResult<[u8; 16]> {
    let r = *cx.r;
    let i: i32 = if r.n <= 0 || r.incx <= 0 {
        0
    } else {
        let x = cx.vector::<T>(r.x, r.n, r.incx)?;
        if r.func == func::IAMAX {
            // SAFETY: `x` covers n elements incx apart (checked by `vector`).
            unsafe { T::iamax(int(r.n), x, int(r.incx)) + 1 }
        } else {
            let (mut best, mut at) = (f64::INFINITY, 0);
            for i in 0..r.n as usize {
                // SAFETY: element i (< n, incx > 0) lies within the extent `vector` checked.
                let v = unsafe { x.add(i * r.incx as usize).read() }.abs1();
                if v < best {
                    (best, at) = (v, i as i32 + 1);
                }
            }
            at
        }
    };
    cx.result(&i.to_le_bytes())
}

/// `dot`, or `dotc` (conjugating x) for complex types.
pub(super) fn dot<T: Elem>(cx: &mut Ctx<'_>) -> ExecResult<[u8; 16]> {
    let r = *cx.r;
    let v = if r.n <= 0 {
        T::zero()
    } else {
        let x = cx.vector::<T>(r.x, r.n, r.incx)?;
        let y = cx.vector::<T>(r.y, r.n, r.incy)?;
        // SAFETY: `x` and `y` cover n elements incx and incy apart (checked by `vector`).
        unsafe {
            T::dot(
                int(r.n),
                x,
                int(r.incx),
                y,
                int(r.incy),
                r.func == func::DOTC,
            )
        }
    };
    let mut b = [0u8; 16];
    v.store(&mut b);
    cx.result(&b[..T::SIZE as usize])
}

/// `axpy`, `copy`, `swap` or `rot` (real types only; `c` in alpha, `s` in beta).
pub(super) fn two_vectors<T: Elem>(cx: &mut Ctx<'_>) -> ExecResult<()> {
    let r = *cx.r;
    if r.n <= 0 {
        return Ok(());
    }
    if r.func == func::ROT && T::COMPLEX {
        return Err(UNSUPPORTED);
    }
    let (n, ix, iy) = (int(r.n), int(r.incx), int(r.incy));
    let alpha = cx.scalar::<T>(&r.alpha)?;
    let beta = if r.func == func::ROT {
        cx.scalar::<T>(&r.beta)?
    } else {
        T::zero()
    };
    let x = cx.vector::<T>(r.x, r.n, r.incx)?;
    let y = cx.vector::<T>(r.y, r.n, r.incy)?;
    // SAFETY: both vectors' extents are checked; BLAS allows them to alias.
    unsafe {
        match r.func {
            func::AXPY => T::axpy(n, alpha, x, ix, y, iy),
            func::COPY => T::copy(n, x, ix, y, iy),
            func::SWAP => T::swap(n, x, ix, y, iy),
            _ => T::rot(n, x, ix, y, iy, alpha.re(), beta.re()),
        }
    }
    Ok(())
}

/// `scal`, and `csscal`/`zdscal` (a complex vector scaled by a real).
pub(super) fn scal<T: Elem>(cx: &mut Ctx<'_>) -> ExecResult<()> {
    let r = *cx.r;
    if r.n <= 0 || r.incx <= 0 {
        return Ok(());
    }
    let (n, ix) = (int(r.n), int(r.incx));
    let x = cx.vector::<T>(r.x, r.n, r.incx)?;
    if T::COMPLEX && !check::is_complex(r.type_b) && r.type_b != 0 {
        // csscal / zdscal: a real scalar of the vector's precision.
        let a = if T::REAL_SIZE == 4 {
            f64::from(cx.scalar::<f32>(&r.alpha)?)
        } else {
            cx.scalar::<f64>(&r.alpha)?
        };
        // SAFETY: `x` covers n elements incx apart (checked by `vector`).
        unsafe { T::scal_real(n, a, x, ix) };
    } else {
        let a = cx.scalar::<T>(&r.alpha)?;
        // SAFETY: `x` covers n elements incx apart (checked by `vector`).
        unsafe { T::scal(n, a, x, ix) };
    }
    Ok(())
}
