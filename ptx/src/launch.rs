// SPDX-License-Identifier: Apache-2.0 OR MIT
//! [`launch`]: the layer above the two engines. It checks a launch's configuration, builds
//! the [`Launch`] its workers share, chooses the engine (the kernel compiled to native code
//! by [`crate::jit`] where the compiler handles it, else the interpreter in [`crate::exec`]),
//! and spreads the grid's blocks over workers on the shared pool ([`pool`]).

use std::{
    sync::{
        Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Instant, SystemTime},
};

use crate::{
    cluster::{Cluster, MAX_CLUSTER_SIZE},
    error::KernelError,
    grid::{Launch, LaunchConfig, LaunchOptions, LaunchStats, MAX_COOPERATIVE_BLOCKS, PrintfSink},
    memory::DeviceMemory,
    module::{FUNC_WINDOW, GlobalId, KernelId, KernelInfo, Module, Sym},
};

mod pool;

/// Most threads in a block.
const MAX_THREADS: u32 = 1024;

/// Runs `kernel` over the whole grid. Returns when every block has finished or one failed.
///
/// `params` is the parameter buffer laid out as
/// [`KernelInfo::params`](crate::KernelInfo::params) says (at least `param_size` bytes).
/// `global_addr` gives the device address of each module variable.
#[allow(clippy::too_many_arguments)]
pub fn launch(
    module: &Module,
    kernel: KernelId,
    cfg: &LaunchConfig,
    params: &[u8],
    global_addr: &dyn Fn(GlobalId) -> u64,
    mem: &dyn DeviceMemory,
    out: &dyn PrintfSink,
    opts: &LaunchOptions,
) -> Result<LaunchStats, KernelError> {
    let start = Instant::now();
    let k = module
        .kernels
        .get(kernel.0 as usize)
        .ok_or_else(|| KernelError::InvalidConfig("unknown kernel".into()))?;
    let [bx, by, bz] = cfg.block;
    let [gx, gy, gz] = cfg.grid;
    let nthreads = bx as u64 * by as u64 * bz as u64;
    if bx == 0
        || by == 0
        || bz == 0
        || bx > 1024
        || by > 1024
        || bz > 64
        || nthreads > MAX_THREADS as u64
    {
        return Err(KernelError::InvalidConfig(format!("block {bx}x{by}x{bz}")));
    }
    if gx == 0 || gy == 0 || gz == 0 || gx > i32::MAX as u32 || gy > 65535 || gz > 65535 {
        return Err(KernelError::InvalidConfig(format!("grid {gx}x{gy}x{gz}")));
    }
    if let Some(r) = k.reqntid
        && r != cfg.block
    {
        return Err(KernelError::InvalidConfig(format!(
            "block {bx}x{by}x{bz} but .reqntid {}x{}x{}",
            r[0], r[1], r[2]
        )));
    }
    if let Some(m) = k.maxntid
        && nthreads > m[0] as u64 * m[1] as u64 * m[2] as u64
    {
        return Err(KernelError::InvalidConfig(format!(
            "{nthreads} threads exceed .maxntid {}x{}x{}",
            m[0], m[1], m[2]
        )));
    }
    if params.len() < k.param_size as usize {
        return Err(KernelError::InvalidParams {
            expected: k.param_size,
            got: params.len(),
        });
    }
    let dyn_base =
        (k.static_shared as u64).div_ceil(k.dyn_align.max(1) as u64) * k.dyn_align.max(1) as u64;
    let shared = if cfg.dynamic_shared > 0 {
        dyn_base + cfg.dynamic_shared as u64
    } else {
        k.static_shared as u64
    };
    if shared > opts.max_shared_bytes as u64 {
        return Err(KernelError::SharedMemoryTooLarge {
            requested: shared,
            limit: opts.max_shared_bytes as u64,
        });
    }
    let syms = module
        .syms
        .iter()
        .enumerate()
        .map(|(i, s)| match *s {
            Sym::Global(g) => global_addr(g),
            Sym::SharedModule => k.module_shared_offset(i as u32),
            Sym::SharedKernel(o) => k.shared_base as u64 + o as u64,
            Sym::SharedDynamic => dyn_base,
            Sym::Func(f) => FUNC_WINDOW + f as u64,
        })
        .collect();
    // Register windows for the functions this kernel can reach.
    let mut reg_base = vec![u32::MAX; module.funcs.len()];
    let mut total_regs = 0u32;
    let mut stack = vec![k.func as usize];
    while let Some(f) = stack.pop() {
        if reg_base[f] != u32::MAX {
            continue;
        }
        reg_base[f] = total_regs;
        total_regs = total_regs.saturating_add(module.funcs[f].nregs);
        stack.extend(module.funcs[f].callees.iter().map(|&c| c as usize));
        if module.funcs[f].indirect_calls {
            stack.extend(module.addr_taken.iter().map(|&c| c as usize));
        }
    }
    let frame = module.funcs[k.func as usize].frame_size;
    if frame > opts.max_local_bytes {
        return Err(KernelError::OutOfResources(format!(
            "{frame} bytes of local memory per thread (limit {})",
            opts.max_local_bytes
        )));
    }
    let reg_bytes = total_regs as u64 * 8 * nthreads.div_ceil(32) * 32;
    if reg_bytes > opts.max_register_bytes {
        return Err(KernelError::OutOfResources(format!(
            "{total_regs} registers per thread"
        )));
    }
    let nblocks = gx as u64 * gy as u64 * gz as u64;
    if cfg.grid_workspace != 0 {
        if nblocks > MAX_COOPERATIVE_BLOCKS {
            return Err(KernelError::InvalidConfig(format!(
                "a cooperative grid of {nblocks} blocks (at most {MAX_COOPERATIVE_BLOCKS})"
            )));
        }
        // Every block is resident at once: the register files, local frames and shared
        // memory of all of them together stay within one block's register budget.
        let per_block = reg_bytes
            .saturating_add(u64::from(frame).saturating_mul(nthreads))
            .saturating_add(shared);
        if per_block.saturating_mul(nblocks) > opts.max_register_bytes {
            return Err(KernelError::OutOfResources(format!(
                "{nblocks} resident blocks of {per_block} bytes of registers, local and \
                 shared memory (limit {} in all)",
                opts.max_register_bytes
            )));
        }
    }
    let (cluster, explicit_cluster) = cluster_shape(k, cfg)?;
    let l = Launch {
        module,
        kernel: k,
        cfg: *cfg,
        params,
        syms,
        reg_base,
        total_regs,
        nthreads: nthreads as u32,
        nblocks,
        cluster,
        explicit_cluster,
        shared_size: shared as u32,
        mem,
        out,
        opts,
        next_block: AtomicU64::new(0),
        abort: AtomicBool::new(false),
        error: Mutex::new(None),
        insts: AtomicU64::new(0),
        winsts: AtomicU64::new(0),
        start,
        timer0: SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
    };
    let cores = if opts.threads == 0 {
        pool::cores()
    } else {
        opts.threads
    };
    let workers = (cores as u64).min(nblocks).max(1) as usize;
    let clustered = l.cluster_size() > 1 || explicit_cluster;
    // Compiled code runs blocks that are clusters of one; clusters run interpreted.
    let compiled = if opts.jit && !clustered {
        crate::jit::cache::get(module, kernel.0, &l)?
    } else {
        None
    };
    let work = || match &compiled {
        Some(c) => crate::jit::worker(&l, c),
        None => crate::exec::worker(&l),
    };
    if l.cluster_size() > 1 {
        // Clusters: each worker runs one cluster at a time, its blocks at once.
        let size = l.cluster_size();
        let nclusters = nblocks / u64::from(size);
        let workers = (cores as u64).min(nclusters).max(1) as usize;
        pool::run(workers, &|| {
            while let Some(c) = l.claim_cluster() {
                let cl = Cluster::new(size, l.nthreads);
                pool::run_dedicated(
                    size as usize,
                    &|| crate::exec::cluster_block(&l, &cl, c),
                    &|| {
                        l.fail(
                            0,
                            KernelError::OutOfResources(
                                "a thread for every block of a cluster".into(),
                            ),
                        )
                    },
                );
            }
        });
    } else if cfg.grid_workspace != 0 {
        // Cooperative: every block at once (each worker takes one block and finishes).
        pool::run_dedicated(nblocks as usize, &work, &|| {
            l.fail(
                0,
                KernelError::OutOfResources(
                    "a thread for every block of a cooperative launch".into(),
                ),
            )
        });
    } else {
        pool::run(workers, &work);
    }
    if let Some((_, e)) = l.error.lock().ok().and_then(|mut e| e.take()) {
        return Err(e);
    }
    Ok(LaunchStats {
        thread_instructions: l.insts.load(Ordering::Relaxed),
        warp_instructions: l.winsts.load(Ordering::Relaxed),
        blocks: nblocks,
        elapsed: start.elapsed(),
        compiled: compiled.is_some(),
    })
}

/// A launch's cluster shape (`[1, 1, 1]`: none) and whether it is explicit (given by the
/// launch or the kernel): the launch's, else the kernel's `.reqnctapercluster`; the grid
/// divides into it, it has at most [`MAX_CLUSTER_SIZE`] blocks (and at most the kernel's
/// `.maxclusterrank`), and a kernel with a shape of its own takes no other.
fn cluster_shape(k: &KernelInfo, cfg: &LaunchConfig) -> Result<([u32; 3], bool), KernelError> {
    let given = (cfg.cluster != [0, 0, 0]).then_some(cfg.cluster);
    let shape = match (given, k.reqnctapercluster) {
        (Some(g), Some(r)) if g != r => {
            return Err(KernelError::InvalidCluster(format!(
                "cluster {}x{}x{} for a kernel of .reqnctapercluster {}x{}x{}",
                g[0], g[1], g[2], r[0], r[1], r[2]
            )));
        }
        (Some(s), _) | (None, Some(s)) => s,
        (None, None) => {
            if k.explicit_cluster {
                return Err(KernelError::InvalidCluster(
                    "a kernel of .explicitcluster launched without a cluster shape".into(),
                ));
            }
            return Ok(([1, 1, 1], false));
        }
    };
    let size = shape
        .iter()
        .fold(1u64, |a, &d| a.saturating_mul(u64::from(d)));
    let limit = k
        .maxclusterrank
        .map_or(MAX_CLUSTER_SIZE, |m| m.min(MAX_CLUSTER_SIZE));
    if shape.contains(&0)
        || size > u64::from(limit)
        || cfg.grid.iter().zip(shape).any(|(g, s)| g % s != 0)
    {
        return Err(KernelError::InvalidCluster(format!(
            "cluster {}x{}x{} for grid {}x{}x{} (at most {limit} blocks, dividing the grid)",
            shape[0], shape[1], shape[2], cfg.grid[0], cfg.grid[1], cfg.grid[2]
        )));
    }
    if size > 1 && cfg.grid_workspace != 0 {
        return Err(KernelError::InvalidCluster(
            "a cooperative launch with clusters".into(),
        ));
    }
    Ok((shape, true))
}
