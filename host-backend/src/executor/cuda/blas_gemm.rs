// SPDX-License-Identifier: Apache-2.0 OR MIT
//! GEMM on the CUDA executor: plain, strided-batched and pointer-array-batched, in every
//! type combination `cublasGemmEx` takes.

use std::ffi::c_void;

use cudarc::cublas::sys as cb;
use vcuda_protocol::blas::{self as check, OP_N};
use vcuda_protocol::lib::{dtype, func};

use super::super::cublas_result as cublas;
use super::{Call, FAULT, UNSUPPORTED, compute_type, data_type, int, ok, op, size_of_type};
use crate::executor::ExecResult;

impl Call<'_> {
    /// GEMM, strided-batched GEMM and pointer-array GEMM through the `Ex` entry points.
    pub(super) fn gemm(&mut self) -> ExecResult<()> {
        let r = *self.r;
        let (sa, sb, sc) = (
            size_of_type(r.type_a).ok_or(UNSUPPORTED)?,
            size_of_type(r.type_b).ok_or(UNSUPPORTED)?,
            size_of_type(r.type_c).ok_or(UNSUPPORTED)?,
        );
        // The plain routines' compute type, else the request's.
        let compute = match (r.compute, r.type_a) {
            (0, dtype::R_64F | dtype::C_64F) => 70,
            (0, _) => 68,
            (c, _) => c,
        };
        // Scalars are of the compute type's precision (complex for complex outputs).
        let ssize = match compute {
            64 | 65 => 2,
            70 | 71 | 79 => 8,
            _ => 4,
        } * if check::is_complex(r.type_c) { 2 } else { 1 };
        let (ar, ac) = if r.trans_a == OP_N {
            (r.m, r.k)
        } else {
            (r.k, r.m)
        };
        let (br, bc) = if r.trans_b == OP_N {
            (r.k, r.n)
        } else {
            (r.n, r.k)
        };
        let count = if r.batch == 0 { 1 } else { r.batch };
        if r.func == func::GEMM_BATCHED {
            // Arrays of matrix pointers, in device memory: every matrix they name is
            // checked before cuBLAS reads the same arrays.
            let arrays = [r.a, r.b, r.c].map(|p| self.exec.pointer_array(p, r.batch, r.stream));
            let [pa, pb, pc] = arrays;
            let (pa, pb, pc) = (pa?, pb?, pc?);
            for i in 0..pa.len() {
                self.matrix(pa[i], ar, ac, r.lda, sa)?;
                self.matrix(pb[i], br, bc, r.ldb, sb)?;
                self.matrix(pc[i], r.m, r.n, r.ldc, sc)?;
            }
        }
        for i in (0..count).filter(|_| r.func != func::GEMM_BATCHED) {
            let at = |base: u64, stride: i64, size: u64| -> ExecResult<u64> {
                let off = i128::from(i) * i128::from(stride) * i128::from(size);
                u64::try_from(i128::from(base) + off).map_err(|_| FAULT)
            };
            self.matrix(at(r.a, r.stride_a, sa)?, ar, ac, r.lda, sa)?;
            self.matrix(at(r.b, r.stride_b, sb)?, br, bc, r.ldb, sb)?;
            self.matrix(at(r.c, r.stride_c, sc)?, r.m, r.n, r.ldc, sc)?;
        }
        let al = self.scalar(&r.alpha, ssize)?;
        let be = self.scalar(&r.beta, ssize)?;
        let (ta, tb, tc) = (
            data_type(r.type_a)?,
            data_type(r.type_b)?,
            data_type(r.type_c)?,
        );
        let ct = compute_type(compute)?;
        let algo = cb::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT;
        let (m, n, k) = (int(r.m), int(r.n), int(r.k));
        let (a, b, c) = (
            r.a as *const c_void,
            r.b as *const c_void,
            r.c as *mut c_void,
        );
        // SAFETY: every matrix of the batch was checked above; the handle's context is
        // current.
        ok(unsafe {
            if r.func == func::GEMM_BATCHED {
                cublas::gemm_batched_ex(
                    self.h,
                    op(r.trans_a),
                    op(r.trans_b),
                    m,
                    n,
                    k,
                    al,
                    a.cast(),
                    ta,
                    int(r.lda),
                    b.cast(),
                    tb,
                    int(r.ldb),
                    be,
                    c.cast(),
                    tc,
                    int(r.ldc),
                    int(r.batch),
                    ct,
                    algo,
                )
            } else if r.batch == 0 {
                cublas::gemm_ex(
                    self.h,
                    op(r.trans_a),
                    op(r.trans_b),
                    m,
                    n,
                    k,
                    al,
                    a,
                    ta,
                    int(r.lda),
                    b,
                    tb,
                    int(r.ldb),
                    be,
                    c,
                    tc,
                    int(r.ldc),
                    ct,
                    algo,
                )
            } else {
                cublas::gemm_strided_batched_ex(
                    self.h,
                    op(r.trans_a),
                    op(r.trans_b),
                    m,
                    n,
                    k,
                    al,
                    a,
                    ta,
                    int(r.lda),
                    r.stride_a,
                    b,
                    tb,
                    int(r.ldb),
                    r.stride_b,
                    be,
                    c,
                    tc,
                    int(r.ldc),
                    r.stride_c,
                    int(r.batch),
                    ct,
                    algo,
                )
            }
        })
    }
}
