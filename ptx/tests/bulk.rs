// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Bulk copies, tensor maps and mbarrier transaction counts, as PTX text (the nvcc-built
//! `tests/cuda/tma.cu` runs the same through the whole stack): what a phase waits for, and
//! what hostile operands (sizes, maps, alignment) end in.

mod common;
use common::*;
use vcuda_ptx::KernelError;
use vcuda_ptx::tensormap::{TiledParams, encode_tiled};

/// A kernel `k(out, inp, map)` (`map`: a 128-byte `__grid_constant__` tensor map) with
/// 2 KiB of shared memory `sm` and an mbarrier `bar`, one thread.
fn kernel(body: &str) -> String {
    format!(
        ".version 8.3\n.target sm_90a\n.address_size 64\n\
         .visible .entry k(.param .u64 out, .param .u64 inp, .param .align 64 .b8 map[128])\n{{\n\
         .shared .align 1024 .b8 sm[2048];\n.shared .align 8 .b64 bar;\n\
         .reg .pred %p<8>;\n.reg .b32 %r<32>;\n.reg .b64 %rd<32>;\n\
         ld.param.u64 %rd1, [out];\nld.param.u64 %rd2, [inp];\n\
         mov.u64 %rd3, map;\ncvta.param.u64 %rd3, %rd3;\n\
         mov.u32 %r1, sm;\nmov.u32 %r2, bar;\n{body}\nret;\n}}\n"
    )
}

fn launch(src: &str, inp: &[u8], map: [u8; 128]) -> (Result<(), KernelError>, Vec<u32>) {
    let g = Gpu::new(src);
    let out = g.zeros(4096);
    let inp = g.mem.upload(inp);
    let r = g
        .try_launch(
            "k",
            [1, 1, 1],
            [1, 1, 1],
            0,
            &[Arg::Ptr(out), Arg::Ptr(inp), Arg::Bytes(map.to_vec())],
        )
        .map(drop);
    (r, g.get::<u32>(out, 1024))
}

/// `try_wait.parity` of phase 0 into `out[k]` (1: complete).
fn probe(k: u32) -> String {
    format!(
        "mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r2], 0;\nselp.u32 %r20, 1, 0, %p1;\n\
         st.global.u32 [%rd1+{}], %r20;\n",
        4 * k
    )
}

#[test]
fn a_phase_waits_for_its_arrivals_and_its_bytes() {
    let body = format!(
        "mbarrier.init.shared::cta.b64 [%r2], 1;\n\
         mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], 64;\n{}\
         mbarrier.complete_tx.shared::cta.b64 [%r2], 32;\n{}\
         mbarrier.complete_tx.shared::cta.b64 [%r2], 32;\n{}\
         mbarrier.complete_tx.shared::cta.b64 [%r2], 16;\n\
         mbarrier.init.shared::cta.b64 [%r2], 1;\n\
         mbarrier.complete_tx.shared::cta.b64 [%r2], 16;\n\
         mbarrier.expect_tx.shared::cta.b64 [%r2], 16;\n\
         mbarrier.arrive.shared::cta.b64 _, [%r2];\n{}",
        probe(0),
        probe(1),
        probe(2),
        probe(3)
    );
    let (r, out) = launch(&kernel(&body), &[0; 16], [0; 128]);
    r.unwrap();
    // Arrived but 64 bytes pending; 32 pending; done. Bytes completed before they were
    // expected count too (the count goes negative, then back to zero).
    assert_eq!(&out[..4], &[0, 0, 1, 1]);
}

#[test]
fn a_bulk_copy_completes_its_bytes_on_the_barrier() {
    let data: Vec<u8> = (0..64u8).collect();
    let body = format!(
        "mbarrier.init.shared::cta.b64 [%r2], 1;\n\
         mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], 64;\n\
         cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd2], 64, [%r2];\n{}\
         ld.shared.u32 %r21, [%r1+60];\nst.global.u32 [%rd1+4], %r21;\n\
         cp.async.bulk.global.shared::cta.bulk_group [%rd1+64], [%r1], 64;\n\
         cp.async.bulk.commit_group;\ncp.async.bulk.wait_group 0;",
        probe(0)
    );
    let (r, out) = launch(&kernel(&body), &data, [0; 128]);
    r.unwrap();
    assert_eq!(out[0], 1);
    assert_eq!(out[1], u32::from_le_bytes([60, 61, 62, 63]));
    let back: Vec<u8> = out[16..32].iter().flat_map(|w| w.to_le_bytes()).collect();
    assert_eq!(back, data);
}

#[test]
fn hostile_bulk_copies_fault() {
    let copy = |size: &str| {
        kernel(&format!(
            "mbarrier.init.shared::cta.b64 [%r2], 1;\n\
             mov.u32 %r5, {size};\n\
             cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd2], %r5, [%r2];"
        ))
    };
    // Not a multiple of 16; larger than shared memory (refused before any byte moves).
    let (r, _) = launch(&copy("20"), &[0; 32], [0; 128]);
    assert!(
        matches!(r, Err(KernelError::MisalignedAddress { .. })),
        "{r:?}"
    );
    let (r, _) = launch(&copy("0xfffffff0"), &[0; 32], [0; 128]);
    assert!(
        matches!(r, Err(KernelError::IllegalAddress { .. })),
        "{r:?}"
    );
    // Past the source buffer.
    let (r, _) = launch(&copy("1024"), &[0; 32], [0; 128]);
    assert!(
        matches!(r, Err(KernelError::IllegalAddress { .. })),
        "{r:?}"
    );
}

fn tensor_load(map_reg: &str, x: i32, y: i32) -> String {
    kernel(&format!(
        "mbarrier.init.shared::cta.b64 [%r2], 1;\n\
         mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], 512;\n\
         mov.u32 %r10, {x};\nmov.u32 %r11, {y};\n\
         cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes \
         [%r1], [{map_reg}, {{%r10, %r11}}], [%r2];\n{}\
         cp.async.bulk.global.shared::cta.bulk_group [%rd1+128], [%r1], 512;",
        probe(0)
    ))
}

fn map_over(addr: u64, swizzle: u32) -> [u8; 128] {
    encode_tiled(&TiledParams {
        data_type: 2, // u32
        rank: 2,
        address: addr,
        global_dim: [10, 5, 1, 1, 1],
        global_strides: [64, 0, 0, 0],
        box_dim: [16, 8, 1, 1, 1],
        element_strides: [1, 1, 1, 1, 1],
        swizzle,
        ..TiledParams::default()
    })
    .unwrap()
}

#[test]
fn tensor_loads_fill_out_of_bounds_and_swizzle() {
    // A 10 x 5 tensor of u32 (row pitch 16 elements) whose element (x, y) is 100 y + x + 1.
    let mut data = vec![0u8; 64 * 5];
    for y in 0..5 {
        for x in 0..10 {
            data[(y * 16 + x) * 4..][..4]
                .copy_from_slice(&(100 * y as u32 + x as u32 + 1).to_le_bytes());
        }
    }
    for (swizzle, x, y) in [(0, 0, 0), (0, -3, 2), (3, 0, 0), (3, 4, -1)] {
        let g = Gpu::new(&tensor_load("%rd3", x, y));
        let out = g.zeros(4096);
        let inp = g.mem.upload(&data);
        let map = map_over(inp, swizzle);
        g.try_launch(
            "k",
            [1, 1, 1],
            [1, 1, 1],
            0,
            &[Arg::Ptr(out), Arg::Ptr(inp), Arg::Bytes(map.to_vec())],
        )
        .unwrap();
        let got = g.get::<u32>(out, 32 + 128);
        assert_eq!(got[0], 1, "phase complete");
        for r in 0..8i32 {
            for c in 0..16i32 {
                let (gx, gy) = (x + c, y + r);
                let want = if (0..10).contains(&gx) && (0..5).contains(&gy) {
                    (100 * gy + gx + 1) as u32
                } else {
                    0
                };
                let mut off = ((r * 16 + c) * 4) as u32;
                if swizzle == 3 {
                    off ^= ((off >> 7) & 7) << 4;
                }
                assert_eq!(
                    got[32 + off as usize / 4],
                    want,
                    "swizzle {swizzle} at ({x},{y}) r {r} c {c}"
                );
            }
        }
    }
}

#[test]
fn hostile_tensor_maps_fail_the_launch() {
    // Zeros: rank 0.
    let (r, _) = launch(&tensor_load("%rd3", 0, 0), &[0; 64], [0; 128]);
    assert!(
        matches!(r, Err(KernelError::InvalidTensorMap { .. })),
        "{r:?}"
    );
    assert_eq!(r.unwrap_err().cuda_status(), 700);
    // A map read from an unaligned address.
    let src = tensor_load("%rd4", 0, 0).replace(
        "mov.u32 %r1, sm;",
        "mov.u32 %r1, sm;\nadd.u64 %rd4, %rd3, 8;",
    );
    let (r, _) = launch(&src, &[0; 64], map_over(0x1000, 0));
    assert!(
        matches!(r, Err(KernelError::MisalignedAddress { .. })),
        "{r:?}"
    );
    // A valid map over memory that is not there.
    let (r, _) = launch(&tensor_load("%rd3", 0, 0), &[0; 64], map_over(0x10_0000, 0));
    assert!(
        matches!(r, Err(KernelError::IllegalAddress { .. })),
        "{r:?}"
    );
    // A map whose rank differs from the instruction's.
    let mut three = map_over(0x1000, 0);
    three[8] = 3;
    let (r, _) = launch(&tensor_load("%rd3", 0, 0), &[0; 64], three);
    assert!(
        matches!(r, Err(KernelError::InvalidTensorMap { .. })),
        "{r:?}"
    );
}

#[test]
fn tensormap_replace_writes_the_field_and_checks_alignment() {
    let body = "mov.u64 %rd5, 0x1234;\n\
                tensormap.replace.tile.global_address.global.b1024.b64 [%rd1], %rd5;\n\
                tensormap.replace.tile.rank.global.b1024.b32 [%rd1], 2;\n\
                tensormap.replace.tile.box_dim.global.b1024.b32 [%rd1], 1, 64;";
    let (r, out) = launch(&kernel(body), &[0; 16], [0; 128]);
    r.unwrap();
    assert_eq!(out[0], 0x1234);
    assert_eq!(out[2] & 0xff, 3);
    assert_eq!(out[10], 64);
    let (r, _) = launch(
        &kernel("tensormap.replace.tile.rank.shared::cta.b1024.b32 [%r2+8], 2;"),
        &[0; 16],
        [0; 128],
    );
    assert!(
        matches!(r, Err(KernelError::MisalignedAddress { .. })),
        "{r:?}"
    );
    // Multicast parses, and fails the launch when run.
    let src = kernel(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster \
         [%r1], [%rd3, {%r10, %r11}], [%r2], %r12;",
    );
    let (r, _) = launch(&src, &[0; 16], [0; 128]);
    assert!(matches!(r, Err(KernelError::Unsupported { .. })), "{r:?}");
}
