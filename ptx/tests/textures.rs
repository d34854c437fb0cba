// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Texture and surface objects (tests/fixtures/textures.cu): fetches, filtering, address
//! modes, read modes, gathers, queries and surface accesses, checked against host references
//! written here from the CUDA C Programming Guide's "Texture Fetching" appendix, with every
//! launch run interpreted and with the compiler enabled (which hands these kernels to the
//! interpreter).

#![allow(clippy::needless_range_loop)]

mod common;
use common::*;
use vcuda_ptx::{
    AddressMode, ChannelKind, FilterMode, KernelError, LaunchOptions, Mipmap, TexObject,
};

/// The fixture with the compiler on (differential: each launch also runs interpreted and the
/// results must agree) and off.
fn gpus() -> [Gpu; 2] {
    let ptx = fixture("textures");
    let on = Gpu::new(&ptx);
    let mut off = Gpu::new(&ptx);
    off.opts = LaunchOptions {
        jit: false,
        ..LaunchOptions::default()
    };
    [on, off]
}

/// A texture of `w` x `h` x `d` texels of `bits` channels over `data`, rows padded with
/// garbage to catch pitch mistakes.
fn texture(
    g: &Gpu,
    kind: ChannelKind,
    bits: [u8; 4],
    dims: [u64; 3],
    data: &[u8],
) -> (TexObject, u64) {
    let stride: u64 = bits.iter().map(|&b| b as u64 / 8).sum();
    let [w, h, d] = dims;
    let row = w * stride;
    let pitch = row + 24;
    let slice = pitch * h + 40;
    let mut bytes = vec![0xa5u8; (slice * d) as usize];
    for z in 0..d {
        for y in 0..h {
            let src = ((z * h + y) * row) as usize;
            let dst = (z * slice + y * pitch) as usize;
            bytes[dst..dst + row as usize].copy_from_slice(&data[src..src + row as usize]);
        }
    }
    let base = g.mem.upload(&bytes);
    let t = TexObject {
        surface: false,
        base,
        dims: if d > 1 {
            3
        } else if h > 1 {
            2
        } else {
            1
        },
        width: w,
        height: h,
        depth: d,
        pitch,
        slice_pitch: slice,
        kind,
        bits,
        address: [AddressMode::Clamp; 3],
        filter: FilterMode::Point,
        normalized_float: false,
        normalized_coords: false,
        srgb: false,
        border: [0.0; 4],
        layered: false,
        cube: false,
        mip: Mipmap::NONE,
    };
    (t, base)
}

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Reference sampler over texels already converted to floats (`data[(z*h + y)*w + x]`).
struct Ref {
    dims: [i64; 3],
    data: Vec<[f32; 4]>,
    norm: bool,
    addr: [AddressMode; 3],
    border: [f32; 4],
    linear: bool,
}

impl Ref {
    /// The index a tap reads along dimension `d`, `None` for the border.
    fn wrap(&self, d: usize, i: i64) -> Option<i64> {
        let n = self.dims[d];
        let mode = match self.addr[d] {
            AddressMode::Wrap | AddressMode::Mirror if !self.norm => AddressMode::Clamp,
            m => m,
        };
        match mode {
            AddressMode::Clamp => Some(i.max(0).min(n - 1)),
            AddressMode::Border => (i >= 0 && i < n).then_some(i),
            AddressMode::Wrap => Some(((i % n) + n) % n),
            AddressMode::Mirror => {
                // Reflect at the edges until inside.
                let mut i = i;
                loop {
                    if i < 0 {
                        i = -1 - i;
                    } else if i >= n {
                        i = 2 * n - 1 - i;
                    } else {
                        return Some(i);
                    }
                }
            }
        }
    }

    fn at(&self, idx: [Option<i64>; 3]) -> [f32; 4] {
        match idx {
            [Some(x), Some(y), Some(z)] => {
                self.data[((z * self.dims[1] + y) * self.dims[0] + x) as usize]
            }
            _ => self.border,
        }
    }

    fn sample(&self, c: [f32; 3], ndims: usize) -> [f32; 4] {
        let mut i0 = [0i64; 3];
        let mut a = [0f64; 3];
        for d in 0..ndims {
            let x = if self.norm {
                c[d] as f64 * self.dims[d] as f64
            } else {
                c[d] as f64
            };
            if self.linear {
                let xb = x - 0.5;
                i0[d] = xb.floor() as i64;
                // NaN and infinite coordinates: no blending (documented choice).
                if xb.is_finite() {
                    a[d] = ((xb - xb.floor()) * 256.0).round() / 256.0;
                }
            } else {
                i0[d] = x.floor() as i64;
            }
        }
        if !self.linear {
            let idx = [0, 1, 2].map(|d| {
                if d < ndims {
                    self.wrap(d, i0[d])
                } else {
                    Some(0)
                }
            });
            return self.at(idx);
        }
        let mut out = [0f64; 4];
        for corner in 0..(1 << ndims) {
            let mut wt = 1.0;
            let mut idx = [Some(0); 3];
            for d in 0..ndims {
                let hi = (corner >> d) & 1;
                wt *= if hi == 1 { a[d] } else { 1.0 - a[d] };
                idx[d] = self.wrap(d, i0[d].saturating_add(hi as i64));
            }
            if wt != 0.0 {
                let t = self.at(idx);
                for k in 0..4 {
                    out[k] += wt * t[k] as f64;
                }
            }
        }
        out.map(|x| x as f32)
    }
}

fn same(a: f32, b: f32) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

#[test]
fn tex1dfetch_in_and_out_of_range() {
    for g in gpus() {
        let vals: Vec<f32> = (0..10).map(|i| i as f32 * 1.5 - 2.0).collect();
        let (t, _) = texture(
            &g,
            ChannelKind::Float,
            [32, 0, 0, 0],
            [10, 1, 1],
            &f32s(&vals),
        );
        let h = g.mem.add_texture(t);
        let idx = [0i32, 3, 9, -1, 10, 1000, i32::MIN, i32::MAX];
        let n = idx.len();
        let (di, dout) = (g.buf(&idx), g.zeros(n * 16));
        let args = |h| {
            [
                Arg::Ptr(h),
                Arg::Ptr(di),
                Arg::Ptr(dout),
                Arg::I32(n as i32),
            ]
        };
        g.run("fetch1d", 1, 32, &args(h));
        let r: Vec<f32> = g.get(dout, n);
        assert_eq!(r, [vals[0], vals[3], vals[9], 0.0, 0.0, 0.0, 0.0, 0.0]);

        // binary16 channels read as f32.
        let halves: Vec<u16> = vec![0x3c00, 0xc000, 0x3555, 0x7c00, 0x0001, 0, 0, 0, 0, 0];
        let hb: Vec<u8> = halves.iter().flat_map(|x| x.to_le_bytes()).collect();
        let (th, _) = texture(&g, ChannelKind::Float, [16, 0, 0, 0], [10, 1, 1], &hb);
        let idx16 = [0i32, 1, 2, 3, 4];
        let di16 = g.buf(&idx16);
        g.run(
            "fetch1d",
            1,
            32,
            &[
                Arg::Ptr(g.mem.add_texture(th)),
                Arg::Ptr(di16),
                Arg::Ptr(dout),
                Arg::I32(5),
            ],
        );
        let r: Vec<f32> = g.get(dout, 5);
        assert_eq!(r, [1.0, -2.0, 0.33325195, f32::INFINITY, 2f32.powi(-24)]);

        // float2 texels as float4: z = 0, w = 1; out of range: all zero.
        let pairs: Vec<f32> = (0..20).map(|i| i as f32).collect();
        let (t2, _) = texture(
            &g,
            ChannelKind::Float,
            [32, 32, 0, 0],
            [10, 1, 1],
            &f32s(&pairs),
        );
        g.run("fetch1d4", 1, 32, &args(g.mem.add_texture(t2)));
        let r: Vec<f32> = g.get(dout, n * 4);
        assert_eq!(&r[4..8], &[6.0, 7.0, 0.0, 1.0]);
        assert_eq!(&r[12..16], &[0.0; 4]);

        // Signed 16-bit pairs as int4: sign-extended, z = 0, w = 1.
        let shorts: Vec<i16> = (0..20).map(|i| (i - 10) * 1000).collect();
        let sb: Vec<u8> = shorts.iter().flat_map(|x| x.to_le_bytes()).collect();
        let (t3, _) = texture(&g, ChannelKind::Signed, [16, 16, 0, 0], [10, 1, 1], &sb);
        g.run("fetch1di", 1, 32, &args(g.mem.add_texture(t3)));
        let r: Vec<i32> = g.get(dout, n * 4);
        assert_eq!(&r[..4], &[-10000, -9000, 0, 1]);
        assert_eq!(&r[4..8], &[-4000, -3000, 0, 1]);
        assert_eq!(&r[12..16], &[0; 4]);
    }
}

#[test]
fn tex1d_linear_filtering_clamp_and_border() {
    for g in gpus() {
        let vals = [1.0f32, 2.0, 4.0, 8.0, -16.0];
        let (mut t, _) = texture(
            &g,
            ChannelKind::Float,
            [32, 0, 0, 0],
            [5, 1, 1],
            &f32s(&vals),
        );
        t.filter = FilterMode::Linear;
        // Halfway, texel centres, an 8-bit fraction that rounds up (100.6 / 256), far outside.
        let xs = [
            0.0f32,
            0.5,
            1.0,
            1.25,
            1.5 + 100.6 / 256.0,
            2.5 + 0.4 / 256.0,
            4.75,
            5.0,
            -3.0,
            1e30,
            f32::NAN,
        ];
        let n = xs.len();
        let (dx, dout) = (g.buf(&xs), g.zeros(n * 4));
        for mode in [AddressMode::Clamp, AddressMode::Border] {
            t.address = [mode; 3];
            t.border = [100.0, 0.0, 0.0, 0.0];
            let h = g.mem.add_texture(t);
            g.run(
                "sample1d",
                1,
                32,
                &[
                    Arg::Ptr(h),
                    Arg::Ptr(dx),
                    Arg::Ptr(dout),
                    Arg::I32(n as i32),
                ],
            );
            let r: Vec<f32> = g.get(dout, n);
            let rf = Ref {
                dims: [5, 1, 1],
                data: vals.iter().map(|&v| [v, 0.0, 0.0, 1.0]).collect(),
                norm: false,
                addr: [mode; 3],
                border: t.border,
                linear: true,
            };
            for k in 0..n {
                let want = rf.sample([xs[k], 0.0, 0.0], 1)[0];
                assert!(same(r[k], want), "{mode:?} x={}: {} vs {want}", xs[k], r[k]);
            }
            // The 9-bit weight: 1.5 + 100.6/256 blends with 101/256, not 100/256.
            assert_eq!(r[4], 2.0 + 2.0 * 101.0 / 256.0, "{mode:?}");
            if mode == AddressMode::Clamp {
                assert_eq!(&r[..4], &[1.0, 1.0, 1.5, 1.75]);
                assert_eq!(r[8], 1.0);
            } else {
                // Half of texel 0, half of the border.
                assert_eq!(r[0], 50.5);
                assert_eq!(r[8], 100.0);
            }
        }
    }
}

#[test]
fn tex2d_normalized_linear_all_address_modes() {
    for g in gpus() {
        let (w, h) = (8i64, 4i64);
        let vals: Vec<f32> = (0..w * h).map(|i| ((i * 37) % 23) as f32 - 7.5).collect();
        let (mut t, _) = texture(
            &g,
            ChannelKind::Float,
            [32, 0, 0, 0],
            [w as u64, h as u64, 1],
            &f32s(&vals),
        );
        t.normalized_coords = true;
        let mut xy = Vec::new();
        for k in -20..44 {
            // Steps of 1/32 in x and 1/16 in y (exact in f32), crossing both edges.
            xy.push([k as f32 / 32.0 + 0.0078125, (k % 27) as f32 / 16.0 - 0.4]);
        }
        xy.push([2.25, -3.7]);
        xy.push([-1000.5, 1000.25]);
        let n = xy.len();
        let flat: Vec<f32> = xy.iter().flatten().copied().collect();
        let (dxy, dout) = (g.buf(&flat), g.zeros(n * 4));
        for filter in [FilterMode::Point, FilterMode::Linear] {
            for mode in [
                AddressMode::Wrap,
                AddressMode::Mirror,
                AddressMode::Clamp,
                AddressMode::Border,
            ] {
                t.filter = filter;
                t.address = [mode, AddressMode::Clamp, AddressMode::Clamp];
                if mode != AddressMode::Clamp {
                    t.address[1] = mode;
                }
                t.border = [-1.25, 0.0, 0.0, 0.0];
                let hd = g.mem.add_texture(t);
                g.run(
                    "sample2d",
                    2,
                    64,
                    &[
                        Arg::Ptr(hd),
                        Arg::Ptr(dxy),
                        Arg::Ptr(dout),
                        Arg::I32(n as i32),
                    ],
                );
                let r: Vec<f32> = g.get(dout, n);
                let rf = Ref {
                    dims: [w, h, 1],
                    data: vals.iter().map(|&v| [v, 0.0, 0.0, 1.0]).collect(),
                    norm: true,
                    addr: t.address,
                    border: t.border,
                    linear: filter == FilterMode::Linear,
                };
                for k in 0..n {
                    let want = rf.sample([xy[k][0], xy[k][1], 0.0], 2)[0];
                    assert!(
                        same(r[k], want),
                        "{filter:?} {mode:?} at {:?}: {} vs {want}",
                        xy[k],
                        r[k]
                    );
                }
            }
        }
        // Unnormalized coordinates: wrap and mirror clamp.
        t.normalized_coords = false;
        t.filter = FilterMode::Point;
        t.address = [AddressMode::Wrap; 3];
        let hd = g.mem.add_texture(t);
        let pts = [9.5f32, 1.5, -3.0, 2.5];
        let (dp, dout) = (g.buf(&pts), g.zeros(8));
        g.run(
            "sample2d",
            1,
            2,
            &[Arg::Ptr(hd), Arg::Ptr(dp), Arg::Ptr(dout), Arg::I32(2)],
        );
        let r: Vec<f32> = g.get(dout, 2);
        assert_eq!(r, [vals[(w + 7) as usize], vals[(2 * w) as usize]]);
    }
}

#[test]
fn tex2d_uchar4_normalized_float_and_srgb() {
    for g in gpus() {
        let (w, h) = (4u64, 3u64);
        let px: Vec<u8> = (0..w * h * 4).map(|i| (i * 53 % 256) as u8).collect();
        let (mut t, _) = texture(&g, ChannelKind::Unsigned, [8, 8, 8, 8], [w, h, 1], &px);
        t.normalized_float = true;
        let xy: Vec<f32> = vec![0.5, 0.5, 3.5, 2.5, 1.0, 1.0, 2.3, 1.9, -7.0, 9.0];
        let n = xy.len() / 2;
        let (dxy, dout) = (g.buf(&xy), g.zeros(n * 16));
        let conv = |v: u8, c: usize, srgb: bool| {
            let f = v as f32 / 255.0;
            if srgb && c < 3 {
                let f = f as f64;
                (if f <= 0.04045 {
                    f / 12.92
                } else {
                    ((f + 0.055) / 1.055).powf(2.4)
                }) as f32
            } else {
                f
            }
        };
        for (filter, srgb) in [
            (FilterMode::Point, false),
            (FilterMode::Linear, false),
            (FilterMode::Linear, true),
        ] {
            t.filter = filter;
            t.srgb = srgb;
            let hd = g.mem.add_texture(t);
            g.run(
                "sample2d4",
                1,
                32,
                &[
                    Arg::Ptr(hd),
                    Arg::Ptr(dxy),
                    Arg::Ptr(dout),
                    Arg::I32(n as i32),
                ],
            );
            let r: Vec<f32> = g.get(dout, n * 4);
            let rf = Ref {
                dims: [w as i64, h as i64, 1],
                data: px
                    .chunks(4)
                    .map(|p| [0, 1, 2, 3].map(|c| conv(p[c], c, srgb)))
                    .collect(),
                norm: false,
                addr: [AddressMode::Clamp; 3],
                border: [0.0; 4],
                linear: filter == FilterMode::Linear,
            };
            for k in 0..n {
                let want = rf.sample([xy[2 * k], xy[2 * k + 1], 0.0], 2);
                for c in 0..4 {
                    assert!(
                        same(r[k * 4 + c], want[c]),
                        "{filter:?} srgb={srgb} point {k} channel {c}: {} vs {}",
                        r[k * 4 + c],
                        want[c]
                    );
                }
            }
            if filter == FilterMode::Point && !srgb {
                assert_eq!(r[0], px[0] as f32 / 255.0);
            }
        }
        // Signed 8-bit normalized: -128 and -127 both read -1.
        let sp: Vec<u8> = [-128i8, -127, 127, 0, 64, -64, 1, -1]
            .iter()
            .map(|&v| v as u8)
            .collect();
        let (mut ts, _) = texture(&g, ChannelKind::Signed, [8, 8, 8, 8], [2, 1, 1], &sp);
        ts.normalized_float = true;
        let hd = g.mem.add_texture(ts);
        let pts = [0.5f32, 0.5, 1.5, 0.5];
        let (dp, dout) = (g.buf(&pts), g.zeros(32));
        g.run(
            "sample2d4",
            1,
            2,
            &[Arg::Ptr(hd), Arg::Ptr(dp), Arg::Ptr(dout), Arg::I32(2)],
        );
        let r: Vec<f32> = g.get(dout, 8);
        assert_eq!(
            r,
            [
                -1.0,
                -1.0,
                1.0,
                0.0,
                64.0 / 127.0,
                -64.0 / 127.0,
                1.0 / 127.0,
                -1.0 / 127.0
            ]
        );
    }
}

#[test]
fn tex2d_integer_results_are_point_sampled() {
    for g in gpus() {
        let vals: Vec<i32> = (0..12).map(|i| i * 1000 - 5000).collect();
        let bytes: Vec<u8> = vals.iter().flat_map(|x| x.to_le_bytes()).collect();
        let (mut t, _) = texture(&g, ChannelKind::Signed, [32, 0, 0, 0], [4, 3, 1], &bytes);
        // Linear filtering is ignored for integer results.
        t.filter = FilterMode::Linear;
        t.address = [AddressMode::Border; 3];
        t.border = [f32::from_bits(77), 0.0, 0.0, 0.0];
        let hd = g.mem.add_texture(t);
        let xy = [1.9f32, 2.1, 0.0, 0.0, 3.99, 0.5, 4.0, 0.5, -0.01, 1.0];
        let n = xy.len() / 2;
        let (dxy, dout) = (g.buf(&xy), g.zeros(n * 4));
        g.run(
            "sample2di",
            1,
            32,
            &[
                Arg::Ptr(hd),
                Arg::Ptr(dxy),
                Arg::Ptr(dout),
                Arg::I32(n as i32),
            ],
        );
        let r: Vec<i32> = g.get(dout, n);
        // The border color's bits are the integer border value.
        assert_eq!(r, [vals[9], vals[0], vals[3], 77, 77]);

        // Unsigned 16-bit, 4 channels, element read mode.
        let us: Vec<u16> = (0..16).map(|i| 65535 - i * 4001).collect();
        let ub: Vec<u8> = us.iter().flat_map(|x| x.to_le_bytes()).collect();
        let (tu, _) = texture(&g, ChannelKind::Unsigned, [16; 4], [2, 2, 1], &ub);
        let hd = g.mem.add_texture(tu);
        let xy = [1.5f32, 1.5];
        let (dxy, dout) = (g.buf(&xy), g.zeros(16));
        g.run(
            "sample2du4",
            1,
            1,
            &[Arg::Ptr(hd), Arg::Ptr(dxy), Arg::Ptr(dout), Arg::I32(1)],
        );
        let r: Vec<u32> = g.get(dout, 4);
        assert_eq!(r, [12, 13, 14, 15].map(|i| us[i] as u32));
    }
}

#[test]
fn tex3d_trilinear() {
    for g in gpus() {
        let dims = [4i64, 3, 5];
        let vals: Vec<f32> = (0..60).map(|i| ((i * 7919) % 61) as f32 * 0.25).collect();
        let (mut t, _) = texture(
            &g,
            ChannelKind::Float,
            [32, 0, 0, 0],
            [4, 3, 5],
            &f32s(&vals),
        );
        let mut pts = Vec::new();
        for k in 0..40 {
            let f = k as f32;
            pts.push([f * 0.13 - 0.5, f * 0.11 - 0.3, f * 0.17 - 0.7, 0.0]);
        }
        let n = pts.len();
        let flat: Vec<f32> = pts.iter().flatten().copied().collect();
        let (dp, dout) = (g.buf(&flat), g.zeros(n * 4));
        for (filter, mode) in [
            (FilterMode::Linear, AddressMode::Clamp),
            (FilterMode::Linear, AddressMode::Border),
            (FilterMode::Point, AddressMode::Border),
        ] {
            t.filter = filter;
            t.address = [mode; 3];
            t.border = [3.0, 0.0, 0.0, 0.0];
            let hd = g.mem.add_texture(t);
            g.run(
                "sample3d",
                2,
                32,
                &[
                    Arg::Ptr(hd),
                    Arg::Ptr(dp),
                    Arg::Ptr(dout),
                    Arg::I32(n as i32),
                ],
            );
            let r: Vec<f32> = g.get(dout, n);
            let rf = Ref {
                dims,
                data: vals.iter().map(|&v| [v, 0.0, 0.0, 1.0]).collect(),
                norm: false,
                addr: [mode; 3],
                border: t.border,
                linear: filter == FilterMode::Linear,
            };
            for k in 0..n {
                let want = rf.sample([pts[k][0], pts[k][1], pts[k][2]], 3)[0];
                assert!(
                    (r[k] - want).abs() <= want.abs() * 1e-6,
                    "{filter:?} {mode:?} at {:?}: {} vs {want}",
                    pts[k],
                    r[k]
                );
            }
        }
    }
}

#[test]
fn tex2d_gather() {
    for g in gpus() {
        let (w, h) = (3i64, 3i64);
        let vals: Vec<f32> = (0..w * h * 4).map(|i| i as f32).collect();
        let (mut t, _) = texture(&g, ChannelKind::Float, [32; 4], [3, 3, 1], &f32s(&vals));
        t.address = [AddressMode::Border; 3];
        t.border = [-1.0, -2.0, -3.0, -4.0];
        // Gathers ignore the filter mode.
        t.filter = FilterMode::Point;
        let hd = g.mem.add_texture(t);
        let xy = [1.2f32, 1.7, 0.1, 0.2, 2.9, 2.9];
        let n = xy.len() / 2;
        let (dxy, dout) = (g.buf(&xy), g.zeros(n * 16));
        let texel = |x: i64, y: i64, c: usize| {
            if (0..w).contains(&x) && (0..h).contains(&y) {
                vals[((y * w + x) * 4) as usize + c]
            } else {
                t.border[c]
            }
        };
        for comp in 0..4usize {
            g.run(
                "gather2d",
                1,
                32,
                &[
                    Arg::Ptr(hd),
                    Arg::Ptr(dxy),
                    Arg::Ptr(dout),
                    Arg::I32(n as i32),
                    Arg::I32(comp as i32),
                ],
            );
            let r: Vec<f32> = g.get(dout, n * 4);
            for k in 0..n {
                let i = (xy[2 * k] - 0.5).floor() as i64;
                let j = (xy[2 * k + 1] - 0.5).floor() as i64;
                // Counter-clockwise from the lower left.
                let want = [
                    texel(i, j + 1, comp),
                    texel(i + 1, j + 1, comp),
                    texel(i + 1, j, comp),
                    texel(i, j, comp),
                ];
                assert_eq!(&r[k * 4..k * 4 + 4], &want, "comp {comp} point {k}");
            }
        }
    }
}

#[test]
fn texture_and_surface_queries() {
    for g in gpus() {
        let (mut t, base) = texture(&g, ChannelKind::Unsigned, [8, 8, 0, 0], [7, 5, 1], &[0; 70]);
        t.normalized_coords = true;
        t.filter = FilterMode::Linear;
        t.normalized_float = true;
        t.address = [AddressMode::Mirror, AddressMode::Border, AddressMode::Wrap];
        let ht = g.mem.add_texture(t);
        let s = TexObject {
            surface: true,
            base,
            dims: 3,
            width: 9,
            height: 2,
            depth: 6,
            kind: ChannelKind::Float,
            bits: [16, 16, 16, 16],
            ..t
        };
        let hs = g.mem.add_texture(s);
        let out = g.zeros(13 * 4);
        g.run("query", 1, 1, &[Arg::Ptr(ht), Arg::Ptr(hs), Arg::Ptr(out)]);
        let r: Vec<u32> = g.get(out, 13);
        assert_eq!(r, [7, 5, 1, 0x01, 2, 1, 1, 1, 4, 9, 2, 6, 0x10]);
        assert_eq!(g.compiled_launches(), u32::from(g.opts.jit));
        // A surface handle where a texture is expected fails the launch.
        let e = g.run_err("query", 1, 1, &[Arg::Ptr(hs), Arg::Ptr(hs), Arg::Ptr(out)]);
        match &e {
            KernelError::InvalidHandle {
                handle,
                surface: false,
                instruction,
                loc,
            } => {
                assert_eq!((*handle, instruction.as_str()), (hs, "txq"));
                assert!(loc.line > 0);
            }
            e => panic!("{e}"),
        }
        assert_eq!(e.cuda_status(), 700);
    }
}

/// A 2-D surface of u32 texels: (object, base, row pitch).
fn surface_u32(g: &Gpu, w: u64, h: u64, f: impl Fn(u64, u64) -> u32) -> (TexObject, u64) {
    let data: Vec<u8> = (0..h)
        .flat_map(|y| (0..w).map(move |x| (x, y)))
        .flat_map(|(x, y)| f(x, y).to_le_bytes())
        .collect();
    let (mut t, base) = texture(g, ChannelKind::Unsigned, [32, 0, 0, 0], [w, h, 1], &data);
    t.surface = true;
    (t, base)
}

#[test]
fn layered_surfaces_pick_the_layer_under_the_boundary_mode() {
    for g in gpus() {
        let (w, h, layers) = (4u64, 3u64, 3u64);
        let val = |x: u64, y: u64, l: u64| (l * 1000 + y * 10 + x) as u32;
        let data: Vec<u8> = (0..layers)
            .flat_map(|l| (0..h).flat_map(move |y| (0..w).map(move |x| val(x, y, l))))
            .flat_map(u32::to_le_bytes)
            .collect();
        let (mut t, base) = texture(
            &g,
            ChannelKind::Unsigned,
            [32, 0, 0, 0],
            [w, h, layers],
            &data,
        );
        t.surface = true;
        t.dims = 2;
        t.layered = true;
        let hs = g.mem.add_texture(t);
        let out = g.zeros(w as usize * h as usize * 4);
        let run = |g: &Gpu, layer: i32, mode: i32| {
            g.try_launch(
                "surf2d_layer",
                [1, 1, 1],
                [w as u32, h as u32, 1],
                0,
                &[
                    Arg::Ptr(hs),
                    Arg::Ptr(out),
                    Arg::I32(w as i32),
                    Arg::I32(h as i32),
                    Arg::I32(layer),
                    Arg::I32(mode),
                ],
            )
            .map(|_| g.get::<u32>(out, (w * h) as usize))
        };
        let layer_of = |g: &Gpu, l: u64| -> Vec<u32> {
            (0..h)
                .flat_map(|y| g.get::<u32>(base + l * t.slice_pitch + y * t.pitch, w as usize))
                .collect()
        };
        // Layer 1 read (trap mode, inside); layer 2 written with each value + 1.
        let r = run(&g, 1, 0).unwrap();
        for y in 0..h {
            for x in 0..w {
                assert_eq!(r[(y * w + x) as usize], val(x, y, 1), "({x},{y})");
            }
        }
        assert_eq!(layer_of(&g, 2), r.iter().map(|v| v + 1).collect::<Vec<_>>());
        // Past the last layer: zero reads nothing (and the write past it is dropped), clamp
        // reads the last layer.
        let before: Vec<Vec<u32>> = (0..layers).map(|l| layer_of(&g, l)).collect();
        assert_eq!(run(&g, 3, 2).unwrap(), vec![0; (w * h) as usize]);
        let after: Vec<Vec<u32>> = (0..layers).map(|l| layer_of(&g, l)).collect();
        assert_eq!(before, after);
        assert_eq!(run(&g, 7, 1).unwrap(), layer_of(&g, 2));
        // Trap: a layer past the last (or negative: the index is unsigned) faults.
        for layer in [3, -1] {
            let e = run(&g, layer, 0).unwrap_err();
            assert!(
                matches!(e, KernelError::IllegalAddress { write: false, .. }),
                "{e}"
            );
        }
    }
}

#[test]
fn surf2d_boundary_modes() {
    for g in gpus() {
        let (w, h) = (5u64, 4u64);
        let src_val = |x: u64, y: u64| (y * 100 + x) as u32;
        let (src, _) = surface_u32(&g, w, h, src_val);
        let (dst, dbase) = surface_u32(&g, w, h, |_, _| 0);
        let (hs, hd) = (g.mem.add_texture(src), g.mem.add_texture(dst));
        let read_dst = |g: &Gpu| -> Vec<u32> {
            (0..h)
                .flat_map(|y| g.get::<u32>(dbase + y * dst.pitch, w as usize))
                .collect()
        };
        let (dx, dy) = (2i64, -1i64);
        for mode in [1, 2] {
            g.try_launch(
                "surf2d_copy",
                [1, 1, 1],
                [8, 8, 1],
                0,
                &[
                    Arg::Ptr(hs),
                    Arg::Ptr(hd),
                    Arg::I32(w as i32),
                    Arg::I32(h as i32),
                    Arg::I32(dx as i32),
                    Arg::I32(dy as i32),
                    Arg::I32(mode),
                ],
            )
            .unwrap();
            let r = read_dst(&g);
            for y in 0..h as i64 {
                for x in 0..w as i64 {
                    let (sx, sy) = (x + dx, y + dy);
                    let inside = (0..w as i64).contains(&sx) && (0..h as i64).contains(&sy);
                    let v = if inside {
                        src_val(sx as u64, sy as u64)
                    } else if mode == 1 {
                        src_val(
                            sx.clamp(0, w as i64 - 1) as u64,
                            sy.clamp(0, h as i64 - 1) as u64,
                        )
                    } else {
                        0
                    };
                    assert_eq!(
                        r[(y * w as i64 + x) as usize],
                        v + 1,
                        "mode {mode} ({x},{y})"
                    );
                }
            }
        }
        // Trap: the first out-of-range read faults like an illegal address.
        let e = g
            .try_launch(
                "surf2d_copy",
                [1, 1, 1],
                [8, 8, 1],
                0,
                &[
                    Arg::Ptr(hs),
                    Arg::Ptr(hd),
                    Arg::I32(w as i32),
                    Arg::I32(h as i32),
                    Arg::I32(dx as i32),
                    Arg::I32(dy as i32),
                    Arg::I32(0),
                ],
            )
            .unwrap_err();
        assert!(
            matches!(
                e,
                KernelError::IllegalAddress {
                    write: false,
                    size: 4,
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(e.cuda_status(), 700);
        // In range with trap works.
        g.try_launch(
            "surf2d_copy",
            [1, 1, 1],
            [8, 8, 1],
            0,
            &[
                Arg::Ptr(hs),
                Arg::Ptr(hd),
                Arg::I32(w as i32),
                Arg::I32(h as i32),
                Arg::I32(0),
                Arg::I32(0),
                Arg::I32(0),
            ],
        )
        .unwrap();
        assert_eq!(read_dst(&g)[7], src_val(2, 1) + 1);

        // Stores out of range: clamp writes the edge, zero drops, trap faults. x in bytes.
        let store = |x: i32, y: i32, v: u32, mode: i32| {
            g.try_launch(
                "surf2d_store",
                [1, 1, 1],
                [1, 1, 1],
                0,
                &[
                    Arg::Ptr(hd),
                    Arg::I32(x),
                    Arg::I32(y),
                    Arg::U32(v),
                    Arg::I32(mode),
                ],
            )
        };
        let before = read_dst(&g);
        store(4 * 7, 1, 555, 2).unwrap();
        assert_eq!(read_dst(&g), before);
        store(4 * 7, -3, 555, 1).unwrap();
        assert_eq!(read_dst(&g)[4], 555);
        store(8, 3, 777, 0).unwrap();
        assert_eq!(read_dst(&g)[17], 777);
        let e = store(4 * 5, 0, 1, 0).unwrap_err();
        assert!(
            matches!(e, KernelError::IllegalAddress { write: true, .. }),
            "{e}"
        );
        // A byte offset that is not a multiple of the access size.
        let e = store(6, 0, 1, 2).unwrap_err();
        assert!(matches!(e, KernelError::MisalignedAddress { .. }), "{e}");
        // A texture handle in a surface instruction.
        let (tex, _) = surface_u32(&g, 1, 1, |_, _| 0);
        let ht = g.mem.add_texture(TexObject {
            surface: false,
            ..tex
        });
        let e = g
            .try_launch(
                "surf2d_store",
                [1, 1, 1],
                [1, 1, 1],
                0,
                &[
                    Arg::Ptr(ht),
                    Arg::I32(0),
                    Arg::I32(0),
                    Arg::U32(0),
                    Arg::I32(0),
                ],
            )
            .unwrap_err();
        assert!(
            matches!(&e, KernelError::InvalidHandle { surface: true, instruction, .. } if instruction == "sust"),
            "{e}"
        );
        // An unknown handle.
        let e = g
            .try_launch(
                "surf2d_store",
                [1, 1, 1],
                [1, 1, 1],
                0,
                &[
                    Arg::Ptr(0xdead),
                    Arg::I32(0),
                    Arg::I32(0),
                    Arg::U32(0),
                    Arg::I32(1),
                ],
            )
            .unwrap_err();
        assert!(
            matches!(e, KernelError::InvalidHandle { handle: 0xdead, .. }),
            "{e}"
        );
    }
}

#[test]
fn surf_vectors_1d_and_3d() {
    for g in gpus() {
        // uchar4 swizzle in place.
        let (w, h) = (6u64, 2u64);
        let (mut s, base) = surface_u32(&g, w, h, |x, y| 0x0403_0201 + (x + 8 * y) as u32);
        s.kind = ChannelKind::Unsigned;
        s.bits = [8; 4];
        let hs = g.mem.add_texture(s);
        g.try_launch(
            "surf2d_uchar4",
            [1, 2, 1],
            [8, 1, 1],
            0,
            &[Arg::Ptr(hs), Arg::I32(w as i32), Arg::I32(h as i32)],
        )
        .unwrap();
        for y in 0..h {
            let row: Vec<u32> = g.get(base + y * s.pitch, w as usize);
            for x in 0..w {
                let v = (0x0403_0201 + (x + 8 * y) as u32).swap_bytes();
                assert_eq!(row[x as usize], v, "({x},{y})");
            }
        }

        // surf1Dwrite of short2 at byte offsets.
        let n = 10u64;
        let (mut s1, base1) = surface_u32(&g, n, 1, |_, _| 0);
        s1.kind = ChannelKind::Signed;
        s1.bits = [16, 16, 0, 0];
        let h1 = g.mem.add_texture(s1);
        g.run("surf1d_write", 1, 32, &[Arg::Ptr(h1), Arg::I32(n as i32)]);
        let r: Vec<i16> = g.get(base1, 2 * n as usize);
        for i in 0..n as usize {
            assert_eq!((r[2 * i], r[2 * i + 1]), (i as i16, -(i as i16)));
        }

        // float2 read-modify-write.
        let vals: Vec<f32> = (0..2 * n).map(|i| i as f32 * 0.5).collect();
        let (mut s2, base2) = texture(
            &g,
            ChannelKind::Float,
            [32, 32, 0, 0],
            [n, 1, 1],
            &f32s(&vals),
        );
        s2.surface = true;
        let h2 = g.mem.add_texture(s2);
        g.run("surf1d_f2", 1, 32, &[Arg::Ptr(h2), Arg::I32(n as i32)]);
        let r: Vec<f32> = g.get(base2, 2 * n as usize);
        for i in 0..n as usize {
            assert_eq!(
                (r[2 * i], r[2 * i + 1]),
                (vals[2 * i + 1] * 2.0, vals[2 * i] + 1.0)
            );
        }

        // 3-D reads of 64-bit texels with .zero.
        let dims = [3u64, 2, 4];
        let texels: Vec<u64> = (0..24)
            .map(|i| 0x1111_0000_0000_0000 | (i * 0x1_0001))
            .collect();
        let tb: Vec<u8> = texels.iter().flat_map(|x| x.to_le_bytes()).collect();
        let (mut s3, base3) = texture(&g, ChannelKind::Unsigned, [32, 32, 0, 0], dims, &tb);
        s3.surface = true;
        let h3 = g.mem.add_texture(s3);
        let pts: Vec<[i32; 4]> = vec![
            [0, 0, 0, 0],
            [2, 1, 3, 0],
            [1, 0, 2, 0],
            [3, 0, 0, 0],
            [0, 2, 0, 0],
            [0, 0, 4, 0],
            [-1, 0, 0, 0],
        ];
        let flat: Vec<i32> = pts.iter().flatten().copied().collect();
        let (dp, dout) = (g.buf(&flat), g.zeros(pts.len() * 8));
        g.run(
            "surf3d_read",
            1,
            32,
            &[
                Arg::Ptr(h3),
                Arg::Ptr(dp),
                Arg::Ptr(dout),
                Arg::I32(pts.len() as i32),
            ],
        );
        let r: Vec<u64> = g.get(dout, pts.len());
        let at = |p: [i32; 4]| texels[((p[2] * 2 + p[1]) * 3 + p[0]) as usize];
        assert_eq!(&r[..3], &[at(pts[0]), at(pts[1]), at(pts[2])]);
        assert_eq!(&r[3..], &[0; 4]);

        // A byte store in 3-D with clamp: (x, y, z) = (100, -5, 9) lands on (23, 0, 3).
        g.run(
            "surf3d_byte",
            1,
            1,
            &[
                Arg::Ptr(h3),
                Arg::I32(100),
                Arg::I32(-5),
                Arg::I32(9),
                Arg::Bytes(vec![0x5a]),
            ],
        );
        let b: Vec<u8> = g.get(base3 + 3 * s3.slice_pitch, 24);
        assert_eq!(b[23], 0x5a);
        assert_eq!(&b[16..23], &texels[20].to_le_bytes()[..7]);
    }
}

/// `tex` runs compiled (a helper samples, as the interpreter does); so do surface loads and
/// stores and queries (`txq`, `suq`).
#[test]
fn texture_fetches_run_compiled() {
    let [on, _] = gpus();
    let (t, _) = texture(
        &on,
        ChannelKind::Float,
        [32, 0, 0, 0],
        [1, 1, 1],
        &f32s(&[9.0]),
    );
    let h = on.mem.add_texture(t);
    let (di, dout) = (on.buf(&[0i32]), on.zeros(4));
    on.run(
        "fetch1d",
        1,
        1,
        &[Arg::Ptr(h), Arg::Ptr(di), Arg::Ptr(dout), Arg::I32(1)],
    );
    assert_eq!(on.get::<f32>(dout, 1), [9.0]);
    assert_eq!(on.compiled_launches(), 1);
}

/// Texture instructions in a device function the kernel calls: the compiler expands the call
/// and renumbers the callee's registers, the texture operands among them.
#[test]
fn texture_instructions_in_a_called_function() {
    let ptx = ".version 9.0\n.target sm_90\n.address_size 64\n\
        .func (.param .b32 fr) fetch(.param .b64 fh, .param .b32 fx)\n{\n\
        .reg .f32 %g<8>;\n.reg .b32 %q<4>;\n.reg .b64 %h<2>;\n\
        ld.param.u64 %h1, [fh];\nld.param.u32 %q2, [fx];\n\
        tex.1d.v4.f32.s32 {%g1, %g2, %g3, %g4}, [%h1, {%q2}];\n\
        txq.width.b32 %q1, [%h1];\n\
        cvt.rn.f32.u32 %g5, %q1;\n\
        add.f32 %g6, %g1, %g5;\n\
        st.param.f32 [fr], %g6;\n\
        ret;\n}\n\
        .visible .entry k(.param .u64 h, .param .u64 out)\n{\n\
        .reg .b32 %r<4>;\n.reg .b64 %rd<8>;\n.reg .f32 %f<4>;\n\
        ld.param.u64 %rd1, [h];\nld.param.u64 %rd2, [out];\n\
        mov.u32 %r1, %tid.x;\n\
        {\n.param .b64 p0;\nst.param.b64 [p0], %rd1;\n.param .b32 p1;\n\
        st.param.b32 [p1], %r1;\n.param .b32 rv;\n\
        call.uni (rv), fetch, (p0, p1);\nld.param.f32 %f1, [rv];\n}\n\
        mul.wide.u32 %rd3, %r1, 4;\nadd.s64 %rd4, %rd2, %rd3;\n\
        st.global.f32 [%rd4], %f1;\nret;\n}\n";
    for jit in [true, false] {
        let mut g = Gpu::new(ptx);
        g.opts.jit = jit;
        let (t, _) = texture(
            &g,
            ChannelKind::Float,
            [32, 0, 0, 0],
            [4, 1, 1],
            &f32s(&[1.0, 2.0, 3.0, 4.0]),
        );
        let h = g.mem.add_texture(t);
        let out = g.zeros(4 * 4);
        g.run("k", 1, 4, &[Arg::Ptr(h), Arg::Ptr(out)]);
        assert_eq!(g.get::<f32>(out, 4), [5.0, 6.0, 7.0, 8.0], "jit {jit}");
        assert_eq!(g.compiled_launches(), u32::from(jit));
    }
}

/// A one-thread kernel `k(handle, out)` running `body` with `%rd1` = handle, `%rd2` = out.
fn snippet(body: &str) -> String {
    format!(
        ".version 9.0\n.target sm_90\n.address_size 64\n\
         .visible .entry k(.param .u64 h, .param .u64 out)\n{{\n\
         .reg .pred %p<4>;\n.reg .b16 %rs<8>;\n.reg .b32 %r<16>;\n.reg .b64 %rd<8>;\n\
         .reg .f32 %f<16>;\n\
         ld.param.u64 %rd1, [h];\nld.param.u64 %rd2, [out];\n\
         mov.f32 %f5, 0f3FC00000;\nmov.f32 %f6, 0f3F000000;\nmov.u32 %r5, 4;\nmov.u32 %r6, 0;\n\
         {body}\nret;\n}}\n"
    )
}

#[test]
fn instruction_forms() {
    let vals = f32s(&[1.0, 2.0, 3.0, 4.0]);
    // Supported forms beyond what nvcc emits: a residency predicate, a scalar coordinate,
    // a constant handle, cache operators on surface accesses.
    let supported = [
        (
            false,
            "tex.1d.v4.f32.f32 {%f1, %f2, %f3, %f4}|%p1, [%rd1, {%f5}];\n\
             selp.f32 %f7, 0f3F800000, 0f00000000, %p1;\n\
             st.global.v4.f32 [%rd2], {%f1, %f2, %f3, %f4};\nst.global.f32 [%rd2+16], %f7;",
            [2.0f32, 0.0, 0.0, 1.0, 1.0],
        ),
        (
            false,
            "tex.1d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, %f6];\n\
             st.global.v4.f32 [%rd2], {%f1, %f2, %f3, %f4};",
            [1.0, 0.0, 0.0, 1.0, 0.0],
        ),
        (
            false,
            "tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6}];\n\
             st.global.f32 [%rd2], %f1;",
            [2.0, 0.0, 0.0, 0.0, 0.0],
        ),
        (
            true,
            "suld.b.1d.b32.trap.cg {%r1}, [%rd1, {%r5}];\nsust.b.1d.b32.wb [%rd1, {%r6}], %r1;\n\
             mov.u64 %rd3, 0;\nsuld.b.1d.v2.b32.zero {%r2, %r3}, [%rd1, {%r6}];\n\
             st.global.v2.u32 [%rd2], {%r2, %r3};",
            [2.0, 2.0, 0.0, 0.0, 0.0],
        ),
        (
            true,
            "suld.b.a1d.b32.trap {%r1}, [%rd1, {%r6, %r5}];\nst.global.b32 [%rd2], %r1;",
            [2.0, 0.0, 0.0, 0.0, 0.0],
        ),
        // A texture of one level: that level, whatever the level of detail.
        (
            false,
            "mov.f32 %f7, 0f40400000;\n\
             tex.level.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6}], %f7;\n\
             st.global.f32 [%rd2], %f1;",
            [2.0, 0.0, 0.0, 0.0, 0.0],
        ),
        (
            false,
            "mov.f32 %f7, 0f41000000;\n\
             tex.grad.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6}], {%f7, %f7}, {%f7, %f7};\n\
             st.global.f32 [%rd2], %f1;",
            [2.0, 0.0, 0.0, 0.0, 0.0],
        ),
        (
            false,
            "tex.base.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6}];\n\
             st.global.f32 [%rd2], %f1;",
            [2.0, 0.0, 0.0, 0.0, 0.0],
        ),
    ];
    for (surface, body, want) in supported {
        let g = Gpu::new(&snippet(body));
        let (mut t, _) = texture(&g, ChannelKind::Float, [32, 0, 0, 0], [4, 1, 1], &vals);
        t.filter = FilterMode::Linear;
        t.surface = surface;
        let (h, out) = (g.mem.add_texture(t), g.zeros(64));
        g.run("k", 1, 1, &[Arg::Ptr(h), Arg::Ptr(out)]);
        let r: Vec<f32> = g.get(out, 5);
        assert_eq!(r, want, "{body}");
    }
    // Forms that decode but are unsupported: they fail the launch naming the instruction.
    let unsupported = [
        "tld4.r.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6}], %f7;",
        "tex.2dms.v4.s32.s32 {%r1, %r2, %r3, %r4}, [%rd1, {%r1, %r5, %r6, %r6}];",
        "tex.cube.v4.f32.s32 {%f1, %f2, %f3, %f4}, [%rd1, {%r5, %r6, %r7, %r8}];",
        "tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, %rd2, {%f5, %f6}];",
        "tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6}], {%r1, %r2};",
        "tex.2d.v2.f16x2.f32 {%r1, %r2}, [%rd1, {%f5, %f6}];",
        "tld4.r.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6}], {%r1, %r2};",
        "sust.p.2d.v4.b32.trap [%rd1, {%r5, %r6}], {%r1, %r2, %r3, %r4};",
        "sured.b.add.2d.u32.trap [%rd1, {%r5, %r6}], %r1;",
        "txq.level.width.b32 %r1, [%rd1], %r5;",
        "suq.filter_mode.b32 %r1, [%rd1];",
    ];
    for body in unsupported {
        let g = Gpu::new(&snippet(body));
        let (t, _) = texture(&g, ChannelKind::Float, [32, 0, 0, 0], [4, 1, 1], &vals);
        let (h, out) = (g.mem.add_texture(t), g.zeros(64));
        let e = g.run_err("k", 1, 1, &[Arg::Ptr(h), Arg::Ptr(out)]);
        let op: String = body.chars().take_while(|c| *c != ' ').collect();
        match &e {
            KernelError::Unsupported { instruction, .. } => {
                assert!(instruction.starts_with(&op), "{op}: {instruction}")
            }
            e => panic!("{body}: {e}"),
        }
    }
}

mod hostile {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        /// Any coordinate bits (NaN, infinities, huge values) with any sampler state: no
        /// panic, and the reference's result wherever the coordinates are moderate.
        #[test]
        fn any_coordinates(
            bits in prop::collection::vec(any::<u32>(), 64),
            small in prop::collection::vec(-40.0f32..40.0, 64),
            modes in prop::collection::vec(0usize..4, 2),
            linear: bool,
            norm: bool,
        ) {
            let g = Gpu::new(&fixture("textures"));
            let vals: Vec<f32> = (0..15).map(|i| i as f32 * 0.75 - 3.0).collect();
            let (mut t, _) =
                texture(&g, ChannelKind::Float, [32, 0, 0, 0], [5, 3, 1], &f32s(&vals));
            let all = [
                AddressMode::Wrap,
                AddressMode::Mirror,
                AddressMode::Clamp,
                AddressMode::Border,
            ];
            t.address = [all[modes[0]], all[modes[1]], AddressMode::Clamp];
            t.filter = if linear { FilterMode::Linear } else { FilterMode::Point };
            t.normalized_coords = norm;
            t.border = [0.5, 0.0, 0.0, 0.0];
            let h = g.mem.add_texture(t);
            // Half hostile bit patterns, half moderate values.
            let xy: Vec<f32> = bits
                .iter()
                .zip(&small)
                .enumerate()
                .map(|(k, (b, s))| if k % 2 == 0 { f32::from_bits(*b) } else { *s })
                .collect();
            let n = xy.len() / 2;
            let (dxy, dout) = (g.buf(&xy), g.zeros(n * 4));
            g.run("sample2d", 1, 32, &[Arg::Ptr(h), Arg::Ptr(dxy), Arg::Ptr(dout), Arg::I32(n as i32)]);
            let r: Vec<f32> = g.get(dout, n);
            let rf = Ref {
                dims: [5, 3, 1],
                data: vals.iter().map(|&v| [v, 0.0, 0.0, 1.0]).collect(),
                norm,
                addr: t.address,
                border: t.border,
                linear,
            };
            for k in 0..n {
                let (x, y) = (xy[2 * k], xy[2 * k + 1]);
                if x.abs() < 1e4 && y.abs() < 1e4 {
                    let want = rf.sample([x, y, 0.0], 2)[0];
                    prop_assert!(same(r[k], want), "({x}, {y}): {} vs {want}", r[k]);
                }
            }
        }

        /// Any level of detail, gradients, bias and clamps (NaN, infinities, crossed
        /// clamps): no panic, and a texel of some level or a blend of two.
        #[test]
        fn any_level_of_detail(
            f in prop::collection::vec(any::<u32>(), 8),
            linear: bool,
        ) {
            let v = |k: usize| f32::from_bits(f[k]);
            let mip = Mipmap {
                levels: 4,
                filter: if linear { FilterMode::Linear } else { FilterMode::Point },
                bias: v(0),
                min_clamp: v(1),
                max_clamp: v(2),
            };
            let body = format!(
                "tex.level.2d.v4.f32.f32 {{%f1, %f2, %f3, %f4}}, [%rd1, {{%f6, %f6}}], {};\n\
                 tex.grad.2d.v4.f32.f32 {{%f7, %f2, %f3, %f4}}, [%rd1, {{%f6, %f6}}], \
                 {{{}, {}}}, {{{}, {}}};\nadd.f32 %f1, %f1, %f7;",
                imm(v(3)), imm(v(4)), imm(v(5)), imm(v(6)), imm(v(7))
            );
            let r = fetch_one(&move |g| mipmapped(g, mip), &body);
            prop_assert!((20.0..=230.0).contains(&r), "{r}");
        }
    }
}

/// An 8 x 8 float texture of four levels (8, 4, 2, 1 texels square), packed one after
/// another: every texel of level `k` is `10 (k + 1)`, except level 1, whose texel (x, y) is
/// `100 + 4 y + x`.
fn mipmapped(g: &Gpu, mip: Mipmap) -> TexObject {
    let mut texels = Vec::new();
    for k in 0..4u32 {
        let n = 8u32 >> k;
        for y in 0..n {
            for x in 0..n {
                texels.push(if k == 1 {
                    (100 + 4 * y + x) as f32
                } else {
                    (10 * (k + 1)) as f32
                });
            }
        }
    }
    let base = g.mem.upload(&f32s(&texels));
    TexObject {
        surface: false,
        base,
        dims: 2,
        width: 8,
        height: 8,
        depth: 1,
        pitch: 32,
        slice_pitch: 256,
        kind: ChannelKind::Float,
        bits: [32, 0, 0, 0],
        address: [AddressMode::Clamp; 3],
        filter: FilterMode::Point,
        normalized_float: false,
        normalized_coords: true,
        srgb: false,
        border: [0.0; 4],
        layered: false,
        cube: false,
        mip,
    }
}

/// An `.f32` immediate.
fn imm(v: f32) -> String {
    format!("0f{:08X}", v.to_bits())
}

/// What `body` (a [`snippet`] storing `%f1`) reads from `t`, with the compiler on and off.
fn fetch_one(t: &dyn Fn(&Gpu) -> TexObject, body: &str) -> f32 {
    let mut got = Vec::new();
    for jit in [true, false] {
        let mut g = Gpu::new(&snippet(&format!("{body}\nst.global.f32 [%rd2], %f1;")));
        g.opts.jit = jit;
        let h = g.mem.add_texture(t(&g));
        let out = g.zeros(4);
        g.run("k", 1, 1, &[Arg::Ptr(h), Arg::Ptr(out)]);
        got.push(g.get::<f32>(out, 1)[0]);
    }
    assert!(same(got[0], got[1]), "{body}: {got:?}");
    got[0]
}

#[test]
fn mipmapped_levels_of_detail() {
    let linear = Mipmap {
        levels: 4,
        filter: FilterMode::Linear,
        bias: 0.0,
        min_clamp: 0.0,
        max_clamp: 3.0,
    };
    let level = |mip: Mipmap, x: f32, y: f32, lod: f32| {
        fetch_one(
            &move |g| mipmapped(g, mip),
            &format!(
                "tex.level.2d.v4.f32.f32 {{%f1, %f2, %f3, %f4}}, [%rd1, {{{}, {}}}], {};",
                imm(x),
                imm(y),
                imm(lod)
            ),
        )
    };
    // Linear between levels (level 1's texel (0, 0) is 100 and level 2's 30).
    for (lod, want) in [
        (-1.0, 10.0),
        (0.0, 10.0),
        (0.5, 0.5 * 10.0 + 0.5 * 100.0),
        (1.25, 0.75 * 100.0 + 0.25 * 30.0),
        (2.0, 30.0),
        (7.0, 40.0),
        (f32::NAN, 10.0),
    ] {
        assert_eq!(level(linear, 0.05, 0.05, lod), want, "lod {lod}");
    }
    // The level's fraction, rounded to 1/256.
    let w = (0.3f64 * 256.0).round() / 256.0;
    assert_eq!(
        level(linear, 0.05, 0.05, 2.3),
        ((1.0 - w) * 30.0 + w * 40.0) as f32
    );
    // Point: the nearest level; halfway picks the lower.
    let point = Mipmap {
        filter: FilterMode::Point,
        ..linear
    };
    for (lod, want) in [(0.5, 10.0), (0.51, 100.0), (1.4, 100.0), (2.6, 40.0)] {
        assert_eq!(level(point, 0.05, 0.05, lod), want, "lod {lod}");
    }
    // Level 1's texels where normalized coordinates put them.
    for (x, y) in [(0, 0), (3, 1), (2, 3)] {
        let (u, v) = ((x as f32 + 0.5) / 4.0, (y as f32 + 0.5) / 4.0);
        assert_eq!(level(point, u, v, 1.0), (100 + 4 * y + x) as f32);
    }
    // Bias, then the clamps; the default clamps (0, 0) read level 0 only.
    let biased = Mipmap {
        bias: 1.0,
        max_clamp: 2.0,
        ..point
    };
    assert_eq!(level(biased, 0.05, 0.05, 0.0), 100.0);
    assert_eq!(level(biased, 0.05, 0.05, 5.0), 30.0);
    let unclamped = Mipmap {
        max_clamp: 0.0,
        ..point
    };
    assert_eq!(level(unclamped, 0.05, 0.05, 3.0), 10.0);
    // Lower clamp above the upper: no panic, the upper wins.
    let crossed = Mipmap {
        min_clamp: 3.0,
        max_clamp: 1.0,
        ..point
    };
    assert_eq!(level(crossed, 0.05, 0.05, 0.0), 100.0);
    // Gradients in level 0's texels: rho 1 -> level 0, 2 -> 1, 4 -> 2.
    let grad = |gx: [f32; 2], gy: [f32; 2]| {
        fetch_one(
            &move |g| mipmapped(g, point),
            &format!(
                "tex.grad.2d.v4.f32.f32 {{%f1, %f2, %f3, %f4}}, [%rd1, {{%f6, %f6}}], \
                 {{{}, {}}}, {{{}, {}}};",
                imm(gx[0]),
                imm(gx[1]),
                imm(gy[0]),
                imm(gy[1])
            ),
        )
    };
    assert_eq!(grad([0.125, 0.0], [0.0, 0.125]), 10.0);
    assert_eq!(grad([0.0, 0.0], [0.0, 0.25]), 100.0 + 4.0 * 2.0 + 2.0);
    assert_eq!(grad([0.5, 0.0], [0.0, 0.0]), 30.0);
    // `tex` and `tex.base`: level of detail 0 (then bias and clamps).
    let base = |mip: Mipmap, form: &str| {
        fetch_one(
            &move |g| mipmapped(g, mip),
            &format!("{form}.2d.v4.f32.f32 {{%f1, %f2, %f3, %f4}}, [%rd1, {{%f6, %f6}}];"),
        )
    };
    assert_eq!(base(point, "tex"), 10.0);
    assert_eq!(base(biased, "tex.base"), 100.0 + 4.0 * 2.0 + 2.0);
    // Unnormalized coordinates are level 0's texels: (5, 3) is level 1's texel (2, 1).
    let unnorm = move |g: &Gpu| TexObject {
        normalized_coords: false,
        ..mipmapped(g, point)
    };
    let body = format!(
        "tex.level.2d.v4.f32.f32 {{%f1, %f2, %f3, %f4}}, [%rd1, {{{}, {}}}], {};",
        imm(5.0),
        imm(3.0),
        imm(1.0)
    );
    assert_eq!(fetch_one(&unnorm, &body), 100.0 + 4.0 + 2.0);
    // The level count.
    let body = "txq.num_mipmap_levels.b32 %r1, [%rd1];\ncvt.rn.f32.u32 %f1, %r1;";
    assert_eq!(fetch_one(&move |g| mipmapped(g, point), body), 4.0);
    assert_eq!(
        fetch_one(
            &|g| TexObject {
                mip: Mipmap::NONE,
                ..mipmapped(g, point)
            },
            body
        ),
        1.0
    );
}
