// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The batched LU routines on the CPU: `getrfBatched` (LAPACK's `getrf`, or an LU without
//! pivoting for a null pivot array) and `getrsBatched` (LAPACK's `getrs`).

use std::ffi::c_int;

use vcuda_protocol::blas::{OP_N, OP_T};
use vcuda_protocol::lib::BLAS_EXECUTION_FAILED;

use super::call::{Ctx, int};
use super::elem::Elem;
use super::extent::offset;
use crate::executor::{ExecResult, Status};

/// LU factorization without pivoting (`getrfBatched` with a null pivot array).
///
/// # Safety
/// `a` must cover an `n x n` matrix with leading dimension `lda`.
unsafe fn lu_no_pivot<T: Elem>(n: i64, a: *mut T, lda: i64) -> i32 {
    let idx = |i: i64, j: i64| (i + j * lda) as usize;
    let mut info = 0;
    for k in 0..n {
        // SAFETY: (k, k) is inside the n x n matrix `a` covers (the caller's contract).
        let p = unsafe { a.add(idx(k, k)).read() };
        if p == T::zero() {
            if info == 0 {
                info = k as i32 + 1;
            }
            continue;
        }
        // 1 / p, computed as conj(p) / |p|^2 for complex types.
        let inv = recip(p);
        for i in k + 1..n {
            // SAFETY: i, j and k are below n, so every index is inside the n x n matrix
            // `a` covers (the caller's contract).
            unsafe {
                let l = a.add(idx(i, k)).read().mul(inv);
                a.add(idx(i, k)).write(l);
                for j in k + 1..n {
                    let u = a.add(idx(k, j)).read();
                    let v = a.add(idx(i, j)).read();
                    a.add(idx(i, j)).write(v.add(neg(l.mul(u))));
                }
            }
        }
    }
    info
}

fn neg<T: Elem>(v: T) -> T {
    let mut b = [0u8; 16];
    v.store(&mut b);
    let h = T::REAL_SIZE;
    // Flip the sign bit of every component.
    for part in b[..T::SIZE as usize].chunks_mut(h) {
        part[h - 1] ^= 0x80;
    }
    T::load(&b)
}

fn recip<T: Elem>(v: T) -> T {
    let mut b = [0u8; 16];
    v.store(&mut b);
    if T::REAL_SIZE == 4 {
        let re = f32::from_le_bytes(b[..4].try_into().unwrap_or_default());
        let im = if T::COMPLEX {
            f32::from_le_bytes(b[4..8].try_into().unwrap_or_default())
        } else {
            0.0
        };
        let d = re * re + im * im;
        b[..4].copy_from_slice(&(re / d).to_le_bytes());
        if T::COMPLEX {
            b[4..8].copy_from_slice(&(-im / d).to_le_bytes());
        }
    } else {
        let re = f64::from_le_bytes(b[..8].try_into().unwrap_or_default());
        let im = if T::COMPLEX {
            f64::from_le_bytes(b[8..16].try_into().unwrap_or_default())
        } else {
            0.0
        };
        let d = re * re + im * im;
        b[..8].copy_from_slice(&(re / d).to_le_bytes());
        if T::COMPLEX {
            b[8..16].copy_from_slice(&(-im / d).to_le_bytes());
        }
    }
    T::load(&b)
}

/// LU-factors every `n x n` matrix of the pointer array at `a`, pivots to `x` (none if
/// null), each matrix's `info` to `y`.
pub(super) fn getrf_batched<T: Elem>(cx: &mut Ctx<'_>) -> ExecResult<()> {
    let r = *cx.r;
    let mats = cx.pointer_array(r.a, r.batch)?;
    let mut checked = Vec::with_capacity(mats.len());
    for (i, &m) in mats.iter().enumerate() {
        let a = cx.matrix::<T>(m, r.n, r.n, r.lda)?;
        let piv = if r.x == 0 {
            None
        } else {
            let p = offset(r.x, i as i64, r.n, 4)?;
            Some(cx.raw(p, r.n as u64, 4, 4)?.cast::<c_int>())
        };
        let info = cx
            .raw(offset(r.y, i as i64, 1, 4)?, 1, 4, 4)?
            .cast::<c_int>();
        checked.push((a, piv, info));
    }
    for (a, piv, info) in checked {
        // SAFETY: `matrix` and `raw` checked the matrix (n x n, lda), its n pivots and its
        // info word above.
        unsafe {
            match piv {
                Some(p) if r.n > 0 => T::getrf(int(r.n), a, int(r.lda), p, info),
                Some(_) => info.write(0),
                None => info.write(lu_no_pivot(r.n, a, r.lda)),
            }
        }
    }
    Ok(())
}

/// Solves `op(A_i) X_i = B_i` for every pair of the pointer arrays at `a` and `b`, with
/// the pivots at `x` (the identity if null).
pub(super) fn getrs_batched<T: Elem>(cx: &mut Ctx<'_>) -> ExecResult<[u8; 16]> {
    let r = *cx.r;
    let a_mats = cx.pointer_array(r.a, r.batch)?;
    let b_mats = cx.pointer_array(r.b, r.batch)?;
    let identity: Vec<c_int> = (1..=int(r.n)).collect();
    let mut checked = Vec::with_capacity(a_mats.len());
    for (i, (&am, &bm)) in a_mats.iter().zip(&b_mats).enumerate() {
        let a = cx.matrix::<T>(am, r.n, r.n, r.lda)?;
        let b = cx.matrix::<T>(bm, r.n, r.k, r.ldb)?;
        let piv = if r.x == 0 {
            identity.as_ptr()
        } else {
            let p = offset(r.x, i as i64, r.n, 4)?;
            cx.raw(p, r.n as u64, 4, 4)?.cast::<c_int>().cast_const()
        };
        checked.push((a, b, piv));
    }
    let t = match r.trans_a {
        OP_N => b'N',
        OP_T => b'T',
        _ => b'C',
    };
    if r.n > 0 && r.k > 0 {
        for (a, b, piv) in checked {
            let mut info = 0;
            // SAFETY: `matrix` and `raw` checked A (n x n, lda), B (n x k, ldb) and the n
            // pivots above (or they are the local identity); pivots come from getrf
            // (1-based, in range) or are the identity; LAPACK checks its arguments and
            // reports through `info`, a local.
            unsafe {
                T::getrs(
                    t,
                    int(r.n),
                    int(r.k),
                    a,
                    int(r.lda),
                    piv,
                    b,
                    int(r.ldb),
                    &mut info,
                )
            };
            if info != 0 {
                return Err(Status(BLAS_EXECUTION_FAILED));
            }
        }
    }
    Ok([0; 16])
}
