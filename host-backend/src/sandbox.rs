// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The sandbox a per-tenant worker process enters before it serves anyone
//! ([`crate::worker`]), in the spirit of firecracker's jailer.
//!
//! - Not dumpable (`PR_SET_DUMPABLE` 0): other processes of the same user cannot attach to
//!   it, read its memory through `/proc/PID/mem` or `process_vm_readv`, or make it dump
//!   core.
//! - No new privileges, and a seccomp filter (seccompiler, all threads) that fails with
//!   `EPERM` the system calls a CUDA worker never needs and an attacker who took it over
//!   would want first: starting programs, tracing or reading other processes, loading
//!   kernel code or BPF, mounting, namespaces, keyrings, `userfaultfd`, `io_uring`, the
//!   clock and the machine's state.
//!
//! It is a deny list, not firecracker's allow list: the set of calls NVIDIA's driver makes
//! (ioctls on its device files, `mmap` of them, sockets to `nvidia-persistenced` and MPS,
//! its own threads) has not been traced on a GPU yet; an allow list is the plan for the
//! first lent GPU (`tests/gpu/README.md`). The filter does not confine the driver's own
//! ioctls; a worker is one tenant's process, so what they reach is that tenant's.

use std::collections::BTreeMap;

use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, SeccompRule};
use thiserror::Error;

/// Why the sandbox could not be entered.
#[derive(Debug, Error)]
pub enum Error {
    /// `prctl(PR_SET_DUMPABLE)` failed.
    #[error("cannot make the worker undumpable: {0}")]
    Dumpable(#[source] nix::Error),
    /// The filter could not be built for this architecture.
    #[error("cannot build the seccomp filter: {0}")]
    Build(String),
    /// The kernel refused the filter.
    #[error("cannot install the seccomp filter: {0}")]
    Install(#[source] seccompiler::Error),
}

/// System calls a worker is refused (`EPERM`).
pub fn denied_syscalls() -> Vec<(&'static str, i64)> {
    let mut v = vec![
        // Other programs and other processes.
        ("execve", libc::SYS_execve),
        ("execveat", libc::SYS_execveat),
        ("ptrace", libc::SYS_ptrace),
        ("process_vm_readv", libc::SYS_process_vm_readv),
        ("process_vm_writev", libc::SYS_process_vm_writev),
        ("process_madvise", libc::SYS_process_madvise),
        ("pidfd_getfd", libc::SYS_pidfd_getfd),
        ("kcmp", libc::SYS_kcmp),
        // Kernel code, BPF, tracing.
        ("init_module", libc::SYS_init_module),
        ("finit_module", libc::SYS_finit_module),
        ("delete_module", libc::SYS_delete_module),
        ("kexec_load", libc::SYS_kexec_load),
        ("kexec_file_load", libc::SYS_kexec_file_load),
        ("bpf", libc::SYS_bpf),
        ("perf_event_open", libc::SYS_perf_event_open),
        ("userfaultfd", libc::SYS_userfaultfd),
        ("io_uring_setup", libc::SYS_io_uring_setup),
        ("io_uring_enter", libc::SYS_io_uring_enter),
        ("io_uring_register", libc::SYS_io_uring_register),
        // Mounts, namespaces, the root.
        ("mount", libc::SYS_mount),
        ("umount2", libc::SYS_umount2),
        ("pivot_root", libc::SYS_pivot_root),
        ("chroot", libc::SYS_chroot),
        ("setns", libc::SYS_setns),
        ("unshare", libc::SYS_unshare),
        ("open_by_handle_at", libc::SYS_open_by_handle_at),
        ("name_to_handle_at", libc::SYS_name_to_handle_at),
        ("fanotify_init", libc::SYS_fanotify_init),
        // Keyrings.
        ("add_key", libc::SYS_add_key),
        ("request_key", libc::SYS_request_key),
        ("keyctl", libc::SYS_keyctl),
        // The machine.
        ("reboot", libc::SYS_reboot),
        ("swapon", libc::SYS_swapon),
        ("swapoff", libc::SYS_swapoff),
        ("acct", libc::SYS_acct),
        ("quotactl", libc::SYS_quotactl),
        ("settimeofday", libc::SYS_settimeofday),
        ("clock_settime", libc::SYS_clock_settime),
        ("clock_adjtime", libc::SYS_clock_adjtime),
        ("adjtimex", libc::SYS_adjtimex),
        ("sethostname", libc::SYS_sethostname),
        ("setdomainname", libc::SYS_setdomainname),
        ("syslog", libc::SYS_syslog),
        ("vhangup", libc::SYS_vhangup),
    ];
    #[cfg(target_arch = "x86_64")]
    v.extend([
        ("iopl", libc::SYS_iopl),
        ("ioperm", libc::SYS_ioperm),
        ("uselib", libc::SYS_uselib),
    ]);
    v
}

/// The worker's seccomp program: [`denied_syscalls`] fail with `EPERM`, everything else is
/// allowed. Built before it is installed, so that installing allocates nothing (it may run
/// between `fork` and `exec`).
pub fn filter() -> Result<BpfProgram, Error> {
    let rules: BTreeMap<i64, Vec<SeccompRule>> = denied_syscalls()
        .into_iter()
        .map(|(_, nr)| (nr, Vec::new()))
        .collect();
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e: seccompiler::BackendError| Error::Build(e.to_string()))?;
    let f = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| Error::Build(e.to_string()))?;
    f.try_into()
        .map_err(|e: seccompiler::BackendError| Error::Build(e.to_string()))
}

/// Installs `program` on every thread of the process (and sets no-new-privileges).
pub fn install(program: &BpfProgram) -> Result<(), Error> {
    seccompiler::apply_filter_all_threads(program).map_err(Error::Install)
}

/// Enters the sandbox: not dumpable, then the filter. Irreversible.
pub fn enter() -> Result<(), Error> {
    nix::sys::prctl::set_dumpable(false).map_err(Error::Dumpable)?;
    install(&filter()?)
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt;

    use super::*;

    #[test]
    fn the_filter_refuses_to_start_programs() {
        let program = filter().unwrap();
        let mut cmd = std::process::Command::new("/bin/true");
        // SAFETY: between fork and exec the closure only calls prctl and seccomp on the
        // program built above (no allocation).
        unsafe {
            cmd.pre_exec(move || install(&program).map_err(std::io::Error::other));
        }
        let e = cmd.status().expect_err("exec must fail under the filter");
        assert_eq!(e.raw_os_error(), Some(libc::EPERM), "{e}");
        // Without it the same program starts.
        assert!(
            std::process::Command::new("/bin/true")
                .status()
                .unwrap()
                .success()
        );
    }

    #[test]
    fn every_denied_call_is_a_real_number_once() {
        let calls = denied_syscalls();
        let mut nrs: Vec<_> = calls.iter().map(|&(_, n)| n).collect();
        nrs.sort_unstable();
        nrs.dedup();
        assert_eq!(nrs.len(), calls.len());
        assert!(nrs.iter().all(|&n| n >= 0));
    }
}
