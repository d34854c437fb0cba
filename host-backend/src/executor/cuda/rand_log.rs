// SPDX-License-Identifier: Apache-2.0 OR MIT
//! What a migration needs of a Mersenne Twister generator (MTGP32, MT19937). cuRAND takes
//! no offset for these, so a generator cannot be put back where it was by setting one:
//! instead it keeps the calls it took (seeds and orderings set, draws, identical draws in
//! a row counted once), and a load makes it again and repeats them, drawing into a scratch
//! buffer. cuRAND is deterministic, so the same calls leave it in the same state.
//!
//! What a load repeats is bounded ([`MAX_STEPS`] entries, [`MAX_DRAWS`] draws and
//! [`MAX_OUTPUTS`] numbers in all, [`MAX_DRAW_BYTES`] in one draw: well under a second of a
//! GPU's time): a generator that took more keeps no log, and a session holding it does not
//! move.

use vcuda_protocol::lib::dist;
use vcuda_protocol::{RandGenerateReq, RandSetReq};

use super::curand_result as curand;
use super::rand::{distribution, mersenne, status_of};
use super::state::Generator;
use super::{CudaExecutor, driver, to_status};
use crate::executor::{ExecResult, Status};
use crate::migrate::state::RandStep;

/// Most calls a generator's log holds.
pub(super) const MAX_STEPS: usize = 4096;
/// Most draws a log holds.
pub(super) const MAX_DRAWS: u64 = 1 << 16;
/// Most numbers the draws of a log make in all.
pub(super) const MAX_OUTPUTS: u64 = 1 << 32;
/// Largest draw a log holds, in bytes (the scratch buffer a load draws into).
pub(super) const MAX_DRAW_BYTES: u64 = 1 << 30;

impl Generator {
    /// Adds `step` to the log, or drops the log where it would exceed [`MAX_STEPS`].
    pub(super) fn record(&mut self, step: RandStep) {
        let Some(log) = &mut self.log else {
            return;
        };
        if let (
            Some(RandStep::Draw {
                dist,
                n,
                mean,
                stddev,
                times,
            }),
            RandStep::Draw {
                dist: d,
                n: m,
                mean: mu,
                stddev: sd,
                ..
            },
        ) = (log.last_mut(), step)
            && (*dist, *n, mean.to_bits(), stddev.to_bits()) == (d, m, mu.to_bits(), sd.to_bits())
        {
            *times += 1;
            return;
        }
        if log.len() >= MAX_STEPS {
            self.log = None;
        } else {
            log.push(step);
        }
    }

    /// Adds draw `r` (`bytes` long, made) to the log, within the log's bounds.
    pub(super) fn record_draw(&mut self, r: &RandGenerateReq, bytes: u64) {
        if r.n == 0 {
            return;
        }
        let (outputs, draws) = self.log_drawn;
        match outputs.checked_add(r.n) {
            Some(total) if total <= MAX_OUTPUTS && draws < MAX_DRAWS && bytes <= MAX_DRAW_BYTES => {
                self.log_drawn = (total, draws + 1);
                self.record(RandStep::Draw {
                    dist: r.dist,
                    n: r.n,
                    mean: r.mean,
                    stddev: r.stddev,
                    times: 1,
                });
            }
            _ => self.log = None,
        }
    }
}

impl CudaExecutor {
    /// Repeats a saved Mersenne Twister's `steps` on generator `handle` (just made), after
    /// checking them against the log's bounds; its log is the same afterwards.
    pub(super) fn rand_replay(&mut self, handle: u64, steps: &[RandStep]) -> ExecResult<()> {
        let (g, host) = self.generator(handle)?;
        let rng = self.rand.map.get(&handle).map(|g| g.rng_type);
        if !rng.is_some_and(mersenne) || steps.len() > MAX_STEPS {
            return Err(Status::INVALID_VALUE);
        }
        // The scratch buffer: as large as the largest draw; every bound checked first.
        let (mut scratch, mut outputs, mut draws) = (0u64, 0u64, 0u64);
        for s in steps {
            if let RandStep::Draw { dist, n, times, .. } = *s {
                let elem = dist::elem_size(dist).ok_or(Status::INVALID_VALUE)?;
                let bytes = n.checked_mul(elem).ok_or(Status::INVALID_VALUE)?;
                outputs = n
                    .checked_mul(times)
                    .and_then(|o| o.checked_add(outputs))
                    .ok_or(Status::INVALID_VALUE)?;
                draws = draws.saturating_add(times);
                if bytes > MAX_DRAW_BYTES || outputs > MAX_OUTPUTS || draws > MAX_DRAWS {
                    return Err(Status::INVALID_VALUE);
                }
                scratch = scratch.max(bytes);
            }
        }
        self.cu_context()?;
        let mut host_buf: Vec<u64> = Vec::new();
        let dst = if host {
            host_buf.resize(scratch.div_ceil(8) as usize, 0);
            host_buf.as_mut_ptr().cast::<u8>()
        } else if scratch > 0 {
            // SAFETY: our generator with its context current; the legacy stream.
            unsafe { curand::set_stream(g, std::ptr::null_mut()) }.map_err(status_of)?;
            driver::mem_alloc(scratch as usize).map_err(to_status)? as *mut u8
        } else {
            std::ptr::null_mut()
        };
        let res = self.replay_steps(handle, g, steps, dst);
        if !host && scratch > 0 {
            // The draws are done before their buffer goes (they ran on the legacy stream).
            let synced = driver::ctx_synchronize().map_err(to_status);
            // SAFETY: allocated above in this context; no draw uses it any more.
            let freed = unsafe { driver::mem_free(dst as u64) }.map_err(to_status);
            synced.and(freed)?;
        }
        res
    }

    /// The calls of [`Self::rand_replay`], drawing into `dst` (large enough for each).
    fn replay_steps(
        &mut self,
        handle: u64,
        g: cudarc::curand::sys::curandGenerator_t,
        steps: &[RandStep],
        dst: *mut u8,
    ) -> ExecResult<()> {
        for &s in steps {
            match s {
                RandStep::Set { what, value } => self.rand_set_impl(&RandSetReq {
                    handle,
                    what,
                    reserved: 0,
                    value,
                })?,
                RandStep::Draw {
                    dist,
                    n,
                    mean,
                    stddev,
                    times,
                } => {
                    let d = distribution(dist, mean, stddev)?;
                    let elem = dist::elem_size(dist).ok_or(Status::INVALID_VALUE)?;
                    let len = usize::try_from(n).map_err(|_| Status::INVALID_VALUE)?;
                    for _ in 0..times {
                        // SAFETY: our generator with its context current; `dst` holds the
                        // largest draw of `steps` (checked by the caller).
                        unsafe { curand::generate(g, d, dst, len) }.map_err(status_of)?;
                        if let Some(made) = self.rand.map.get_mut(&handle) {
                            made.record_draw(
                                &RandGenerateReq {
                                    handle,
                                    stream: 0,
                                    dst: 0,
                                    n,
                                    dist,
                                    flags: 0,
                                    mean,
                                    stddev,
                                },
                                n * elem,
                            );
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mt() -> Generator {
        Generator {
            raw: 0,
            host: false,
            rng_type: 141,
            seed: 0,
            offset: 0,
            dims: 1,
            ordering: 101,
            log: Some(Vec::new()),
            log_drawn: (0, 0),
        }
    }

    fn req(n: u64, dist: u32) -> RandGenerateReq {
        RandGenerateReq {
            handle: 1,
            stream: 0,
            dst: 0,
            n,
            dist,
            flags: 0,
            mean: 0.0,
            stddev: 1.0,
        }
    }

    #[test]
    fn identical_draws_in_a_row_are_one_entry() {
        let mut g = mt();
        g.record(RandStep::Set { what: 1, value: 5 });
        for _ in 0..3 {
            g.record_draw(&req(8, dist::BITS32), 32);
        }
        g.record_draw(&req(8, dist::UNIFORM_F32), 32);
        g.record_draw(&req(0, dist::BITS32), 0);
        g.record_draw(&req(8, dist::BITS32), 32);
        let draw = |dist, times| RandStep::Draw {
            dist,
            n: 8,
            mean: 0.0,
            stddev: 1.0,
            times,
        };
        assert_eq!(
            g.log.unwrap(),
            [
                RandStep::Set { what: 1, value: 5 },
                draw(dist::BITS32, 3),
                draw(dist::UNIFORM_F32, 1),
                draw(dist::BITS32, 1),
            ]
        );
        assert_eq!(g.log_drawn, (40, 5));
    }

    #[test]
    fn a_log_past_its_bounds_is_dropped() {
        let mut g = mt();
        for _ in 0..MAX_DRAWS {
            g.record_draw(&req(2, dist::BITS32), 8);
        }
        assert!(g.log.is_some());
        g.record_draw(&req(2, dist::BITS32), 8);
        assert!(g.log.is_none(), "more draws than a load repeats");
        let mut g = mt();
        g.record_draw(&req(MAX_OUTPUTS + 1, dist::BITS32), 8);
        assert!(g.log.is_none(), "more numbers than a load draws");
        let mut g = mt();
        g.record_draw(&req(1, dist::BITS32), MAX_DRAW_BYTES + 1);
        assert!(g.log.is_none(), "a draw larger than the scratch buffer");
        let mut g = mt();
        for i in 0..=MAX_STEPS as u64 {
            g.record(RandStep::Set { what: 1, value: i });
        }
        assert!(g.log.is_none(), "more entries than a log holds");
    }
}
