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

use crate::client::{self, Client};
use crate::core::capture::stream_handle;
use crate::core::memory::{copy_2d, device_free, device_malloc};
use crate::error::RandError;
use crate::ffi::{cudaStream_t, memcpy_kind};
use crate::state;
use std::collections::HashMap;
use std::ffi::{c_int, c_uint, c_void};
use std::sync::Mutex;
use vcuda_protocol::lib::{RAND_HOST, RAND_TO_HOST, dist, set};
use vcuda_protocol::{
    HandleResp, MAX_DATA_LEN, MAX_SEGMENT_LEN, RandCreateReq, RandGenerateReq, RandSetReq, ops,
};

/// `curandGenerator_t`.
pub(crate) type G = *mut c_void;

/// Results of cuRAND's internals.
pub(crate) type Result<T> = std::result::Result<T, RandError>;

/// `CURAND_VERSION` of cuRAND 10.4.0.
pub(crate) const VERSION: c_int = 10_400;
pub(crate) const VERSION_PARTS: [c_int; 3] = [10, 4, 0];

#[derive(Clone, Copy, Debug)]
pub(crate) struct GenState {
    pub(crate) rng_type: c_uint,
    pub(crate) host: bool,
    pub(crate) stream: usize,
    pub(crate) dims: u64,
}

impl GenState {
    pub(crate) fn quasi(&self) -> bool {
        self.rng_type >= 200
    }
    pub(crate) fn bits64(&self) -> bool {
        matches!(self.rng_type, 203 | 204)
    }
}

pub(crate) static GENS: Mutex<Option<HashMap<u64, GenState>>> = Mutex::new(None);

pub(crate) fn with_gens<R>(f: impl FnOnce(&mut HashMap<u64, GenState>) -> R) -> R {
    let mut g = GENS.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(HashMap::new))
}

pub(crate) fn gen_state(g: G) -> Result<GenState> {
    with_gens(|m| m.get(&(g as u64)).copied()).ok_or(RandError::NOT_INITIALIZED)
}

pub(crate) fn client() -> Result<&'static Client> {
    let c = client::client().map_err(|_| RandError::INITIALIZATION_FAILED)?;
    c.check_sticky()
        .map_err(|_| RandError::PREEXISTING_FAILURE)?;
    Ok(c)
}

/// `curandCreateGenerator` (`host`: `curandCreateGeneratorHost`; `has_out`: whether the
/// caller gave somewhere to put the generator): the new generator.
pub(crate) fn create(has_out: bool, rng_type: c_uint, host: bool) -> Result<u64> {
    if !has_out {
        return Err(RandError::OUT_OF_RANGE);
    }
    if !matches!(rng_type, 100 | 101 | 121 | 141 | 142 | 161 | 200..=204) {
        return Err(RandError::TYPE_ERROR);
    }
    let c = client()?;
    let device = c
        .check_device(state::device())
        .map_err(|_| RandError::INITIALIZATION_FAILED)?;
    let req = RandCreateReq {
        rng_type,
        flags: if host { RAND_HOST } else { 0 },
        device,
        reserved: 0,
    };
    let r: HandleResp = c.call::<ops::RandCreate>(&req).map_err(RandError::from)?;
    let st = GenState {
        rng_type,
        host,
        stream: 0,
        dims: 1,
    };
    with_gens(|m| m.insert(r.handle, st));
    Ok(r.handle)
}

pub(crate) fn set_param(g: G, what: u32, value: u64) -> Result<()> {
    let st = gen_state(g)?;
    let c = client()?;
    let req = RandSetReq {
        handle: g as u64,
        what,
        reserved: 0,
        value,
    };
    c.call::<ops::RandSet>(&req).map_err(RandError::from)?;
    if what == set::DIMENSIONS {
        with_gens(|m| m.insert(g as u64, GenState { dims: value, ..st }));
    }
    Ok(())
}

/// Generates `n` numbers of distribution `d` into `out`: device memory for a device
/// generator; for a host generator, the program's buffer `host_out` gives (called once the
/// request is checked, with its length in bytes).
pub(crate) fn generate<'a>(
    g: G,
    out: u64,
    n: usize,
    d: u32,
    (mean, stddev): (f64, f64),
    host_out: impl FnOnce(usize) -> Result<&'a mut [u8]>,
) -> Result<()> {
    let st = gen_state(g)?;
    let normal = matches!(
        d,
        dist::NORMAL_F32 | dist::NORMAL_F64 | dist::LOG_NORMAL_F32 | dist::LOG_NORMAL_F64
    );
    if (d == dist::BITS32 && st.bits64()) || (d == dist::BITS64 && !st.bits64()) {
        return Err(RandError::TYPE_ERROR);
    }
    if st.quasi() && !(n as u64).is_multiple_of(st.dims) {
        return Err(RandError::LENGTH_NOT_MULTIPLE);
    }
    if !st.quasi() && normal && !n.is_multiple_of(2) {
        return Err(RandError::LENGTH_NOT_MULTIPLE);
    }
    if d == dist::POISSON && (mean.is_nan() || mean <= 0.0) {
        return Err(RandError::OUT_OF_RANGE);
    }
    if n == 0 {
        return Ok(());
    }
    if out == 0 {
        return Err(RandError::LAUNCH_FAILURE);
    }
    let c = client()?;
    let elem = dist::elem_size(d).unwrap_or(4);
    let bytes = (n as u64)
        .checked_mul(elem)
        .ok_or(RandError::ALLOCATION_FAILED)?;
    let stream = stream_handle(c, st.stream as cudaStream_t, false)
        .map_err(|_| RandError::LAUNCH_FAILURE)?;
    let mut req = RandGenerateReq {
        handle: g as u64,
        stream,
        dst: out,
        n: n as u64,
        dist: d,
        flags: 0,
        mean,
        stddev,
    };
    if !st.host {
        return c.post::<ops::RandGenerate>(&req).map_err(RandError::from);
    }
    if bytes > MAX_DATA_LEN {
        return Err(RandError::ALLOCATION_FAILED);
    }
    req.flags = RAND_TO_HOST;
    req.dst = 0;
    // `MAX_DATA_LEN` bounds `bytes`, so the length fits a `usize`.
    let dst = host_out(bytes as usize)?;
    let mut segs: Vec<&mut [u8]> = dst.chunks_mut(MAX_SEGMENT_LEN as usize).collect();
    c.call_with::<ops::RandGenerate>(&req, &[], &[], &mut segs)
        .map_err(RandError::from)
}

/// `curandMethod_t`: the square histogram.
pub(crate) const METHOD_M2: u32 = 5;
/// `curandMethod_t`: a rounded normal.
pub(crate) const METHOD_DISCRETE_GAUSS: u32 = 7;
/// Above this lambda a Poisson distribution is a normal approximation (cuRAND's rule).
pub(crate) const POISSON_TABLE_MAX_LAMBDA: f64 = 2000.0;
/// The largest lambda `curandCreatePoissonDistribution` takes.
pub(crate) const POISSON_MAX_LAMBDA: f64 = 400_000.0;
/// Probabilities below this fraction of the mode's are left out of the table (the mass
/// left out is far below the 2^-32 resolution of the uniform that picks a bin).
pub(crate) const POISSON_TAIL: f64 = 1e-20;

/// Device addresses of the distributions `curandCreatePoissonDistribution` made.
pub(crate) static DISTS: Mutex<Vec<u64>> = Mutex::new(Vec::new());

/// A square histogram of a discrete distribution over `shift..shift + v.len()`: a uniform
/// `u` in (0, 1) picks bin `j = floor(len * u)`, whose value is `shift + j` if `u < v[j]`
/// and `shift + k[j]` otherwise (`_curand_M2_double`).
#[derive(Debug, PartialEq)]
pub(crate) struct SquareHistogram {
    pub(crate) shift: u32,
    pub(crate) v: Vec<f64>,
    pub(crate) k: Vec<u32>,
}

/// The square histogram of the Poisson distribution with mean `lambda` (0 < lambda <=
/// 400000), over the values whose probability is not negligible.
pub(crate) fn poisson_histogram(lambda: f64) -> SquareHistogram {
    // Relative probabilities, from the mode outwards: p(i - 1) = p(i) i / lambda and
    // p(i + 1) = p(i) lambda / (i + 1).
    let mode = lambda.floor() as u32;
    let mut below = Vec::new();
    let (mut p, mut i) = (1.0f64, mode);
    while i > 0 {
        p *= f64::from(i) / lambda;
        if p < POISSON_TAIL {
            break;
        }
        below.push(p);
        i -= 1;
    }
    let shift = mode - below.len() as u32;
    let mut probs: Vec<f64> = below.into_iter().rev().collect();
    probs.push(1.0);
    let (mut p, mut i) = (1.0f64, mode);
    loop {
        p *= lambda / f64::from(i + 1);
        if p < POISSON_TAIL {
            break;
        }
        probs.push(p);
        i += 1;
    }
    // Vose's alias method: bin j keeps its own value with probability q[j] and gives the
    // rest to k[j]; every bin holds 1/n of the mass.
    let n = probs.len();
    let total: f64 = probs.iter().sum();
    let mut scaled: Vec<f64> = probs.iter().map(|p| p * n as f64 / total).collect();
    let mut q = vec![1.0f64; n];
    let mut k: Vec<u32> = (0..n as u32).collect();
    let (mut small, mut large): (Vec<usize>, Vec<usize>) = (0..n).partition(|&j| scaled[j] < 1.0);
    while let (Some(&l), Some(&g)) = (small.last(), large.last()) {
        small.pop();
        q[l] = scaled[l];
        k[l] = g as u32;
        scaled[g] -= 1.0 - scaled[l];
        if scaled[g] < 1.0 {
            large.pop();
            small.push(g);
        }
    }
    // Whatever is left holds (up to rounding) exactly 1/n: it keeps its own value.
    let v = (0..n).map(|j| (j as f64 + q[j]) / n as f64).collect();
    SquareHistogram { shift, v, k }
}

/// Bytes of [`poisson_image`].
pub(crate) fn poisson_image_len(hist: Option<&SquareHistogram>) -> usize {
    48 + hist.map_or(0, |h| 72 + 12 * h.v.len())
}

/// The device image of a Poisson distribution at device address `base`: a
/// `curandDiscreteDistribution_st` (48 bytes), then for the histogram method its
/// `curandDistributionM2Shift_st` (32), `curandHistogramM2_st` (40), `V` (doubles) and `K`
/// (unsigned ints). Host pointers and `host_gen` are 0: only device code reads it.
pub(crate) fn poisson_image(lambda: f64, base: u64, hist: Option<&SquareHistogram>) -> Vec<u8> {
    const DIST: u64 = 0;
    const M2: u64 = 48;
    const HIST: u64 = 80;
    const V: u64 = 120;
    let mut img = Vec::new();
    let put64 = |img: &mut Vec<u8>, x: u64| img.extend_from_slice(&x.to_le_bytes());
    let put32 = |img: &mut Vec<u8>, x: u32| img.extend_from_slice(&x.to_le_bytes());
    // curandDiscreteDistribution_st: self_host_ptr, M2, host_M2, stddev, mean, method,
    // host_gen.
    put64(&mut img, 0);
    put64(&mut img, if hist.is_some() { base + M2 } else { 0 });
    put64(&mut img, 0);
    put64(&mut img, lambda.sqrt().to_bits());
    put64(&mut img, lambda.to_bits());
    let method = if hist.is_some() {
        METHOD_M2
    } else {
        METHOD_DISCRETE_GAUSS
    };
    put32(&mut img, method);
    put32(&mut img, 0);
    debug_assert_eq!(img.len() as u64, DIST + M2);
    let Some(h) = hist else {
        return img;
    };
    let n = h.v.len() as u64;
    // curandDistributionM2Shift_st: histogram, host_histogram, shift, length, host_gen.
    put64(&mut img, base + HIST);
    put64(&mut img, 0);
    put32(&mut img, h.shift);
    put32(&mut img, n as u32);
    put64(&mut img, 0);
    // curandHistogramM2_st: V, host_V, K, host_K, host_gen.
    put64(&mut img, base + V);
    put64(&mut img, 0);
    put64(&mut img, base + V + 8 * n);
    put64(&mut img, 0);
    put64(&mut img, 0);
    debug_assert_eq!(img.len() as u64, V);
    for &x in &h.v {
        put64(&mut img, x.to_bits());
    }
    for &x in &h.k {
        put32(&mut img, x);
    }
    img
}

/// `curandCreatePoissonDistribution` (`has_out`: whether the caller gave somewhere to put
/// it): the distribution's device address.
pub(crate) fn create_poisson(has_out: bool, lambda: f64) -> Result<u64> {
    if !has_out {
        return Err(RandError::NOT_INITIALIZED);
    }
    // NaN passes, as with NVIDIA's cuRAND (CUDA 13.0, measured): its distribution takes the
    // Gaussian approximation (no table), whose draws are then meaningless.
    if lambda <= 0.0 || lambda > POISSON_MAX_LAMBDA {
        return Err(RandError::OUT_OF_RANGE);
    }
    client()?;
    let hist = (lambda <= POISSON_TABLE_MAX_LAMBDA).then(|| poisson_histogram(lambda));
    let size = poisson_image_len(hist.as_ref());
    let base = device_malloc(size).map_err(|_| RandError::ALLOCATION_FAILED)?;
    let img = poisson_image(lambda, base, hist.as_ref());
    debug_assert_eq!(img.len(), size);
    let len = img.len() as u64;
    if let Err(e) = copy_2d(
        base,
        len,
        img.as_ptr() as u64,
        len,
        len,
        1,
        memcpy_kind::H2D,
        None,
    ) {
        let _ = device_free(base);
        return Err(e.into());
    }
    DISTS.lock().unwrap_or_else(|e| e.into_inner()).push(base);
    Ok(base)
}

pub(crate) fn destroy_distribution(d: *mut c_void) -> Result<()> {
    {
        let mut dists = DISTS.lock().unwrap_or_else(|e| e.into_inner());
        let i = dists
            .iter()
            .position(|&b| b == d as u64)
            .ok_or(RandError::NOT_INITIALIZED)?;
        dists.swap_remove(i);
    }
    device_free(d as u64).map_err(RandError::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The probability the table gives each value, from its bins.
    fn implied(h: &SquareHistogram) -> Vec<f64> {
        let n = h.v.len();
        let mut p = vec![0.0; n];
        for j in 0..n {
            let keep = h.v[j] * n as f64 - j as f64;
            assert!((-1e-9..=1.0 + 1e-9).contains(&keep), "bin {j}: {keep}");
            p[j] += keep / n as f64;
            p[h.k[j] as usize] += (1.0 - keep) / n as f64;
        }
        p
    }

    #[test]
    fn poisson_histograms_give_the_poisson_probabilities() {
        for lambda in [0.05, 1.0, 4.5, 30.0, 777.7, 2000.0] {
            let h = poisson_histogram(lambda);
            assert_eq!(h.v.len(), h.k.len());
            let p = implied(&h);
            // ln p(x) = x ln(lambda) - lambda - ln(x!)
            let mut ln_p = -lambda;
            let mut covered = 0.0;
            for x in 0..h.shift + p.len() as u32 + 50 {
                if x > 0 {
                    ln_p += lambda.ln() - f64::from(x).ln();
                }
                let exact = ln_p.exp();
                let got = x
                    .checked_sub(h.shift)
                    .and_then(|i| p.get(i as usize))
                    .copied()
                    .unwrap_or(0.0);
                assert!(
                    (got - exact).abs() <= 1e-12 + 1e-9 * exact,
                    "lambda {lambda}, x {x}: {got} vs {exact}"
                );
                covered += got;
            }
            assert!((covered - 1.0).abs() < 1e-12, "lambda {lambda}: {covered}");
            // A uniform in (0, 1) never picks a bin past the end, and the last threshold
            // covers its bin.
            assert!(h.v.iter().all(|v| v.is_finite()));
        }
    }

    #[test]
    fn poisson_image_follows_curand_discrete_h() {
        let h = poisson_histogram(3.0);
        let n = h.v.len() as u64;
        let base = 0x7000_0000_0000;
        let img = poisson_image(3.0, base, Some(&h));
        assert_eq!(img.len() as u64, 120 + 12 * n);
        assert_eq!(img.len(), poisson_image_len(Some(&h)));
        let u64_at = |o: usize| u64::from_le_bytes(img[o..o + 8].try_into().unwrap());
        let u32_at = |o: usize| u32::from_le_bytes(img[o..o + 4].try_into().unwrap());
        assert_eq!(u64_at(8), base + 48, "M2");
        assert_eq!(f64::from_bits(u64_at(24)), 3.0f64.sqrt(), "stddev");
        assert_eq!(f64::from_bits(u64_at(32)), 3.0, "mean");
        assert_eq!(u32_at(40), METHOD_M2);
        assert_eq!(u64_at(48), base + 80, "histogram");
        assert_eq!(
            (u32_at(64), u32_at(68) as u64),
            (h.shift, n),
            "shift, length"
        );
        assert_eq!(u64_at(80), base + 120, "V");
        assert_eq!(u64_at(96), base + 120 + 8 * n, "K");
        assert_eq!(f64::from_bits(u64_at(120)), h.v[0]);
        assert_eq!(u32_at((120 + 8 * n) as usize), h.k[0]);
        // Above lambda 2000: a normal approximation, no table.
        let img = poisson_image(5000.0, base, None);
        assert_eq!(img.len(), 48);
        let u32_at = |o: usize| u32::from_le_bytes(img[o..o + 4].try_into().unwrap());
        assert_eq!(u32_at(40), METHOD_DISCRETE_GAUSS);
        assert_eq!(u64::from_le_bytes(img[8..16].try_into().unwrap()), 0);
    }
}
