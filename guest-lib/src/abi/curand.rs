// SPDX-License-Identifier: Apache-2.0 OR MIT
//! cuRAND (`libcurand.so.10`): generators run in the backend.
//!
//! A device generator fills device memory on its stream: the request is posted without
//! waiting, after the checks cuRAND makes (lengths that must be even or a multiple of the
//! dimensions, the right generator type). A host generator (`curandCreateGeneratorHost`)
//! waits for its numbers, which come back in the reply's in segments; one call may ask for
//! at most `MAX_DATA_LEN` bytes (`CURAND_STATUS_ALLOCATION_FAILED` beyond).
//!
//! `curandCreatePoissonDistribution` builds the device API's discrete distribution in the
//! guest, in `curand_discrete.h`'s layout: a square histogram (Marsaglia, Tsang and Wang's
//! alias table, `CURAND_M2`) of the Poisson probabilities, or for lambda above 2000 a normal
//! approximation, as cuRAND documents; it is one device allocation that `curand_discrete`
//! reads in kernels. The Sobol direction vector and scramble constant tables
//! (`curandGetDirectionVectors*`, `curandGetScrambleConstants*`) are not provided
//! (`CURAND_STATUS_INTERNAL_ERROR`): they need cuRAND's 20000-dimension tables.

use crate::core::curand::*;
use crate::error::RandError;
use crate::ffi::cudaStream_t;
use std::ffi::{c_int, c_uint, c_ulonglong, c_void};
use vcuda_protocol::lib::{dist, set};
use vcuda_protocol::{HandleReq, ops};

entry_lib! {
    fn curandCreateGenerator(out: *mut G, rng_type: c_uint) -> Result<(), RandError> {
        let g = create(!out.is_null(), rng_type, false)?;
        // SAFETY: the caller's arguments, valid as cuRAND requires.
        unsafe { set_out(out, g as G) }
    }

    fn curandCreateGeneratorHost(out: *mut G, rng_type: c_uint) -> Result<(), RandError> {
        let g = create(!out.is_null(), rng_type, true)?;
        // SAFETY: the caller's arguments, valid as cuRAND requires.
        unsafe { set_out(out, g as G) }
    }

    fn curandDestroyGenerator(g: G) -> Result<(), RandError> {
        with_gens(|m| m.remove(&(g as u64))).ok_or(RandError::NOT_INITIALIZED)?;
        let c = client()?;
        c.call::<ops::RandDestroy>(&HandleReq { handle: g as u64 })
            .map_err(RandError::from)
    }

    fn curandGetVersion(out: *mut c_int) -> Result<(), RandError> {
        // SAFETY: the caller's arguments, valid as cuRAND requires.
        unsafe { set_out(out, VERSION) }
    }

    fn curandGetProperty(ty: c_int, out: *mut c_int) -> Result<(), RandError> {
        match VERSION_PARTS.get(ty as usize) {
            // SAFETY: the caller's output pointer, valid as cuRAND requires.
            Some(&v) if ty >= 0 => unsafe { set_out(out, v) },
            _ => Err(RandError::OUT_OF_RANGE),
        }
    }

    fn curandSetStream(g: G, stream: cudaStream_t) -> Result<(), RandError> {
        with_gens(|m| match m.get_mut(&(g as u64)) {
            Some(s) => {
                s.stream = stream as usize;
                Ok(())
            }
            None => Err(RandError::NOT_INITIALIZED),
        })
    }

    fn curandSetPseudoRandomGeneratorSeed(g: G, seed: c_ulonglong) -> Result<(), RandError> {
        set_param(g, set::SEED, seed)
    }

    fn curandSetGeneratorOffset(g: G, offset: c_ulonglong) -> Result<(), RandError> {
        set_param(g, set::OFFSET, offset)
    }

    fn curandSetGeneratorOrdering(g: G, order: c_uint) -> Result<(), RandError> {
        set_param(g, set::ORDERING, order.into())
    }

    fn curandSetQuasiRandomGeneratorDimensions(g: G, dims: c_uint) -> Result<(), RandError> {
        set_param(g, set::DIMENSIONS, dims.into())
    }

    fn curandGenerateSeeds(g: G) -> Result<(), RandError> {
        // Seeds are computed when a generator first runs.
        gen_state(g).map(drop)
    }

    fn curandGenerate(g: G, out: *mut c_uint, n: usize) -> Result<(), RandError> {
        // SAFETY: the caller's arguments, valid as cuRAND requires.
        unsafe { generate_c(g, out.cast(), n, dist::BITS32, (0.0, 0.0)) }
    }

    fn curandGenerateLongLong(g: G, out: *mut c_ulonglong, n: usize) -> Result<(), RandError> {
        // SAFETY: the caller's arguments, valid as cuRAND requires.
        unsafe { generate_c(g, out.cast(), n, dist::BITS64, (0.0, 0.0)) }
    }

    fn curandGenerateUniform(g: G, out: *mut f32, n: usize) -> Result<(), RandError> {
        // SAFETY: the caller's arguments, valid as cuRAND requires.
        unsafe { generate_c(g, out.cast(), n, dist::UNIFORM_F32, (0.0, 0.0)) }
    }

    fn curandGenerateUniformDouble(g: G, out: *mut f64, n: usize) -> Result<(), RandError> {
        // SAFETY: the caller's arguments, valid as cuRAND requires.
        unsafe { generate_c(g, out.cast(), n, dist::UNIFORM_F64, (0.0, 0.0)) }
    }

    fn curandGenerateNormal(g: G, out: *mut f32, n: usize, mean: f32, stddev: f32) -> Result<(), RandError> {
        // SAFETY: the caller's arguments, valid as cuRAND requires.
        unsafe { generate_c(g, out.cast(), n, dist::NORMAL_F32, (mean.into(), stddev.into())) }
    }

    fn curandGenerateNormalDouble(g: G, out: *mut f64, n: usize, mean: f64, stddev: f64) -> Result<(), RandError> {
        // SAFETY: the caller's arguments, valid as cuRAND requires.
        unsafe { generate_c(g, out.cast(), n, dist::NORMAL_F64, (mean, stddev)) }
    }

    fn curandGenerateLogNormal(g: G, out: *mut f32, n: usize, mean: f32, stddev: f32) -> Result<(), RandError> {
        // SAFETY: the caller's arguments, valid as cuRAND requires.
        unsafe { generate_c(g, out.cast(), n, dist::LOG_NORMAL_F32, (mean.into(), stddev.into())) }
    }

    fn curandGenerateLogNormalDouble(g: G, out: *mut f64, n: usize, mean: f64, stddev: f64) -> Result<(), RandError> {
        // SAFETY: the caller's arguments, valid as cuRAND requires.
        unsafe { generate_c(g, out.cast(), n, dist::LOG_NORMAL_F64, (mean, stddev)) }
    }

    fn curandGeneratePoisson(g: G, out: *mut c_uint, n: usize, lambda: f64) -> Result<(), RandError> {
        // SAFETY: the caller's arguments, valid as cuRAND requires.
        unsafe { generate_c(g, out.cast(), n, dist::POISSON, (lambda, 0.0)) }
    }

    fn curandCreatePoissonDistribution(lambda: f64, out: *mut *mut c_void) -> Result<(), RandError> {
        let d = create_poisson(!out.is_null(), lambda)?;
        // SAFETY: the caller's arguments, valid as cuRAND requires.
        unsafe { set_out(out, d as *mut c_void) }
    }

    fn curandDestroyDistribution(d: *mut c_void) -> Result<(), RandError> {
        destroy_distribution(d)
    }

    fn curandGeneratePoissonMethod(g: G, out: *mut c_uint, n: usize, lambda: f64, _method: c_int) -> Result<(), RandError> {
        // Every method draws from the same distribution; the backend picks its own.
        // SAFETY: the caller's arguments, valid as cuRAND requires.
        unsafe { generate_c(g, out.cast(), n, dist::POISSON, (lambda, 0.0)) }
    }
}

/// Writes `v` through one of cuRAND's output pointers (null: `CURAND_STATUS_OUT_OF_RANGE`).
///
/// # Safety
///
/// `p` is null or valid for writing a `T`.
unsafe fn set_out<T>(p: *mut T, v: T) -> std::result::Result<(), RandError> {
    if p.is_null() {
        return Err(RandError::OUT_OF_RANGE);
    }
    // SAFETY: non-null; the caller's output pointer.
    unsafe { p.write_unaligned(v) };
    Ok(())
}

/// `curandGenerate*`: `out` is device memory for a device generator, the program's buffer
/// of `n` numbers for a host generator.
///
/// # Safety
///
/// For a host generator, `out` is null or valid for writes of `n` numbers of `d`'s type.
unsafe fn generate_c(
    g: G,
    out: *mut c_void,
    n: usize,
    d: u32,
    params: (f64, f64),
) -> std::result::Result<(), RandError> {
    generate(g, out as u64, n, d, params, |len| {
        // SAFETY: the host generator's buffer, `len` bytes (`n` numbers of `d`'s type):
        // the caller's contract; `host_slice_mut` checks for null.
        unsafe { crate::ffi::host_slice_mut(out, len) }.map_err(|_| RandError::LAUNCH_FAILURE)
    })
}
