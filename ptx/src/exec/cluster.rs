// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Thread-block cluster instructions in the interpreter: the cluster barrier
//! (`barrier.cluster.arrive`/`wait`), `mapa` and `getctarank` (see `crate::cluster` for the
//! addresses and the state a cluster's blocks share).

use super::{
    ctx::Ctx,
    warp::{BarWait, CLUSTER_BAR, NO_PHASE, Warp, lanes},
};
use crate::{
    cluster::{self, Cluster},
    module::{SHARED_WINDOW, WINDOW_SIZE},
};

impl Ctx<'_> {
    /// `barrier.cluster.arrive` (`wait: false`) or `.wait` for the lanes in `mask`: an
    /// arrival records the phase; a wait blocks the lanes whose phase is not yet complete
    /// (the block's loop lets them go, `block::cluster_round`). A block without a cluster
    /// makes one of its own threads.
    pub(super) fn cluster_bar(&mut self, w: &mut Warp, mask: u32, wait: bool) {
        let l = self.l;
        if mask != 0 {
            if self.cluster().is_none() {
                self.solo = Some(Box::new(Cluster::new(1, l.nthreads)));
            }
            if let Some(cl) = self.cluster() {
                if !wait {
                    let phase = cl.arrive(mask.count_ones());
                    for lane in lanes(mask) {
                        w.cluster_phase[lane] = phase;
                    }
                } else {
                    let phase = cl.phase();
                    let mut waiting = 0u32;
                    for lane in lanes(mask) {
                        let p = w.cluster_phase[lane];
                        if p == NO_PHASE || p < phase {
                            w.cluster_phase[lane] = NO_PHASE;
                            continue;
                        }
                        waiting |= 1 << lane;
                        let b = BarWait {
                            id: CLUSTER_BAR,
                            kind: 0,
                            dst: u32::MAX,
                        };
                        w.wait_at(lane, b);
                    }
                    w.block(waiting);
                }
            }
        }
        w.pc += 1;
        if w.group == 0 {
            w.schedule(l);
        }
    }

    /// `getctarank`: the rank of the block whose shared memory address `a` (generic when
    /// `generic`) is in.
    pub(super) fn cta_rank(&self, a: u64, generic: bool) -> u32 {
        let off = if generic {
            a.wrapping_sub(SHARED_WINDOW)
        } else {
            a
        };
        cluster::split(off).0.unwrap_or(self.rank)
    }
}

/// `mapa`: address `a` (generic when `generic`, else `.shared::cluster`) moved to block
/// `rank`'s shared memory; a generic address outside the shared window stays as it is.
pub(super) fn mapa(a: u64, rank: u32, generic: bool) -> u64 {
    if !generic {
        cluster::map(a, rank)
    } else if (SHARED_WINDOW..SHARED_WINDOW + WINDOW_SIZE).contains(&a) {
        SHARED_WINDOW + cluster::map(a - SHARED_WINDOW, rank)
    } else {
        a
    }
}

/// Whether shared address `a` names a cluster block's shared memory (`mapa`'s).
pub(super) fn names_rank(a: u64) -> bool {
    cluster::split(a).0.is_some()
}
