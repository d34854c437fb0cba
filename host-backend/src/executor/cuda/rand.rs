// SPDX-License-Identifier: Apache-2.0 OR MIT
//! cuRAND on the GPU: the real library, called through its result layer
//! ([`super::curand_result`], over `lib_ffi`'s `u32`-returning entry points; cudarc's
//! `curand` types).
//!
//! One cuRAND generator per guest generator, created in the session's context: a device
//! generator (`curandCreateGenerator`) writes device memory on the stream of the call, after
//! the destination's full extent is checked against the session's allocations; a host
//! generator (`curandCreateGeneratorHost`) fills a host buffer that goes back in the
//! request's in segments. libcurand is loaded at run time: without it, creating a generator
//! answers `CURAND_STATUS_INITIALIZATION_FAILED` (an entry point the library lacks answers
//! the same). A status this build does not know is reported as
//! `CURAND_STATUS_INTERNAL_ERROR`.

use cudarc::curand::sys as cr;
use log::warn;
use vcuda_protocol::lib::{
    RAND_ALLOCATION_FAILED, RAND_INITIALIZATION_FAILED, RAND_NOT_INITIALIZED, RAND_OUT_OF_RANGE,
    RAND_TO_HOST, RAND_TYPE_ERROR, dist, set,
};
use vcuda_protocol::{RandGenerateReq, RandSetReq, status};

use super::CudaExecutor;
use super::curand_result::{self as curand, Distribution};
use super::state::Generator;
use crate::data::DataSegs;
use crate::executor::{ExecResult, Status};
use crate::migrate::state::RandStep;

/// The tag of generator handles.
pub(super) const RAND_TAG: u64 = 0x7a4d_0000_0000;

/// A cuRAND status as the session's error.
pub(super) fn status_of(s: cr::curandStatus_t) -> Status {
    Status(s as u32)
}

fn rng_type(v: u32) -> ExecResult<cr::curandRngType_t> {
    use cr::curandRngType_t::*;
    Ok(match v {
        100 => CURAND_RNG_PSEUDO_DEFAULT,
        101 => CURAND_RNG_PSEUDO_XORWOW,
        121 => CURAND_RNG_PSEUDO_MRG32K3A,
        141 => CURAND_RNG_PSEUDO_MTGP32,
        142 => CURAND_RNG_PSEUDO_MT19937,
        161 => CURAND_RNG_PSEUDO_PHILOX4_32_10,
        200 => CURAND_RNG_QUASI_DEFAULT,
        201 => CURAND_RNG_QUASI_SOBOL32,
        202 => CURAND_RNG_QUASI_SCRAMBLED_SOBOL32,
        203 => CURAND_RNG_QUASI_SOBOL64,
        204 => CURAND_RNG_QUASI_SCRAMBLED_SOBOL64,
        _ => return Err(Status(RAND_TYPE_ERROR)),
    })
}

/// Whether a `curandRngType_t` is quasi-random (Sobol): dimensions instead of a seed, and
/// an offset in points.
pub(super) fn quasi(rng: u32) -> bool {
    rng >= 200
}

/// Whether a `curandRngType_t` is a Mersenne Twister (MTGP32, MT19937): cuRAND takes no
/// offset for those.
pub(super) fn mersenne(rng: u32) -> bool {
    matches!(rng, 141 | 142)
}

/// The distribution of a guest's `dist::` value, with its parameters.
pub(super) fn distribution(d: u32, mean: f64, sd: f64) -> ExecResult<Distribution> {
    Ok(match d {
        dist::BITS32 => Distribution::Bits32,
        dist::BITS64 => Distribution::Bits64,
        dist::UNIFORM_F32 => Distribution::UniformF32,
        dist::UNIFORM_F64 => Distribution::UniformF64,
        dist::NORMAL_F32 => Distribution::NormalF32 {
            mean: mean as f32,
            stddev: sd as f32,
        },
        dist::NORMAL_F64 => Distribution::NormalF64 { mean, stddev: sd },
        dist::LOG_NORMAL_F32 => Distribution::LogNormalF32 {
            mean: mean as f32,
            stddev: sd as f32,
        },
        dist::LOG_NORMAL_F64 => Distribution::LogNormalF64 { mean, stddev: sd },
        dist::POISSON => Distribution::Poisson { lambda: mean },
        _ => return Err(Status(RAND_TYPE_ERROR)),
    })
}

fn ordering(v: u64) -> ExecResult<cr::curandOrdering_t> {
    use cr::curandOrdering_t::*;
    Ok(match v {
        100 => CURAND_ORDERING_PSEUDO_BEST,
        101 => CURAND_ORDERING_PSEUDO_DEFAULT,
        102 => CURAND_ORDERING_PSEUDO_SEEDED,
        103 => CURAND_ORDERING_PSEUDO_LEGACY,
        104 => CURAND_ORDERING_PSEUDO_DYNAMIC,
        201 => CURAND_ORDERING_QUASI_DEFAULT,
        _ => return Err(Status(RAND_OUT_OF_RANGE)),
    })
}

impl CudaExecutor {
    pub(super) fn generator(&self, handle: u64) -> ExecResult<(cr::curandGenerator_t, bool)> {
        self.rand
            .map
            .get(&handle)
            .map(|g| (g.raw as cr::curandGenerator_t, g.host))
            .ok_or(Status(RAND_NOT_INITIALIZED))
    }

    pub(super) fn rand_create_impl(&mut self, rng: u32, host: bool) -> ExecResult<u64> {
        let n = self
            .rand
            .next
            .checked_add(1)
            .filter(|&n| n < 1 << 32)
            .ok_or(Status(RAND_ALLOCATION_FAILED))?;
        let id = RAND_TAG | n;
        self.rand_create_at(id, rng, host)?;
        self.rand.next = n;
        Ok(id)
    }

    /// Creates a generator known to the guest as `id` (a new one, or one of a loaded
    /// session), with cuRAND's defaults: seed 0, offset 0, one dimension, the default
    /// ordering.
    pub(super) fn rand_create_at(&mut self, id: u64, rng: u32, host: bool) -> ExecResult<()> {
        if !curand::present() {
            return Err(Status(RAND_INITIALIZATION_FAILED));
        }
        let t = rng_type(rng)?;
        if self.rand.map.contains_key(&id) {
            return Err(Status::INVALID_VALUE);
        }
        self.cu_context()?;
        let g = curand::create_generator(t, host).map_err(status_of)?;
        let generator = Generator {
            raw: g as usize,
            host,
            rng_type: rng,
            seed: 0,
            offset: 0,
            dims: 1,
            // CURAND_ORDERING_QUASI_DEFAULT, CURAND_ORDERING_PSEUDO_DEFAULT.
            ordering: if quasi(rng) { 201 } else { 101 },
            log: Some(Vec::new()),
            log_drawn: (0, 0),
        };
        self.rand.map.insert(id, generator);
        Ok(())
    }

    pub(super) fn rand_destroy_impl(&mut self, handle: u64) -> ExecResult<()> {
        let (g, _) = self.generator(handle)?;
        self.rand.map.remove(&handle);
        self.cu_context()?;
        // SAFETY: a generator we created in this context, removed from the table here.
        unsafe { curand::destroy_generator(g) }.map_err(status_of)
    }

    /// Destroys every generator (before the context goes away).
    pub(super) fn rand_release(&mut self) {
        if self.rand.map.is_empty() {
            return;
        }
        let bound = self.cu_context().is_ok();
        for (_, g) in self.rand.map.drain() {
            if bound {
                // SAFETY: our generator, destroyed once, with its context current.
                if let Err(s) = unsafe { curand::destroy_generator(g.raw as cr::curandGenerator_t) }
                {
                    warn!("curandDestroyGenerator: {s:?}");
                }
            }
        }
    }

    pub(super) fn rand_set_impl(&mut self, r: &RandSetReq) -> ExecResult<()> {
        let (g, _) = self.generator(r.handle)?;
        self.cu_context()?;
        // SAFETY: our generator with its context current; every value is by value.
        unsafe {
            match r.what {
                set::SEED => curand::set_seed(g, r.value),
                set::OFFSET => curand::set_offset(g, r.value),
                set::ORDERING => curand::set_ordering(g, ordering(r.value)?),
                set::DIMENSIONS => {
                    let d = u32::try_from(r.value).map_err(|_| Status(RAND_OUT_OF_RANGE))?;
                    curand::set_dimensions(g, d)
                }
                _ => return Err(Status(RAND_OUT_OF_RANGE)),
            }
        }
        .map_err(status_of)?;
        // What the generator is now, for a migration to make it again.
        if let Some(g) = self.rand.map.get_mut(&r.handle) {
            match r.what {
                set::SEED => g.seed = r.value,
                set::OFFSET => g.offset = r.value,
                set::ORDERING => g.ordering = r.value as u32,
                _ => g.dims = r.value as u32,
            }
            if mersenne(g.rng_type) {
                g.record(RandStep::Set {
                    what: r.what,
                    value: r.value,
                });
            }
        }
        Ok(())
    }

    pub(super) fn rand_generate_impl(
        &mut self,
        r: &RandGenerateReq,
        out: &DataSegs<'_>,
    ) -> ExecResult<u64> {
        let (g, host) = self.generator(r.handle)?;
        let to_host = r.flags & RAND_TO_HOST != 0;
        if host != to_host {
            return Err(Status(RAND_TYPE_ERROR));
        }
        let elem = dist::elem_size(r.dist).ok_or(Status(RAND_TYPE_ERROR))?;
        let bytes = r.n.checked_mul(elem).ok_or(Status(RAND_OUT_OF_RANGE))?;
        let n = usize::try_from(r.n).map_err(|_| Status(RAND_OUT_OF_RANGE))?;
        // A host generator writes into an 8-byte-aligned buffer we own; a device one into
        // the checked destination.
        let mut buf: Vec<u64> = Vec::new();
        let dst: *mut u8 = if host {
            buf.resize(bytes.div_ceil(8) as usize, 0);
            buf.as_mut_ptr().cast()
        } else {
            if bytes > 0 {
                self.check_device_range(r.dst, bytes)
                    .map_err(|_| Status(status::ILLEGAL_ADDRESS))?;
            }
            r.dst as *mut u8
        };
        let stream = self.cu_stream(r.stream)?;
        self.cu_context()?;
        if !host {
            // SAFETY: our generator with its context current; the stream belongs to the
            // session.
            unsafe { curand::set_stream(g, stream.cast()) }.map_err(status_of)?;
        }
        let d = distribution(r.dist, r.mean, r.stddev)?;
        // SAFETY: our generator with its context current; `dst` covers `n` elements of
        // the distribution's size (our buffer, or device memory the session owns, checked
        // above).
        unsafe { curand::generate(g, d, dst, n) }.map_err(status_of)?;
        // cuRAND moves a pseudo-random generator on by the outputs drawn, a quasi-random one
        // by the points (the CPU executor's generators, measured against cuRAND, do the
        // same); a Mersenne Twister's draws are kept instead (`rand_log.rs`).
        if let Some(g) = self.rand.map.get_mut(&r.handle) {
            if mersenne(g.rng_type) {
                g.record_draw(r, bytes);
            } else if quasi(g.rng_type) {
                g.offset = g.offset.wrapping_add(r.n / u64::from(g.dims.max(1)));
            } else {
                g.offset = g.offset.wrapping_add(r.n);
            }
        }
        if !host {
            return Ok(0);
        }
        // SAFETY: `buf` holds at least `bytes` initialized bytes.
        let data = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), bytes as usize) };
        out.write_at(0, data)
            .map_err(|_| Status(RAND_OUT_OF_RANGE))?;
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guest_values_map_to_curand_enums_or_fail() {
        assert_eq!(
            rng_type(161).ok(),
            Some(cr::curandRngType_t::CURAND_RNG_PSEUDO_PHILOX4_32_10)
        );
        assert_eq!(rng_type(7).err(), Some(Status(RAND_TYPE_ERROR)));
        assert_eq!(
            ordering(201).ok(),
            Some(cr::curandOrdering_t::CURAND_ORDERING_QUASI_DEFAULT)
        );
        assert_eq!(ordering(5).err(), Some(Status(RAND_OUT_OF_RANGE)));
    }
}
