// SPDX-License-Identifier: Apache-2.0 OR MIT
//! cuRAND's result layer: every cuRAND call the executor makes, as thin wrappers over the
//! `u32`-returning entry points of [`super::lib_ffi::curand`] that return typed errors
//! ([`RandResult`]), as `driver` does for the driver.
//!
//! Wrappers that take a generator are `unsafe`: the caller guarantees that the generator is
//! live (created here, not destroyed) and its context current; those that write numbers
//! also take the destination's contract. cuRAND validates everything else and reports
//! misuse as a status.

use cudarc::curand::sys::{
    cudaStream_t, curandGenerator_t, curandOrdering_t, curandRngType_t, curandStatus_t,
};

use super::lib_ffi::curand;

/// A cuRAND result: the error is the library's status (one this build does not know is
/// `CURAND_STATUS_INTERNAL_ERROR`, see [`curand::status`]).
pub type RandResult<T> = Result<T, curandStatus_t>;

fn ok(s: u32) -> RandResult<()> {
    match curand::status(s) {
        curandStatus_t::CURAND_STATUS_SUCCESS => Ok(()),
        s => Err(s),
    }
}

/// Whether libcurand is loaded (loading it on the first call).
pub fn present() -> bool {
    curand::present()
}

/// Creates a generator of type `t` in the current context: a host generator
/// (`curandCreateGeneratorHost`) if `host`, else a device one.
pub fn create_generator(t: curandRngType_t, host: bool) -> RandResult<curandGenerator_t> {
    let mut g: curandGenerator_t = std::ptr::null_mut();
    // SAFETY: `g` is a valid out-pointer; the type is one of cudarc's enum values.
    ok(unsafe {
        if host {
            curand::curandCreateGeneratorHost(&mut g, t)
        } else {
            curand::curandCreateGenerator(&mut g, t)
        }
    })?;
    Ok(g)
}

/// Destroys a generator.
///
/// # Safety
///
/// `g` is a live generator, not used afterwards, whose context is current.
pub unsafe fn destroy_generator(g: curandGenerator_t) -> RandResult<()> {
    // SAFETY: the caller's guarantee: `g` is live and destroyed once.
    ok(unsafe { curand::curandDestroyGenerator(g) })
}

/// `curandSetPseudoRandomGeneratorSeed`.
///
/// # Safety
///
/// `g` is a live generator whose context is current.
pub unsafe fn set_seed(g: curandGenerator_t, seed: u64) -> RandResult<()> {
    // SAFETY: the caller's guarantee; the seed is by value.
    ok(unsafe { curand::curandSetPseudoRandomGeneratorSeed(g, seed) })
}

/// `curandSetGeneratorOffset`.
///
/// # Safety
///
/// `g` is a live generator whose context is current.
pub unsafe fn set_offset(g: curandGenerator_t, offset: u64) -> RandResult<()> {
    // SAFETY: the caller's guarantee; the offset is by value.
    ok(unsafe { curand::curandSetGeneratorOffset(g, offset) })
}

/// `curandSetGeneratorOrdering`.
///
/// # Safety
///
/// `g` is a live generator whose context is current.
pub unsafe fn set_ordering(g: curandGenerator_t, order: curandOrdering_t) -> RandResult<()> {
    // SAFETY: the caller's guarantee; the ordering is one of cudarc's enum values.
    ok(unsafe { curand::curandSetGeneratorOrdering(g, order) })
}

/// `curandSetQuasiRandomGeneratorDimensions`.
///
/// # Safety
///
/// `g` is a live generator whose context is current.
pub unsafe fn set_dimensions(g: curandGenerator_t, dimensions: u32) -> RandResult<()> {
    // SAFETY: the caller's guarantee; the count is by value.
    ok(unsafe { curand::curandSetQuasiRandomGeneratorDimensions(g, dimensions) })
}

/// `curandSetStream`: the stream a device generator's later calls run on.
///
/// # Safety
///
/// `g` is a live generator whose context is current; `stream` is null (the legacy default
/// stream) or a live stream of that context.
pub unsafe fn set_stream(g: curandGenerator_t, stream: cudaStream_t) -> RandResult<()> {
    // SAFETY: the caller's guarantee.
    ok(unsafe { curand::curandSetStream(g, stream) })
}

/// What [`generate`] makes, and so which cuRAND call it is: `curandGenerate` (32-bit
/// words), `curandGenerateLongLong` (64-bit words), `curandGenerateUniform[Double]`,
/// `curandGenerateNormal[Double]`, `curandGenerateLogNormal[Double]` and
/// `curandGeneratePoisson`.
#[derive(Debug, Clone, Copy)]
pub enum Distribution {
    /// 32-bit words.
    Bits32,
    /// 64-bit words.
    Bits64,
    /// Uniform `f32` in (0, 1].
    UniformF32,
    /// Uniform `f64` in (0, 1].
    UniformF64,
    /// Normal `f32`.
    NormalF32 {
        /// Mean.
        mean: f32,
        /// Standard deviation.
        stddev: f32,
    },
    /// Normal `f64`.
    NormalF64 {
        /// Mean.
        mean: f64,
        /// Standard deviation.
        stddev: f64,
    },
    /// Log-normal `f32`.
    LogNormalF32 {
        /// Mean of the underlying normal.
        mean: f32,
        /// Its standard deviation.
        stddev: f32,
    },
    /// Log-normal `f64`.
    LogNormalF64 {
        /// Mean of the underlying normal.
        mean: f64,
        /// Its standard deviation.
        stddev: f64,
    },
    /// Poisson, as 32-bit words.
    Poisson {
        /// Lambda.
        lambda: f64,
    },
}

/// Generates `n` numbers of `dist` into `dst`.
///
/// # Safety
///
/// `g` is a live generator whose context is current; `dst` holds `n` elements of the
/// distribution's size: host memory for a host generator, device memory of the context for
/// a device one, aligned to the element.
pub unsafe fn generate(
    g: curandGenerator_t,
    dist: Distribution,
    dst: *mut u8,
    n: usize,
) -> RandResult<()> {
    use Distribution::*;
    // SAFETY: the caller's guarantee for `g` and `dst`; the rest is by value.
    ok(unsafe {
        match dist {
            Bits32 => curand::curandGenerate(g, dst.cast(), n),
            Bits64 => curand::curandGenerateLongLong(g, dst.cast(), n),
            UniformF32 => curand::curandGenerateUniform(g, dst.cast(), n),
            UniformF64 => curand::curandGenerateUniformDouble(g, dst.cast(), n),
            NormalF32 { mean, stddev } => {
                curand::curandGenerateNormal(g, dst.cast(), n, mean, stddev)
            }
            NormalF64 { mean, stddev } => {
                curand::curandGenerateNormalDouble(g, dst.cast(), n, mean, stddev)
            }
            LogNormalF32 { mean, stddev } => {
                curand::curandGenerateLogNormal(g, dst.cast(), n, mean, stddev)
            }
            LogNormalF64 { mean, stddev } => {
                curand::curandGenerateLogNormalDouble(g, dst.cast(), n, mean, stddev)
            }
            Poisson { lambda } => curand::curandGeneratePoisson(g, dst.cast(), n, lambda),
        }
    })
}
