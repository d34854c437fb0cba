// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Thread-block clusters (sm_90), as PTX text like nvcc writes for cooperative groups'
//! `this_cluster()` (the nvcc-built `tests/cuda/cluster.cu` runs the same through the whole
//! stack): the cluster registers, the cluster barrier, distributed shared memory through
//! `mapa` (loads, stores, atomics), and the shapes a launch may not have.

mod common;
use common::*;
use vcuda_ptx::KernelError;

/// A kernel `k(out)` with the directives `dirs`, 32 words of shared memory `s` (`%r5` its
/// shared address, `%rd3` its generic one), `%r1` the cluster rank, `%r2` `%tid.x`, `%rd1`
/// the global `out` and `%r3` the block's linear id.
fn kernel(dirs: &str, body: &str) -> String {
    format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n\
         .visible .entry k(.param .u64 out)\n{dirs}\n{{\n\
         .reg .pred %p<8>;\n.reg .b32 %r<40>;\n.reg .b64 %rd<20>;\n\
         .shared .align 4 .b8 s[128];\n\
         ld.param.u64 %rd1, [out];\ncvta.to.global.u64 %rd1, %rd1;\n\
         mov.u32 %r1, %cluster_ctarank;\nmov.u32 %r2, %tid.x;\n\
         mov.u32 %r30, %ctaid.x;\nmov.u32 %r31, %ctaid.y;\nmov.u32 %r32, %nctaid.x;\n\
         mad.lo.s32 %r3, %r31, %r32, %r30;\n\
         mov.u32 %r5, s;\ncvt.u64.u32 %rd2, %r5;\ncvta.shared.u64 %rd3, %rd2;\n\
         {body}\nret;\n}}\n"
    )
}

/// `out[block * ntid + tid] = %r10`.
const STORE: &str = "mov.u32 %r21, %ntid.x;\nmad.lo.s32 %r20, %r3, %r21, %r2;\n\
                     mul.wide.u32 %rd10, %r20, 4;\nadd.s64 %rd10, %rd1, %rd10;\n\
                     st.global.u32 [%rd10], %r10;\n";

fn run(g: &Gpu, grid: [u32; 3], block: u32) -> Result<Vec<u32>, KernelError> {
    let blocks = (grid[0] * grid[1] * grid[2]) as usize;
    let out = g.zeros(blocks * block as usize * 4);
    g.try_launch("k", grid, [block, 1, 1], 0, &[Arg::Ptr(out)])?;
    Ok(g.get::<u32>(out, blocks * block as usize))
}

#[test]
fn registers_describe_the_cluster_shape() {
    // rank + 10 * nctarank + 100 * cluster_ctaid.y + 1000 * clusterid.x + 10000 * nclusterid.y
    let body = format!(
        "mov.u32 %r6, %cluster_nctarank;\nmov.u32 %r7, %cluster_ctaid.y;\n\
         mov.u32 %r8, %clusterid.x;\nmov.u32 %r9, %nclusterid.y;\n\
         mad.lo.s32 %r10, %r6, 10, %r1;\nmad.lo.s32 %r10, %r7, 100, %r10;\n\
         mad.lo.s32 %r10, %r8, 1000, %r10;\nmad.lo.s32 %r10, %r9, 10000, %r10;\n{STORE}"
    );
    let g = Gpu::new(&kernel(".reqnctapercluster 2, 2, 1", &body));
    let out = run(&g, [4, 2, 1], 1).unwrap();
    // Blocks (x, y) of a 4x2 grid in 2x2 clusters: rank x%2 + 2*(y%2), cluster x/2.
    let want: Vec<u32> = (0..8)
        .map(|b| {
            let (x, y) = (b % 4, b / 4);
            (x % 2 + 2 * (y % 2)) + 40 + 100 * (y % 2) + 1000 * (x / 2) + 10000
        })
        .collect();
    assert_eq!(out, want);
}

#[test]
fn blocks_read_each_others_shared_memory_after_the_barrier() {
    // Each block fills its `s` with rank * 100 + tid, syncs the cluster, and reads the next
    // rank's through a generic `mapa` address and through `ld.shared::cluster`.
    let body = format!(
        "mad.lo.s32 %r6, %r1, 100, %r2;\nshl.b32 %r7, %r2, 2;\nadd.s32 %r8, %r5, %r7;\n\
         st.shared.u32 [%r8], %r6;\n\
         barrier.cluster.arrive;\nbarrier.cluster.wait;\n\
         mov.u32 %r9, %cluster_nctarank;\nadd.s32 %r11, %r1, 1;\nrem.u32 %r11, %r11, %r9;\n\
         mapa.u64 %rd4, %rd3, %r11;\nmul.wide.u32 %rd5, %r7, 1;\nadd.s64 %rd4, %rd4, %rd5;\n\
         ld.u32 %r12, [%rd4];\n\
         mapa.shared::cluster.u32 %r13, %r8, %r11;\nld.shared::cluster.u32 %r14, [%r13];\n\
         getctarank.shared::cluster.u32 %r15, %r13;\n\
         mad.lo.s32 %r10, %r14, 1000, %r12;\nmad.lo.s32 %r10, %r15, 1000000, %r10;\n\
         barrier.cluster.arrive;\nbarrier.cluster.wait;\n{STORE}"
    );
    let g = Gpu::new(&kernel("", &body));
    *g.cluster.lock().unwrap() = [4, 1, 1];
    let out = run(&g, [8, 1, 1], 32).unwrap();
    for b in 0..8u32 {
        let next = (b % 4 + 1) % 4;
        for t in 0..32u32 {
            let v = next * 100 + t;
            assert_eq!(
                out[(b * 32 + t) as usize],
                next * 1_000_000 + v * 1000 + v,
                "block {b} thread {t}"
            );
        }
    }
}

#[test]
fn atomics_on_one_blocks_shared_memory_count_every_peer() {
    // Every thread of every block adds 1 to rank 0's `s[tid % 4]`; rank 0 writes them out.
    let body = format!(
        "st.shared.u32 [%r5], 0;\nst.shared.u32 [%r5+4], 0;\nst.shared.u32 [%r5+8], 0;\n\
         st.shared.u32 [%r5+12], 0;\n\
         barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n\
         and.b32 %r6, %r2, 3;\nshl.b32 %r6, %r6, 2;\nadd.s32 %r6, %r5, %r6;\n\
         mapa.shared::cluster.u32 %r7, %r6, 0;\n\
         atom.shared::cluster.add.u32 %r8, [%r7], 1;\n\
         barrier.cluster.arrive;\nbarrier.cluster.wait;\n\
         and.b32 %r9, %r2, 3;\nshl.b32 %r9, %r9, 2;\nadd.s32 %r9, %r5, %r9;\n\
         ld.shared.u32 %r10, [%r9];\n{STORE}\n\
         barrier.cluster.arrive;\nbarrier.cluster.wait;"
    );
    let g = Gpu::new(&kernel(".reqnctapercluster 8, 1, 1", &body));
    let out = run(&g, [16, 1, 1], 64).unwrap();
    for b in 0..16usize {
        let rank0 = b % 8 == 0;
        for t in 0..64usize {
            // 8 blocks of 64 threads, a quarter of them on each counter.
            let want = if rank0 { 128 } else { 0 };
            assert_eq!(out[b * 64 + t], want, "block {b} thread {t}");
        }
    }
}

#[test]
fn threads_that_exited_do_not_hold_the_barrier() {
    // Threads 16.. of every block exit first; the others sync twice and read the peer.
    let body = format!(
        "setp.ge.u32 %p1, %r2, 16;\n@%p1 exit;\n\
         st.shared.u32 [%r5], %r1;\n\
         barrier.cluster.arrive;\nbarrier.cluster.wait;\n\
         xor.b32 %r6, %r1, 1;\nmapa.shared::cluster.u32 %r7, %r5, %r6;\n\
         ld.shared::cluster.u32 %r10, [%r7];\n\
         barrier.cluster.arrive;\nbarrier.cluster.wait;\n{STORE}"
    );
    let g = Gpu::new(&kernel(".reqnctapercluster 2, 1, 1", &body));
    let out = run(&g, [2, 1, 1], 32).unwrap();
    for b in 0..2usize {
        for t in 0..16 {
            assert_eq!(out[b * 32 + t], (b as u32) ^ 1);
        }
        assert!(out[b * 32 + 16..b * 32 + 32].iter().all(|&v| v == 0));
    }
}

#[test]
fn without_clusters_a_block_is_its_own_cluster() {
    // The cluster barrier syncs the block's threads; mapa to rank 0 is the block's own.
    let body = format!(
        "shl.b32 %r7, %r2, 2;\nadd.s32 %r8, %r5, %r7;\nst.shared.u32 [%r8], %r2;\n\
         barrier.cluster.arrive;\nbarrier.cluster.wait;\n\
         sub.s32 %r9, 63, %r2;\nshl.b32 %r9, %r9, 2;\nadd.s32 %r9, %r5, %r9;\n\
         mapa.shared::cluster.u32 %r9, %r9, 0;\nld.shared::cluster.u32 %r10, [%r9];\n\
         mov.u32 %r11, %cluster_nctarank;\nmad.lo.s32 %r10, %r11, 100, %r10;\n{STORE}"
    );
    let src = kernel("", &body).replace("s[128]", "s[256]");
    let g = Gpu::new(&src);
    let out = run(&g, [3, 1, 1], 64).unwrap();
    for b in 0..3usize {
        for t in 0..64usize {
            assert_eq!(out[b * 64 + t], 100 + 63 - t as u32);
        }
    }
}

#[test]
fn a_peer_outside_the_cluster_is_an_illegal_address() {
    let body = "mapa.shared::cluster.u32 %r7, %r5, 2;\nld.shared::cluster.u32 %r10, [%r7];";
    let g = Gpu::new(&kernel(".reqnctapercluster 2, 1, 1", body));
    let r = run(&g, [2, 1, 1], 1);
    assert!(
        matches!(r, Err(KernelError::IllegalAddress { .. })),
        "{r:?}"
    );
}

#[test]
fn shapes_the_grid_does_not_divide_or_too_large_are_refused() {
    let body = format!("mov.u32 %r10, %r1;\n{STORE}");
    let g = Gpu::new(&kernel("", &body));
    for (shape, grid) in [
        ([3, 1, 1], [8, 1, 1]),
        ([16, 1, 1], [16, 1, 1]),
        ([2, 2, 3], [4, 4, 3]),
        ([0, 1, 1], [4, 1, 1]),
        // A product past u64 (a hostile request's shape).
        ([u32::MAX, u32::MAX, u32::MAX], [4, 1, 1]),
    ] {
        *g.cluster.lock().unwrap() = shape;
        let r = run(&g, grid, 1);
        assert!(
            matches!(r, Err(KernelError::InvalidCluster(_))),
            "{shape:?}: {r:?}"
        );
        assert_eq!(r.unwrap_err().cuda_status(), 912);
    }
    // A kernel with a shape of its own takes no other, and one that must have a shape
    // gets one.
    let g = Gpu::new(&kernel(".reqnctapercluster 2, 1, 1", &body));
    *g.cluster.lock().unwrap() = [4, 1, 1];
    assert!(matches!(
        run(&g, [8, 1, 1], 1),
        Err(KernelError::InvalidCluster(_))
    ));
    let g = Gpu::new(&kernel(".explicitcluster", &body));
    assert!(matches!(
        run(&g, [8, 1, 1], 1),
        Err(KernelError::InvalidCluster(_))
    ));
    *g.cluster.lock().unwrap() = [2, 1, 1];
    let out = run(&g, [4, 1, 1], 1).unwrap();
    assert_eq!(out, [0, 1, 0, 1]);
}
