// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The system calls a worker may make under [`super::Policy::AllowList`].
//!
//! Traced from real workers (`tests/gpu/syscalls.sh` under `strace -f`, read by
//! `scripts/syscall-sets.py`): the CPU executor's, over the socket transport, with the call
//! ring, JIT-compiled kernels, textures and graphs (2026-11-29). NVIDIA's driver's calls
//! have not been traced yet (no GPU since the tracing was built), which is why CUDA workers
//! do not use this list by default; the families it is known to use (device files opened,
//! ioctls, mappings, threads, a socket to nvidia-persistenced) are here, unverified. A few
//! calls of the same families that the traces did not show but a C library update
//! plausibly makes (the `*at` and vectored forms, time queries) are admitted too; nothing
//! that reaches another process, the file system's structure or the machine is.
//!
//! Calls here may still be refused by the deny list's argument rules (`clone` of a process,
//! signals to another process), which the kernel applies as well.

/// System calls admitted without conditions.
pub fn allowed_syscalls() -> Vec<(&'static str, i64)> {
    let mut v = vec![
        // Memory (the driver maps its device files; the JIT maps code).
        ("brk", libc::SYS_brk),
        ("mmap", libc::SYS_mmap),
        ("munmap", libc::SYS_munmap),
        ("mprotect", libc::SYS_mprotect),
        ("mremap", libc::SYS_mremap),
        ("madvise", libc::SYS_madvise),
        ("mincore", libc::SYS_mincore),
        ("msync", libc::SYS_msync),
        ("mlock", libc::SYS_mlock),
        ("munlock", libc::SYS_munlock),
        ("get_mempolicy", libc::SYS_get_mempolicy),
        ("set_mempolicy", libc::SYS_set_mempolicy),
        ("mbind", libc::SYS_mbind),
        ("membarrier", libc::SYS_membarrier),
        ("memfd_create", libc::SYS_memfd_create),
        // Descriptors: files the driver and the C library open (device files, /proc,
        // /sys, libraries), and what was handed over.
        ("openat", libc::SYS_openat),
        ("close", libc::SYS_close),
        ("read", libc::SYS_read),
        ("write", libc::SYS_write),
        ("readv", libc::SYS_readv),
        ("writev", libc::SYS_writev),
        ("pread64", libc::SYS_pread64),
        ("pwrite64", libc::SYS_pwrite64),
        ("lseek", libc::SYS_lseek),
        ("fstat", libc::SYS_fstat),
        ("newfstatat", libc::SYS_newfstatat),
        ("statx", libc::SYS_statx),
        ("fstatfs", libc::SYS_fstatfs),
        ("statfs", libc::SYS_statfs),
        ("readlinkat", libc::SYS_readlinkat),
        ("getdents64", libc::SYS_getdents64),
        ("faccessat", libc::SYS_faccessat),
        ("faccessat2", libc::SYS_faccessat2),
        ("fcntl", libc::SYS_fcntl),
        ("ioctl", libc::SYS_ioctl),
        ("dup", libc::SYS_dup),
        ("dup3", libc::SYS_dup3),
        ("ftruncate", libc::SYS_ftruncate),
        ("fallocate", libc::SYS_fallocate),
        ("flock", libc::SYS_flock),
        ("getcwd", libc::SYS_getcwd),
        ("pipe2", libc::SYS_pipe2),
        ("eventfd2", libc::SYS_eventfd2),
        // Sockets the worker was handed (a vhost-user worker accepts its one VM on the
        // listening socket it was given), and the driver's to its daemons
        // (nvidia-persistenced, MPS).
        ("accept4", libc::SYS_accept4),
        ("socket", libc::SYS_socket),
        ("socketpair", libc::SYS_socketpair),
        ("connect", libc::SYS_connect),
        ("sendto", libc::SYS_sendto),
        ("recvfrom", libc::SYS_recvfrom),
        ("sendmsg", libc::SYS_sendmsg),
        ("recvmsg", libc::SYS_recvmsg),
        ("shutdown", libc::SYS_shutdown),
        ("getsockname", libc::SYS_getsockname),
        ("getpeername", libc::SYS_getpeername),
        ("getsockopt", libc::SYS_getsockopt),
        ("setsockopt", libc::SYS_setsockopt),
        // Waiting.
        ("ppoll", libc::SYS_ppoll),
        ("pselect6", libc::SYS_pselect6),
        ("epoll_create1", libc::SYS_epoll_create1),
        ("epoll_ctl", libc::SYS_epoll_ctl),
        ("epoll_pwait", libc::SYS_epoll_pwait),
        ("epoll_pwait2", libc::SYS_epoll_pwait2),
        ("futex", libc::SYS_futex),
        ("nanosleep", libc::SYS_nanosleep),
        ("clock_nanosleep", libc::SYS_clock_nanosleep),
        ("sched_yield", libc::SYS_sched_yield),
        ("timerfd_create", libc::SYS_timerfd_create),
        ("timerfd_settime", libc::SYS_timerfd_settime),
        ("timerfd_gettime", libc::SYS_timerfd_gettime),
        // Threads (the deny list's rule keeps `clone` to threads; `clone3` answers ENOSYS
        // from its own filter, which must be reached).
        ("clone", libc::SYS_clone),
        ("clone3", libc::SYS_clone3),
        ("exit", libc::SYS_exit),
        ("exit_group", libc::SYS_exit_group),
        ("set_robust_list", libc::SYS_set_robust_list),
        ("get_robust_list", libc::SYS_get_robust_list),
        ("rseq", libc::SYS_rseq),
        ("set_tid_address", libc::SYS_set_tid_address),
        ("sched_getaffinity", libc::SYS_sched_getaffinity),
        ("sched_setaffinity", libc::SYS_sched_setaffinity),
        ("sched_getparam", libc::SYS_sched_getparam),
        ("sched_getscheduler", libc::SYS_sched_getscheduler),
        ("getpriority", libc::SYS_getpriority),
        // Signals (to itself: the deny list's rules) and their handlers.
        ("rt_sigaction", libc::SYS_rt_sigaction),
        ("rt_sigprocmask", libc::SYS_rt_sigprocmask),
        ("rt_sigreturn", libc::SYS_rt_sigreturn),
        ("rt_sigtimedwait", libc::SYS_rt_sigtimedwait),
        ("sigaltstack", libc::SYS_sigaltstack),
        ("restart_syscall", libc::SYS_restart_syscall),
        ("kill", libc::SYS_kill),
        ("tgkill", libc::SYS_tgkill),
        ("rt_sigqueueinfo", libc::SYS_rt_sigqueueinfo),
        ("rt_tgsigqueueinfo", libc::SYS_rt_tgsigqueueinfo),
        // Who and when.
        ("getpid", libc::SYS_getpid),
        ("gettid", libc::SYS_gettid),
        ("getppid", libc::SYS_getppid),
        ("getuid", libc::SYS_getuid),
        ("geteuid", libc::SYS_geteuid),
        ("getgid", libc::SYS_getgid),
        ("getegid", libc::SYS_getegid),
        ("getresuid", libc::SYS_getresuid),
        ("getresgid", libc::SYS_getresgid),
        ("getgroups", libc::SYS_getgroups),
        ("capget", libc::SYS_capget),
        ("uname", libc::SYS_uname),
        ("sysinfo", libc::SYS_sysinfo),
        ("getrlimit", libc::SYS_getrlimit),
        ("prlimit64", libc::SYS_prlimit64),
        ("getrusage", libc::SYS_getrusage),
        ("times", libc::SYS_times),
        ("clock_gettime", libc::SYS_clock_gettime),
        ("clock_getres", libc::SYS_clock_getres),
        ("gettimeofday", libc::SYS_gettimeofday),
        ("getrandom", libc::SYS_getrandom),
        // More filters (only ever stricter).
        ("seccomp", libc::SYS_seccomp),
    ];
    #[cfg(target_arch = "x86_64")]
    v.extend([
        ("open", libc::SYS_open),
        ("stat", libc::SYS_stat),
        ("lstat", libc::SYS_lstat),
        ("access", libc::SYS_access),
        ("readlink", libc::SYS_readlink),
        ("dup2", libc::SYS_dup2),
        ("pipe", libc::SYS_pipe),
        ("poll", libc::SYS_poll),
        ("select", libc::SYS_select),
        ("epoll_wait", libc::SYS_epoll_wait),
        ("eventfd", libc::SYS_eventfd),
        ("time", libc::SYS_time),
        ("arch_prctl", libc::SYS_arch_prctl),
    ]);
    v
}

/// `prctl` options admitted (its first argument): naming threads, reading its own state,
/// and the calls that only restrict further. Not `PR_SET_DUMPABLE` (which would let other
/// processes attach again), nor `PR_SET_PDEATHSIG`, `PR_SET_PTRACER` and the like.
pub fn allowed_prctl_options() -> Vec<(&'static str, i32)> {
    vec![
        ("PR_SET_NAME", libc::PR_SET_NAME),
        ("PR_GET_NAME", libc::PR_GET_NAME),
        ("PR_GET_DUMPABLE", libc::PR_GET_DUMPABLE),
        ("PR_SET_NO_NEW_PRIVS", libc::PR_SET_NO_NEW_PRIVS),
        ("PR_GET_NO_NEW_PRIVS", libc::PR_GET_NO_NEW_PRIVS),
        ("PR_GET_SECCOMP", libc::PR_GET_SECCOMP),
        ("PR_SET_SECCOMP", libc::PR_SET_SECCOMP),
        ("PR_CAPBSET_READ", libc::PR_CAPBSET_READ),
        ("PR_GET_TIMERSLACK", libc::PR_GET_TIMERSLACK),
        ("PR_SET_VMA", libc::PR_SET_VMA),
    ]
}
