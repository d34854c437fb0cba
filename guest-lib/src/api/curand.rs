// SPDX-License-Identifier: Apache-2.0 OR MIT
//! cuRAND (`libcurand.so.10`): generators run in the backend.
//!
//! A device generator fills device memory on its stream: the request is posted without
//! waiting, after the checks cuRAND makes (lengths that must be even or a multiple of the
//! dimensions, the right generator type). A host generator (`curandCreateGeneratorHost`)
//! waits for its numbers, which come back in the reply's in segments; one call may ask for
//! at most `MAX_DATA_LEN` bytes (`CURAND_STATUS_ALLOCATION_FAILED` beyond). The direction
//! vector and scramble constant tables and the discrete Poisson distribution objects of
//! the device API are not provided (`CURAND_STATUS_INTERNAL_ERROR`).

use std::collections::HashMap;
use std::ffi::{c_int, c_uint, c_ulonglong, c_void};
use std::sync::Mutex;

use vcuda_protocol::lib::{
    RAND_ALLOCATION_FAILED, RAND_HOST, RAND_LENGTH_NOT_MULTIPLE, RAND_NOT_INITIALIZED,
    RAND_OUT_OF_RANGE, RAND_TO_HOST, RAND_TYPE_ERROR, dist, set,
};
use vcuda_protocol::{
    HandleReq, HandleResp, MAX_DATA_LEN, MAX_SEGMENT_LEN, Opcode, RandCreateReq, RandGenerateReq,
    RandSetReq,
};

use super::stream::stream_handle;
use crate::client::{self, Client};
use crate::entry::Error;
use crate::ffi::cudaStream_t;
use crate::state;

/// `curandGenerator_t`.
type G = *mut c_void;

const SUCCESS: u32 = 0;
const LAUNCH_FAILURE: u32 = 201;
const PREEXISTING_FAILURE: u32 = 202;
const INITIALIZATION_FAILED: u32 = 203;

/// `CURAND_VERSION` of cuRAND 10.4.0.
const VERSION: c_int = 10_400;
const VERSION_PARTS: [c_int; 3] = [10, 4, 0];

#[derive(Clone, Copy, Debug)]
struct GenState {
    rng_type: c_uint,
    host: bool,
    stream: usize,
    dims: u64,
}

impl GenState {
    fn quasi(&self) -> bool {
        self.rng_type >= 200
    }
    fn bits64(&self) -> bool {
        matches!(self.rng_type, 203 | 204)
    }
}

static GENS: Mutex<Option<HashMap<u64, GenState>>> = Mutex::new(None);

fn with_gens<R>(f: impl FnOnce(&mut HashMap<u64, GenState>) -> R) -> R {
    let mut g = GENS.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(HashMap::new))
}

fn gen_state(g: G) -> Result<GenState, u32> {
    with_gens(|m| m.get(&(g as u64)).copied()).ok_or(RAND_NOT_INITIALIZED)
}

/// A reply status as a `curandStatus_t`.
fn rand_err(e: Error) -> u32 {
    match e.0 {
        100..=106 | 201..=204 | 999 => e.0,
        _ => LAUNCH_FAILURE,
    }
}

fn run(f: impl FnOnce() -> Result<(), u32>) -> u32 {
    match f() {
        Ok(()) => SUCCESS,
        Err(e) => e,
    }
}

fn client() -> Result<&'static Client, u32> {
    let c = client::client().map_err(|_| INITIALIZATION_FAILED)?;
    c.check_sticky().map_err(|_| PREEXISTING_FAILURE)?;
    Ok(c)
}

fn create(out: *mut G, rng_type: c_uint, host: bool) -> u32 {
    run(|| {
        if out.is_null() {
            return Err(RAND_OUT_OF_RANGE);
        }
        if !matches!(rng_type, 100 | 101 | 121 | 141 | 142 | 161 | 200..=204) {
            return Err(RAND_TYPE_ERROR);
        }
        let c = client()?;
        let device = c
            .check_device(state::device())
            .map_err(|_| INITIALIZATION_FAILED)?;
        let req = RandCreateReq {
            rng_type,
            flags: if host { RAND_HOST } else { 0 },
            device,
            reserved: 0,
        };
        let r: HandleResp = c
            .call_fixed(Opcode::RandCreate, &req, &[], &[], &mut [])
            .map_err(rand_err)?;
        let st = GenState {
            rng_type,
            host,
            stream: 0,
            dims: 1,
        };
        with_gens(|m| m.insert(r.handle, st));
        // SAFETY: checked non-null; the caller's output.
        unsafe { out.write(r.handle as G) };
        Ok(())
    })
}

fn set_param(g: G, what: u32, value: u64) -> u32 {
    run(|| {
        let st = gen_state(g)?;
        let c = client()?;
        let req = RandSetReq {
            handle: g as u64,
            what,
            reserved: 0,
            value,
        };
        c.call(Opcode::RandSet, &req, &[], &[], &mut [])
            .map_err(rand_err)?;
        if what == set::DIMENSIONS {
            with_gens(|m| m.insert(g as u64, GenState { dims: value, ..st }));
        }
        Ok(())
    })
}

fn generate(g: G, out: *mut c_void, n: usize, d: u32, mean: f64, stddev: f64) -> u32 {
    run(|| {
        let st = gen_state(g)?;
        let normal = matches!(
            d,
            dist::NORMAL_F32 | dist::NORMAL_F64 | dist::LOG_NORMAL_F32 | dist::LOG_NORMAL_F64
        );
        if (d == dist::BITS32 && st.bits64()) || (d == dist::BITS64 && !st.bits64()) {
            return Err(RAND_TYPE_ERROR);
        }
        if st.quasi() && !(n as u64).is_multiple_of(st.dims) {
            return Err(RAND_LENGTH_NOT_MULTIPLE);
        }
        if !st.quasi() && normal && !n.is_multiple_of(2) {
            return Err(RAND_LENGTH_NOT_MULTIPLE);
        }
        if d == dist::POISSON && (mean.is_nan() || mean <= 0.0) {
            return Err(RAND_OUT_OF_RANGE);
        }
        if n == 0 {
            return Ok(());
        }
        if out.is_null() {
            return Err(LAUNCH_FAILURE);
        }
        let c = client()?;
        let elem = dist::elem_size(d).unwrap_or(4);
        let bytes = (n as u64).checked_mul(elem).ok_or(RAND_ALLOCATION_FAILED)?;
        let stream =
            stream_handle(c, st.stream as cudaStream_t, false).map_err(|_| LAUNCH_FAILURE)?;
        let mut req = RandGenerateReq {
            handle: g as u64,
            stream,
            dst: out as u64,
            n: n as u64,
            dist: d,
            flags: 0,
            mean,
            stddev,
        };
        if !st.host {
            return c
                .post(Opcode::RandGenerate, &req, &[], &[])
                .map_err(rand_err);
        }
        if bytes > MAX_DATA_LEN {
            return Err(RAND_ALLOCATION_FAILED);
        }
        req.flags = RAND_TO_HOST;
        req.dst = 0;
        // SAFETY: a host generator writes `n` elements to the caller's host buffer.
        let dst = unsafe { std::slice::from_raw_parts_mut(out.cast::<u8>(), bytes as usize) };
        let mut segs: Vec<&mut [u8]> = dst.chunks_mut(MAX_SEGMENT_LEN as usize).collect();
        c.call(Opcode::RandGenerate, &req, &[], &[], &mut segs)
            .map(drop)
            .map_err(rand_err)
    })
}

fn set_out<T>(p: *mut T, v: T) -> u32 {
    if p.is_null() {
        return RAND_OUT_OF_RANGE;
    }
    // SAFETY: checked non-null; the caller's output pointer.
    unsafe { p.write(v) };
    SUCCESS
}

entry_raw! {
    fn curandCreateGenerator(out: *mut G, rng_type: c_uint) -> u32 {
        create(out, rng_type, false)
    }

    fn curandCreateGeneratorHost(out: *mut G, rng_type: c_uint) -> u32 {
        create(out, rng_type, true)
    }

    fn curandDestroyGenerator(g: G) -> u32 {
        run(|| {
            with_gens(|m| m.remove(&(g as u64))).ok_or(RAND_NOT_INITIALIZED)?;
            let c = client()?;
            c.call(Opcode::RandDestroy, &HandleReq { handle: g as u64 }, &[], &[], &mut [])
                .map(drop)
                .map_err(rand_err)
        })
    }

    fn curandGetVersion(out: *mut c_int) -> u32 {
        set_out(out, VERSION)
    }

    fn curandGetProperty(ty: c_int, out: *mut c_int) -> u32 {
        match VERSION_PARTS.get(ty as usize) {
            Some(&v) if ty >= 0 => set_out(out, v),
            _ => RAND_OUT_OF_RANGE,
        }
    }

    fn curandSetStream(g: G, stream: cudaStream_t) -> u32 {
        with_gens(|m| match m.get_mut(&(g as u64)) {
            Some(s) => {
                s.stream = stream as usize;
                SUCCESS
            }
            None => RAND_NOT_INITIALIZED,
        })
    }

    fn curandSetPseudoRandomGeneratorSeed(g: G, seed: c_ulonglong) -> u32 {
        set_param(g, set::SEED, seed)
    }

    fn curandSetGeneratorOffset(g: G, offset: c_ulonglong) -> u32 {
        set_param(g, set::OFFSET, offset)
    }

    fn curandSetGeneratorOrdering(g: G, order: c_uint) -> u32 {
        set_param(g, set::ORDERING, order.into())
    }

    fn curandSetQuasiRandomGeneratorDimensions(g: G, dims: c_uint) -> u32 {
        set_param(g, set::DIMENSIONS, dims.into())
    }

    fn curandGenerateSeeds(g: G) -> u32 {
        // Seeds are computed when a generator first runs.
        gen_state(g).map_or_else(|e| e, |_| SUCCESS)
    }

    fn curandGenerate(g: G, out: *mut c_uint, n: usize) -> u32 {
        generate(g, out.cast(), n, dist::BITS32, 0.0, 0.0)
    }

    fn curandGenerateLongLong(g: G, out: *mut c_ulonglong, n: usize) -> u32 {
        generate(g, out.cast(), n, dist::BITS64, 0.0, 0.0)
    }

    fn curandGenerateUniform(g: G, out: *mut f32, n: usize) -> u32 {
        generate(g, out.cast(), n, dist::UNIFORM_F32, 0.0, 0.0)
    }

    fn curandGenerateUniformDouble(g: G, out: *mut f64, n: usize) -> u32 {
        generate(g, out.cast(), n, dist::UNIFORM_F64, 0.0, 0.0)
    }

    fn curandGenerateNormal(g: G, out: *mut f32, n: usize, mean: f32, stddev: f32) -> u32 {
        generate(g, out.cast(), n, dist::NORMAL_F32, mean.into(), stddev.into())
    }

    fn curandGenerateNormalDouble(g: G, out: *mut f64, n: usize, mean: f64, stddev: f64) -> u32 {
        generate(g, out.cast(), n, dist::NORMAL_F64, mean, stddev)
    }

    fn curandGenerateLogNormal(g: G, out: *mut f32, n: usize, mean: f32, stddev: f32) -> u32 {
        generate(g, out.cast(), n, dist::LOG_NORMAL_F32, mean.into(), stddev.into())
    }

    fn curandGenerateLogNormalDouble(g: G, out: *mut f64, n: usize, mean: f64, stddev: f64) -> u32 {
        generate(g, out.cast(), n, dist::LOG_NORMAL_F64, mean, stddev)
    }

    fn curandGeneratePoisson(g: G, out: *mut c_uint, n: usize, lambda: f64) -> u32 {
        generate(g, out.cast(), n, dist::POISSON, lambda, 0.0)
    }

    fn curandGeneratePoissonMethod(g: G, out: *mut c_uint, n: usize, lambda: f64, _method: c_int) -> u32 {
        // Every method draws from the same distribution; the backend picks its own.
        generate(g, out.cast(), n, dist::POISSON, lambda, 0.0)
    }
}
