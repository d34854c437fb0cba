// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Tests of the cuRAND generators: known-answer vectors recorded from NVIDIA's
//! `libcurand.so.10` (10.4.0) host generators, seed 1234.

use super::*;

fn gen_(rng_type: u32, dims: u64, offset: u64, d: u32, n: u64) -> Vec<u8> {
    let mut r = Rand::default();
    let h = r.create(rng_type, true).unwrap();
    if rng_type < 200 {
        r.set(h, set::SEED, 1234).unwrap();
    } else {
        r.set(h, set::DIMENSIONS, dims).unwrap();
    }
    if offset != 0 {
        r.set(h, set::OFFSET, offset).unwrap();
    }
    r.generate(&RandGenerateReq {
        handle: h,
        n,
        dist: d,
        flags: vcuda_protocol::lib::RAND_TO_HOST,
        stddev: 1.0,
        ..Default::default()
    })
    .unwrap()
}

fn u32s(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn u64s(b: &[u8]) -> Vec<u64> {
    b.chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn xorwow_matches_curand() {
    let w = u32s(&gen_(rng::XORWOW, 1, 0, dist::BITS32, 8192));
    assert_eq!(w[..4], [624778773, 3522650202, 2363946744, 1266286439]);
    assert_eq!(w[4096..4098], [1867875844, 3978931785]);
    let w = u32s(&gen_(rng::XORWOW, 1, 123_456_789, dist::BITS32, 16));
    assert_eq!(w[..4], [3652758176, 1350137692, 4060982905, 2957961961]);
    let f = u32s(&gen_(rng::XORWOW, 1, 0, dist::UNIFORM_F32, 8));
    assert_eq!(f[..4], [0x3e14f578, 0x3f51f760, 0x3f0ce6f7, 0x3e96f3ff]);
    let d = u64s(&gen_(rng::XORWOW, 1, 0, dist::UNIFORM_F64, 8));
    assert_eq!(
        d[..4],
        [
            0x3fdbd561cb7abc2b,
            0x3feda53518d7605a,
            0x3fe9faa2cee6f6f8,
            0x3fd3bf5f4073fecf
        ]
    );
    let d = u64s(&gen_(rng::XORWOW, 1, 0, dist::NORMAL_F64, 8));
    assert_eq!(
        d[..4],
        [
            0x3fd6f597c59bea1a,
            0xbff3d55ef2db6411,
            0xbfb76c3e15c318a6,
            0xbfd853de628f3853
        ]
    );
    let f = u32s(&gen_(rng::XORWOW, 1, 0, dist::NORMAL_F32, 8));
    assert_eq!(f[..4], [0x3f47ede2, 0xbfe69a1d, 0xbe8fcb62, 0x3f104497]);
}

#[test]
fn philox_matches_curand() {
    let w = u32s(&gen_(rng::PHILOX, 1, 0, dist::BITS32, 300_000));
    assert_eq!(
        w[..8],
        [
            546353992, 3665621163, 1140953199, 3419031310, 3507855656, 1392278645, 3354607383,
            253049307
        ]
    );
    assert_eq!(
        w[262144..262148],
        [2666454581, 482218876, 4196888723, 343858512]
    );
    let w = u32s(&gen_(rng::PHILOX, 1, 1_000_003, dist::BITS32, 16));
    assert_eq!(w[..4], [291079082, 4281912557, 1355451987, 683243834]);
    let f = u32s(&gen_(rng::PHILOX, 1, 0, dist::UNIFORM_F32, 8));
    assert_eq!(f[..4], [0x3e0242cd, 0x3f5a7cf1, 0x3e880321, 0x3f4bca47]);
    let f = u32s(&gen_(rng::PHILOX, 1, 0, dist::NORMAL_F32, 8));
    assert_eq!(
        f,
        [
            0xbfcee929, 0x3f9d54f7, 0xbfc7bfca, 0x3eede2da, 0x3f118648, 0xbe926102, 0x3e82393a,
            0x3f27c73e
        ]
    );
    let f = u32s(&gen_(rng::MRG32K3A, 1, 0, dist::NORMAL_F32, 8));
    assert_eq!(
        f,
        [
            0xbeb8a79d, 0xbf175e36, 0xbfdbf901, 0xbf66d00b, 0x3eb01397, 0x3e09011f, 0x3e0d46e8,
            0x3db75649
        ]
    );
    let d = u64s(&gen_(rng::PHILOX, 1, 0, dist::UNIFORM_F64, 8));
    assert_eq!(
        d[..4],
        [
            0x3feb4f9e35f0b348,
            0x3fe97948a5c19070,
            0x3fbcbe178b76f1ac,
            0x3fb47eda813b849c
        ]
    );
    let d = u64s(&gen_(rng::PHILOX, 1, 0, dist::NORMAL_F64, 8));
    assert_eq!(
        d[..4],
        [
            0xbfe143cd7d47b538,
            0x3fc48fa22ccec992,
            0x3ff02192defaa9c0,
            0x3ffd50e49657caf7
        ]
    );
}

#[test]
fn mrg32k3a_matches_curand() {
    let w = u32s(&gen_(rng::MRG32K3A, 1, 0, dist::BITS32, 81921));
    assert_eq!(w[..4], [3379073520, 653317650, 4012281984, 4237272334]);
    assert_eq!(w[81920], 2521876100);
    let f = u32s(&gen_(rng::MRG32K3A, 1, 0, dist::UNIFORM_F32, 4));
    assert_eq!(f, [0x3f496892, 0x3e1bc358, 0x3f6f2691, 0x3f7c8fa5]);
    let d = u64s(&gen_(rng::MRG32K3A, 1, 0, dist::UNIFORM_F64, 2));
    assert_eq!(d, [0x3fe92d123e0dcbe5, 0x3fc3786b09654f63]);
    let d = u64s(&gen_(rng::MRG32K3A, 1, 0, dist::NORMAL_F64, 2));
    assert_eq!(d, [0xbfd714f307ceeb21, 0xbfe2ebc6fa79b86d]);
}

#[test]
fn sobol_matches_curand() {
    let w = u32s(&gen_(rng::SOBOL32, 3, 0, dist::BITS32, 24));
    let m = 1u32 << 29;
    assert_eq!(w[..8], [0, 4 * m, 6 * m, 2 * m, 3 * m, 7 * m, 5 * m, m]);
    assert_eq!(w[8..16], [0, 4 * m, 2 * m, 6 * m, 3 * m, 7 * m, m, 5 * m]);
    assert_eq!(w[16..24], [0, 4 * m, 2 * m, 6 * m, 5 * m, m, 7 * m, 3 * m]);
    let w = u32s(&gen_(rng::SOBOL32, 5, 37, dist::BITS32, 10));
    assert_eq!(
        w,
        [
            3959422976, 2885681152, 2751463424, 1677721600, 2483027968, 1409286144, 3959422976,
            738197504, 3288334336, 2214592512
        ]
    );
    // Quasi-random normals: another inverse normal CDF than cuRAND's, within 2 ulps.
    let f = u32s(&gen_(rng::SOBOL32, 1, 0, dist::NORMAL_F32, 8));
    let want = [
        0xc0cad08cu32,
        0,
        0x3f2cab5c,
        0xbf2cab5c,
        0xbea324b3,
        0x3f933ea6,
        0x3ea324b3,
        0xbf933ea6,
    ];
    assert!(
        f.iter().zip(want).all(|(g, w)| g.abs_diff(w) <= 2),
        "{f:x?}"
    );
    let d = u64s(&gen_(rng::SOBOL32, 1, 0, dist::NORMAL_F64, 4));
    let want = [
        0xc0195a1198fcf3d7u64,
        0x3df40d931ff62706,
        0x3fe5956b8784e3d9,
        0xbfe5956b872030ba,
    ];
    assert!(
        d.iter().zip(want).all(|(g, w)| g.abs_diff(w) <= 2),
        "{d:x?}"
    );
    let f = u32s(&gen_(rng::SOBOL32, 1, 0, dist::UNIFORM_F32, 4));
    assert_eq!(f, [0x2f000000, 0x3f000000, 0x3f400000, 0x3e800000]);
    let l = u64s(&gen_(rng::SOBOL64, 2, 0, dist::BITS64, 8));
    let h = 1u64 << 62;
    assert_eq!(l, [0, 2 * h, 3 * h, h, 0, 2 * h, h, 3 * h]);
}

#[test]
fn distributions_have_their_moments() {
    for t in [rng::XORWOW, rng::PHILOX, rng::MRG32K3A, rng::MT19937] {
        let n = 1 << 15;
        let u = u32s(&gen_(t, 1, 0, dist::UNIFORM_F32, n));
        let u: Vec<f64> = u.iter().map(|&b| f64::from(f32::from_bits(b))).collect();
        assert!(u.iter().all(|&x| x > 0.0 && x <= 1.0));
        let mean = u.iter().sum::<f64>() / n as f64;
        assert!((mean - 0.5).abs() < 0.01, "{t}: {mean}");
        let p = u32s(&gen_(t, 1, 0, dist::POISSON, n));
        let pm = p.iter().map(|&k| f64::from(k)).sum::<f64>() / n as f64;
        assert!(pm.abs() < 0.01, "lambda 0 gives zeros, got {pm}");
    }
    let mut r = Rand::default();
    let h = r.create(rng::PHILOX, false).unwrap();
    let out = r
        .generate(&RandGenerateReq {
            handle: h,
            n: 1 << 15,
            dist: dist::POISSON,
            mean: 700.0,
            ..Default::default()
        })
        .unwrap();
    let k = u32s(&out);
    let m = k.iter().map(|&k| f64::from(k)).sum::<f64>() / k.len() as f64;
    assert!((m - 700.0).abs() < 1.0, "{m}");
}

#[test]
fn errors_follow_curand() {
    let mut r = Rand::default();
    assert_eq!(r.create(999, false), Err(status(RAND_TYPE_ERROR)));
    let h = r.create(rng::SOBOL32, false).unwrap();
    assert_eq!(r.set(h, set::SEED, 1), Err(status(RAND_TYPE_ERROR)));
    assert_eq!(
        r.set(h, set::ORDERING, u64::from(ordering::PSEUDO_DEFAULT)),
        Err(status(RAND_OUT_OF_RANGE))
    );
    let ph = r.create(rng::PHILOX, true).unwrap();
    for (o, ok) in [
        (ordering::PSEUDO_LEGACY, true),
        (ordering::PSEUDO_SEEDED, false),
        (ordering::PSEUDO_DYNAMIC, false),
        (ordering::QUASI_DEFAULT, false),
    ] {
        assert_eq!(r.set(ph, set::ORDERING, u64::from(o)).is_ok(), ok, "{o}");
    }
    assert_eq!(
        r.set(h, set::DIMENSIONS, u64::from(MAX_SOBOL_DIMENSIONS) + 1),
        Err(status(RAND_OUT_OF_RANGE))
    );
    r.set(h, set::DIMENSIONS, 4).unwrap();
    let req = RandGenerateReq {
        handle: h,
        n: 6,
        dist: dist::UNIFORM_F32,
        ..Default::default()
    };
    assert_eq!(r.generate(&req), Err(status(RAND_LENGTH_NOT_MULTIPLE)));
    let p = r.create(rng::XORWOW, false).unwrap();
    let req = RandGenerateReq {
        handle: p,
        n: 3,
        dist: dist::NORMAL_F32,
        ..Default::default()
    };
    assert_eq!(r.generate(&req), Err(status(RAND_LENGTH_NOT_MULTIPLE)));
    r.destroy(p).unwrap();
    assert_eq!(r.destroy(p), Err(status(RAND_NOT_INITIALIZED)));
}
