// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The sandbox a per-tenant worker process enters before it serves anyone
//! ([`crate::worker`]), in the spirit of firecracker's jailer.
//!
//! - Not dumpable (`PR_SET_DUMPABLE` 0): other processes of the same user cannot attach to
//!   it, read its memory through `/proc/PID/mem` or `process_vm_readv`, or make it dump
//!   core.
//! - No capabilities (a backend run as root starts workers that keep none, bounding set
//!   included), no new privileges, and seccomp filters (seccompiler, all threads) that fail
//!   with `EPERM` the system calls a CUDA worker never needs and an attacker who took it
//!   over would want first: starting programs, new processes (`fork`, `vfork`, `clone`
//!   without `CLONE_THREAD`; `clone3` answers `ENOSYS` so the C library falls back to
//!   `clone`), signals to any other process (`kill`, `tgkill`, `rt_sigqueueinfo`,
//!   `rt_tgsigqueueinfo` to another, `tkill` at all), tracing or reading other processes, loading
//!   kernel code or BPF, mounting, namespaces, keyrings, `userfaultfd`, `io_uring`, the
//!   clock and the machine's state; and the x32 system call numbers, which would bypass
//!   the rest.
//!
//! - Under [`Policy::AllowList`] a second filter refuses (`EPERM`) every call outside
//!   [`allowed_syscalls`], firecracker's way: the set traced from real workers
//!   (`tests/gpu/syscalls.sh`, `scripts/syscall-sets.py`). The backend's `--worker-seccomp
//!   auto` gives it to CPU executor workers, whose calls were traced here, and keeps
//!   [`Policy::DenyList`] for CUDA workers until NVIDIA's driver's calls are traced on a
//!   GPU (`tests/gpu/device-check.sh` does so and checks the list). A driver that needs a
//!   call the list lacks fails the probe worker, which starts the executor in the sandbox
//!   before the backend serves. Neither filter confines the driver's own ioctls; a worker
//!   is one tenant's process, so what they reach is that tenant's.

mod allowed;

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, sock_filter,
};
use thiserror::Error;

pub use allowed::{allowed_prctl_options, allowed_syscalls};

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
    /// The capabilities could not be dropped.
    #[error("cannot drop the worker's capabilities: {0}")]
    Capabilities(#[source] std::io::Error),
}

/// Which system calls a worker may make beyond the deny list.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Policy {
    /// Only [`allowed_syscalls`] (and the deny list's argument rules on top).
    #[default]
    AllowList,
    /// Everything but [`denied_syscalls`].
    DenyList,
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
        ("pidfd_open", libc::SYS_pidfd_open),
        ("pidfd_send_signal", libc::SYS_pidfd_send_signal),
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
        ("fork", libc::SYS_fork),
        ("vfork", libc::SYS_vfork),
    ]);
    v
}

/// The filters a worker installs, in order: the deny list with its argument rules, `clone3`
/// answering `ENOSYS`, (x86-64) the x32 numbers refused, and under
/// [`Policy::AllowList`] the allow list. Built before they are installed, so that
/// installing allocates nothing (it may run between `fork` and `exec`).
#[derive(Debug)]
pub struct Filters(Vec<BpfProgram>);

/// The worker's filters for process `pid` (the only process it may signal).
pub fn filters(pid: u32, policy: Policy) -> Result<Filters, Error> {
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e: seccompiler::BackendError| Error::Build(e.to_string()))?;
    let build = |rules: BTreeMap<i64, Vec<SeccompRule>>, action| -> Result<BpfProgram, Error> {
        SeccompFilter::new(rules, SeccompAction::Allow, action, arch)
            .and_then(BpfProgram::try_from)
            .map_err(|e| Error::Build(e.to_string()))
    };
    let cond = |arg, len, op, v| {
        SeccompCondition::new(arg, len, op, v)
            .and_then(|c| SeccompRule::new(vec![c]))
            .map_err(|e| Error::Build(e.to_string()))
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = denied_syscalls()
        .into_iter()
        .map(|(_, nr)| (nr, Vec::new()))
        .collect();
    // A new process, not a thread.
    let thread = libc::CLONE_THREAD as u64;
    rules.insert(
        libc::SYS_clone,
        vec![cond(
            0,
            SeccompCmpArgLen::Qword,
            SeccompCmpOp::MaskedEq(thread),
            0,
        )?],
    );
    // Signals for anyone but this process: `kill`, `tgkill` and the queued forms name the
    // target process first; `tkill` names a thread of any process, so it is refused whole
    // (glibc signals its own threads with `tgkill`).
    let me = u64::from(pid);
    rules.insert(libc::SYS_tkill, Vec::new());
    for nr in [
        libc::SYS_kill,
        libc::SYS_tgkill,
        libc::SYS_rt_sigqueueinfo,
        libc::SYS_rt_tgsigqueueinfo,
    ] {
        rules.insert(
            nr,
            vec![cond(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, me)?],
        );
    }
    let mut v = vec![build(rules, SeccompAction::Errno(libc::EPERM as u32))?];
    // clone3's flags sit in a struct the filter cannot read: ENOSYS makes glibc use clone.
    v.push(build(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Errno(libc::ENOSYS as u32),
    )?);
    #[cfg(target_arch = "x86_64")]
    v.push(x32_filter());
    if policy == Policy::AllowList {
        // Installed last, so that among equal actions the kernel takes the earlier filters'
        // answers (clone3's ENOSYS) for the calls this one admits.
        let mut allow: BTreeMap<i64, Vec<SeccompRule>> = allowed_syscalls()
            .into_iter()
            .map(|(_, nr)| (nr, Vec::new()))
            .collect();
        let prctl = allowed_prctl_options()
            .into_iter()
            .map(|(_, option)| {
                cond(
                    0,
                    SeccompCmpArgLen::Dword,
                    SeccompCmpOp::Eq,
                    option as u32 as u64,
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        allow.insert(libc::SYS_prctl, prctl);
        v.push(
            SeccompFilter::new(
                allow,
                SeccompAction::Errno(libc::EPERM as u32),
                SeccompAction::Allow,
                arch,
            )
            .and_then(BpfProgram::try_from)
            .map_err(|e| Error::Build(e.to_string()))?,
        );
    }
    Ok(Filters(v))
}

/// x86-64's x32 ABI numbers system calls from `0x4000_0000` with the same audit
/// architecture, so the deny list's numbers would not catch them: refuse them all.
#[cfg(target_arch = "x86_64")]
fn x32_filter() -> BpfProgram {
    const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
    const RET_K: u16 = 0x06; // BPF_RET | BPF_K
    const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
    const ALLOW: u32 = 0x7fff_0000; // SECCOMP_RET_ALLOW
    const ERRNO: u32 = 0x0005_0000; // SECCOMP_RET_ERRNO
    let i = |code, jt, jf, k| sock_filter { code, jt, jf, k };
    vec![
        // seccomp_data: nr at 0, arch at 4.
        i(LD_W_ABS, 0, 0, 4),
        i(JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
        i(RET_K, 0, 0, ALLOW),
        i(LD_W_ABS, 0, 0, 0),
        i(JGE_K, 0, 1, 0x4000_0000),
        i(RET_K, 0, 0, ERRNO | libc::EPERM as u32),
        i(RET_K, 0, 0, ALLOW),
    ]
}

/// Installs `filters` on every thread of the process (and sets no-new-privileges).
pub fn install(filters: &Filters) -> Result<(), Error> {
    for f in &filters.0 {
        seccompiler::apply_filter_all_threads(f).map_err(Error::Install)?;
    }
    Ok(())
}

/// Drops every capability of the calling thread (and of the threads it starts later):
/// effective, permitted, inheritable, ambient and the bounding set (a no-op for a process
/// that has none). A worker calls it before it starts any thread.
pub fn drop_capabilities() -> Result<(), Error> {
    let err = |e: std::io::Error| Error::Capabilities(e);
    // The bounding set: what a later exec could regain (EINVAL past the last capability
    // this kernel knows).
    for cap in 0..64 {
        // SAFETY: prctl with integer arguments.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) } != 0 {
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINVAL) => break,
                // Without CAP_SETPCAP the set cannot shrink; nor can it hold anything.
                Some(libc::EPERM) => break,
                _ => return Err(err(e)),
            }
        }
    }
    // SAFETY: prctl with integer arguments.
    unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        )
    };
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522; // _LINUX_CAPABILITY_VERSION_3
    let mut header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let data = [Data::default(); 2];
    // SAFETY: capset reads a version-3 header and two data structs, both live here.
    if unsafe { libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) } != 0 {
        return Err(err(std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Enters the sandbox: not dumpable, no capabilities, then the filters. Irreversible.
pub fn enter(policy: Policy) -> Result<(), Error> {
    nix::sys::prctl::set_dumpable(false).map_err(Error::Dumpable)?;
    drop_capabilities()?;
    install(&filters(std::process::id(), policy)?)
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt;

    use super::*;

    #[test]
    fn the_filter_refuses_to_start_programs() {
        // (The signal rule names no process here: pid 0.)
        let f = filters(0, Policy::DenyList).unwrap();
        let mut cmd = std::process::Command::new("/bin/true");
        // SAFETY: between fork and exec the closure only calls prctl and seccomp on the
        // filters built above (no allocation).
        unsafe {
            cmd.pre_exec(move || install(&f).map_err(std::io::Error::other));
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

    /// Runs `scenario` of [`sandboxed_child`] in a fresh process of this test binary, in a
    /// sandbox of `policy`.
    fn in_sandboxed_child(scenario: &str, policy: Policy) {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "sandbox::tests::sandboxed_child", "--nocapture"])
            .args(["--test-threads", "1"])
            .env("VCUDA_SANDBOX_SCENARIO", scenario)
            .env("VCUDA_SANDBOX_POLICY", format!("{policy:?}"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && text.contains("scenario passed"),
            "{scenario}: {text}"
        );
    }

    /// Not a test of its own: the child side of [`in_sandboxed_child`].
    #[test]
    fn sandboxed_child() {
        let Ok(scenario) = std::env::var("VCUDA_SANDBOX_SCENARIO") else {
            return;
        };
        let policy = match std::env::var("VCUDA_SANDBOX_POLICY").as_deref() {
            Ok("DenyList") => Policy::DenyList,
            _ => Policy::AllowList,
        };
        enter(policy).unwrap();
        let errno = || std::io::Error::last_os_error().raw_os_error();
        match scenario.as_str() {
            "fork" => {
                // SAFETY: a raw fork whose child (if one were made) exits at once.
                let r = unsafe { libc::fork() };
                if r == 0 {
                    // SAFETY: ends the child.
                    unsafe { libc::_exit(0) }
                }
                assert!(r < 0 && errno() == Some(libc::EPERM), "fork: {r}");
                let e = std::process::Command::new("/bin/true").status();
                assert!(e.is_err(), "{e:?}");
            }
            "threads-and-signals" => {
                assert_eq!(std::thread::spawn(|| 7).join().unwrap(), 7);
                // SAFETY: signal 0 only checks permission.
                assert_eq!(unsafe { libc::kill(libc::getpid(), 0) }, 0);
                // SAFETY: as above, for the parent (the test process).
                assert!(unsafe { libc::kill(libc::getppid(), 0) } < 0);
                assert_eq!(errno(), Some(libc::EPERM));
                // The other ways to signal a process or one of its threads (signal 0 again:
                // had a call passed the filter, nothing would have been sent).
                // SAFETY: getppid has no preconditions.
                let parent = libc::c_long::from(unsafe { libc::getppid() });
                // SAFETY: raw system calls with a zeroed siginfo and signal 0.
                unsafe {
                    let mut info: libc::siginfo_t = std::mem::zeroed();
                    let p = &mut info as *mut libc::siginfo_t;
                    for r in [
                        libc::syscall(libc::SYS_tkill, parent, 0),
                        libc::syscall(libc::SYS_rt_sigqueueinfo, parent, 0, p),
                        libc::syscall(libc::SYS_rt_tgsigqueueinfo, parent, parent, 0, p),
                    ] {
                        assert!(r < 0, "a signal to another process passed");
                        assert_eq!(errno(), Some(libc::EPERM));
                    }
                }
                // Its own process still takes queued signals (signal 0 checks only).
                // SAFETY: getpid has no preconditions.
                let me = libc::c_long::from(unsafe { libc::getpid() });
                // SAFETY: as above.
                let r = unsafe {
                    let mut info: libc::siginfo_t = std::mem::zeroed();
                    info.si_code = libc::SI_QUEUE;
                    libc::syscall(libc::SYS_rt_sigqueueinfo, me, 0, &mut info as *mut _)
                };
                assert_eq!(r, 0, "errno {:?}", errno());
            }
            "privileges" => {
                // (Capabilities belong to threads: this one dropped them.)
                let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
                assert!(status.contains("CapEff:\t0000000000000000"), "{status}");
                assert!(status.contains("CapBnd:\t0000000000000000"), "{status}");
                assert!(status.contains("NoNewPrivs:\t1"), "{status}");
                assert!(!nix::sys::prctl::get_dumpable().unwrap());
            }
            "outside-the-allow-list" => {
                // Everyday work still runs: threads, files, sockets, memory.
                assert_eq!(std::thread::spawn(|| 7).join().unwrap(), 7);
                let text = std::fs::read_to_string("/proc/self/status").unwrap();
                assert!(text.contains("Seccomp:\t2"), "{text}");
                let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
                drop((a, b));
                let v = vec![1u8; 1 << 20];
                assert_eq!(v.iter().map(|&x| usize::from(x)).sum::<usize>(), 1 << 20);
                // Calls outside it are refused, harmless ones included.
                // SAFETY: raw system calls with valid (or null) pointers; had one passed, a
                // directory "." would have been changed to, nothing more.
                unsafe {
                    let dot = c".".as_ptr();
                    for r in [
                        libc::syscall(libc::SYS_chdir, dot),
                        libc::syscall(libc::SYS_mkdirat, libc::AT_FDCWD, dot, 0o700),
                        libc::syscall(libc::SYS_bind, -1, std::ptr::null::<u8>(), 0),
                        libc::syscall(libc::SYS_setuid, 0),
                    ] {
                        assert!(r < 0, "a call outside the allow list passed");
                        assert_eq!(errno(), Some(libc::EPERM));
                    }
                }
                // prctl only for its listed options: not dumpable again.
                assert!(nix::sys::prctl::set_dumpable(true).is_err());
                assert!(!nix::sys::prctl::get_dumpable().unwrap());
                nix::sys::prctl::set_name(c"vcuda-test").unwrap();
            }
            other => panic!("unknown scenario {other}"),
        }
        println!("scenario passed");
    }

    #[test]
    fn new_processes_and_signals_to_others_are_refused_threads_are_not() {
        for policy in [Policy::DenyList, Policy::AllowList] {
            in_sandboxed_child("fork", policy);
            in_sandboxed_child("threads-and-signals", policy);
            in_sandboxed_child("privileges", policy);
        }
    }

    #[test]
    fn the_allow_list_refuses_what_it_does_not_name() {
        in_sandboxed_child("outside-the-allow-list", Policy::AllowList);
    }

    #[test]
    fn the_allow_list_and_the_deny_list_are_disjoint_real_numbers() {
        let allowed = allowed_syscalls();
        let mut nrs: Vec<_> = allowed.iter().map(|&(_, n)| n).collect();
        nrs.sort_unstable();
        nrs.dedup();
        assert_eq!(nrs.len(), allowed.len(), "a call listed twice");
        let denied: Vec<_> = denied_syscalls().into_iter().map(|(_, n)| n).collect();
        for (name, nr) in &allowed {
            assert!(*nr >= 0, "{name}");
            assert!(!denied.contains(nr), "{name} is allowed and denied");
        }
        // Each filter builds for this architecture.
        for policy in [Policy::DenyList, Policy::AllowList] {
            filters(0, policy).unwrap();
        }
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
