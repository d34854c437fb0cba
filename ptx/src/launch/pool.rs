// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The worker pool every launch shares.
//!
//! Blocks of a launch run on a persistent pool of threads, one per core, created on the
//! first launch that needs more than one worker; no launch creates or joins a thread. The
//! launching thread works too: a launch with `n` workers runs the block loop on the calling
//! thread and queues `n - 1` more loops on the pool, and a launch with one worker (one
//! block, or `threads: 1`) never touches the pool. Concurrent launches (several sessions)
//! share the pool's threads; each still makes progress on its own calling thread.
//!
//! If the pool cannot be built (the system refuses threads), launches fall back to scoped
//! threads of their own.

use std::sync::OnceLock;

use rayon_core::{ThreadPool, ThreadPoolBuilder};

/// The shared pool, built on first use; `None` if it could not be built.
fn pool() -> Option<&'static ThreadPool> {
    static POOL: OnceLock<Option<ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        ThreadPoolBuilder::new()
            .num_threads(cores())
            .thread_name(|i| format!("vcuda-ptx-{i}"))
            .build()
            .ok()
    })
    .as_ref()
}

/// Cores available to this process.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Runs `work` on `n` threads at once (the caller's and `n - 1` of the pool's) and returns
/// when every one has returned.
pub fn run(n: usize, work: &(dyn Fn() + Sync)) {
    if n <= 1 {
        work();
        return;
    }
    match pool() {
        Some(p) => p.in_place_scope(|s| {
            for _ in 1..n {
                s.spawn(|_| work());
            }
            work();
        }),
        None => std::thread::scope(|s| {
            for _ in 1..n {
                s.spawn(work);
            }
            work();
        }),
    }
}

/// Runs `work` on `n` threads of their own at once (the caller's and `n - 1` new ones), for
/// work whose instances wait for each other (a cooperative launch's blocks); the shared
/// pool's threads may all be busy elsewhere, so it is not used. If the system refuses a
/// thread, `refused` is called first (it must make the running instances stop: they would
/// wait for the missing one forever).
pub fn run_dedicated(n: usize, work: &(dyn Fn() + Sync), refused: &dyn Fn()) {
    std::thread::scope(|s| {
        for _ in 1..n {
            let spawned = std::thread::Builder::new()
                .name("vcuda-ptx-coop".into())
                .spawn_scoped(s, work);
            if spawned.is_err() {
                log::warn!("cannot start a thread for a cooperative block");
                refused();
                break;
            }
        }
        work();
    });
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn runs_n_loops_on_reused_threads() {
        let ran = AtomicUsize::new(0);
        let names = Mutex::new(HashSet::new());
        for _ in 0..50 {
            run(4, &|| {
                ran.fetch_add(1, Ordering::Relaxed);
                let name = std::thread::current().name().map(str::to_owned);
                names.lock().unwrap().insert(name);
            });
        }
        assert_eq!(ran.load(Ordering::Relaxed), 200);
        // The caller's thread plus at most the pool's: no thread per launch.
        assert!(names.lock().unwrap().len() <= cores() + 1);
    }

    #[test]
    fn one_worker_runs_on_the_caller() {
        let me = std::thread::current().id();
        run(1, &|| assert_eq!(std::thread::current().id(), me));
    }
}
