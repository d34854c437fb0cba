// SPDX-License-Identifier: Apache-2.0 OR MIT
// vcuda-vm-test: expect=module-abuse: PASS
// vcuda-vm-test: vm=--check-unload
// Kernel-module tests, run inside the guest (tests/vm/run.sh): bad ioctl input on /dev/vcuda
// (huge, overlapping and unmapped segments, too many segments, bad flags and lengths),
// concurrent raw calls, processes killed in the middle of a large copy and of a stream
// synchronize, a non-fatal signal during a call, process exit with calls in flight, bad and
// racing VCUDA_IOC_SHARE/UNSHARE calls and regions left shared at close; then the
// module must still work, every pinned page must be unpinned (/proc/vmstat), and the runner
// unloads the module (vcuda vm run --check-unload).
//
// The raw ioctls use their own /dev/vcuda file (their own device session); the CUDA calls go
// through libvcuda.so as in any program.
#include <cuda_runtime.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <vector>

#include "vm_test.h"

static vcuda_info info;
static const size_t PAGE = 4096;

// A one-request message: Nop (wire.rs / op.rs), well formed (protocol version 2). Its reply
// has one record for seq 1.
struct nop_msg {
    uint32_t magic;
    uint16_t version, flags;
    uint32_t n_requests, ctrl_len;
    uint64_t out_len, in_len;
    uint32_t rmagic;
    uint16_t rversion, rflags;
    uint32_t opcode, payload_len;
    uint64_t seq;
    uint32_t n_segments, reserved;
};
static_assert(sizeof(nop_msg) == 64, "nop_msg");

static nop_msg make_nop() {
    nop_msg m;
    memset(&m, 0, sizeof m);
    memcpy(&m.magic, "VCUM", 4);
    m.version = 2;  // PROTOCOL_VERSION
    m.n_requests = 1;
    m.ctrl_len = 32;
    memcpy(&m.rmagic, "VCUQ", 4);
    m.rversion = 2;
    m.opcode = 2;  // Nop
    m.seq = 1;
    return m;
}

// VcudaSubmit::flags: return once the chain is queued (ABI 3).
static const uint64_t SUBMIT_DETACHED = 1;

// Submits `m` with `segs`; returns 0 or -errno. `reply_len` gets the reply length.
static int submit(int fd, const void *msg, uint32_t len, vcuda_seg *segs, uint32_t n,
                  uint32_t *reply_len = nullptr, void *reply = nullptr, uint32_t cap = 65536,
                  uint64_t flags = 0) {
    static thread_local std::vector<uint8_t> buf(65536);
    vcuda_submit s;
    memset(&s, 0, sizeof s);
    s.ctrl_addr = (uintptr_t)msg;
    s.ctrl_len = len;
    s.reply_cap = cap;
    s.reply_addr = reply ? (uintptr_t)reply : (uintptr_t)buf.data();
    s.segs_addr = (uintptr_t)segs;
    s.n_segs = n;
    s.flags = flags;
    int r = ioctl(fd, VCUDA_IOC_SUBMIT, &s);
    if (r < 0) return -errno;
    if (reply_len) *reply_len = s.reply_len;
    if (!reply && s.reply_len >= 4 && memcmp(buf.data(), "VCUR", 4) != 0) return -1000;
    return 0;
}

static int open_dev() {
    int fd = open("/dev/vcuda", O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        perror("open /dev/vcuda");
        exit(2);
    }
    return fd;
}

static void test_info(int fd) {
    CHECK(ioctl(fd, VCUDA_IOC_INFO, &info) == 0, "VCUDA_IOC_INFO: %s", strerror(errno));
    CHECK(memcmp(&info.config.magic, "VCUD", 4) == 0, "config magic");
    CHECK(info.abi_version == 3, "abi_version %u", info.abi_version);
    CHECK(info.config.features & 1, "device offers detached submits (features %#x)",
          info.config.features);
    CHECK(info.max_segs == 256, "max_segs %u", info.max_segs);
    CHECK(info.session != 0, "session id 0");
    CHECK(info.config.max_data_len > 0 && info.config.max_ctrl_len >= 4096, "limits");
    printf("info: %u queues, %u descriptors, ctrl %u, data %llu, session %llu\n",
           info.config.num_request_queues, info.config.max_chain_descriptors,
           info.config.max_ctrl_len, (unsigned long long)info.config.max_data_len,
           (unsigned long long)info.session);
    int fd2 = open_dev();
    vcuda_info i2;
    CHECK(ioctl(fd2, VCUDA_IOC_INFO, &i2) == 0 && i2.session != info.session,
          "second open has its own session");
    close(fd2);
}

static void test_bad_input(int fd) {
    nop_msg m = make_nop();
    uint32_t rl = 0;
    CHECK(submit(fd, &m, sizeof m, nullptr, 0, &rl) == 0 && rl >= 64, "nop: reply %u", rl);

    CHECK(ioctl(fd, _IO('V', 99)) < 0 && errno == ENOTTY, "unknown ioctl: %d", errno);
    CHECK(ioctl(fd, VCUDA_IOC_SUBMIT, (void *)8) < 0 && errno == EFAULT, "bad arg pointer");
    CHECK(submit(fd, &m, sizeof m, nullptr, 0, nullptr, nullptr, 65536, 2) == -EINVAL,
          "flags");
    CHECK(submit(fd, &m, 0, nullptr, 0) == -EINVAL, "empty message");
    CHECK(submit(fd, &m, sizeof m, nullptr, 0, nullptr, nullptr, 100) == -EINVAL,
          "small reply buffer");
    std::vector<uint8_t> big(info.config.max_ctrl_len + 1);
    CHECK(submit(fd, big.data(), big.size(), nullptr, 0) == -E2BIG, "message too long");

    // Unmapped memory.
    void *gone = mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(gone, 1 << 20);
    CHECK(submit(fd, gone, sizeof m, nullptr, 0) == -EFAULT, "unmapped message");
    vcuda_seg s1 = {(uintptr_t)gone, 8192, SEG_OUT, 0};
    CHECK(submit(fd, &m, sizeof m, &s1, 1) == -EFAULT, "unmapped out segment");
    s1.dir = SEG_IN;
    CHECK(submit(fd, &m, sizeof m, &s1, 1) == -EFAULT, "unmapped in segment");
    CHECK(submit(fd, &m, sizeof m, (vcuda_seg *)gone, 1) == -EFAULT, "unmapped segment table");
    vcuda_seg kseg = {0xffff888000000000ull, 4096, SEG_OUT, 0};
    CHECK(submit(fd, &m, sizeof m, &kseg, 1) == -EFAULT, "kernel address");
    vcuda_seg nseg = {0, 4096, SEG_IN, 0};
    CHECK(submit(fd, &m, sizeof m, &nseg, 1) == -EFAULT, "null address");
    CHECK(submit(fd, &m, sizeof m, nullptr, 0, nullptr, gone) == -EFAULT, "unmapped reply");

    // A read-only mapping can be read (out) but not written (in).
    void *ro = mmap(nullptr, 16384, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    vcuda_seg rs = {(uintptr_t)ro, 16384, SEG_OUT, 0};
    CHECK(submit(fd, &m, sizeof m, &rs, 1) == 0, "read-only out segment");
    rs.dir = SEG_IN;
    CHECK(submit(fd, &m, sizeof m, &rs, 1) == -EFAULT, "read-only in segment");
    munmap(ro, 16384);

    // Bad segment fields and sizes.
    std::vector<uint8_t> buf(1 << 20, 1);
    vcuda_seg bs = {(uintptr_t)buf.data(), 4096, 3, 0};
    CHECK(submit(fd, &m, sizeof m, &bs, 1) == -EINVAL, "bad direction");
    bs.dir = SEG_OUT;
    bs.flags = 1;
    CHECK(submit(fd, &m, sizeof m, &bs, 1) == -EINVAL, "segment flags");
    vcuda_seg wrap = {~0ull - 100, 4096, SEG_OUT, 0};
    CHECK(submit(fd, &m, sizeof m, &wrap, 1) == -EINVAL, "address overflow");
    vcuda_seg huge = {(uintptr_t)buf.data(), info.config.max_data_len + 1, SEG_OUT, 0};
    CHECK(submit(fd, &m, sizeof m, &huge, 1) == -E2BIG, "huge segment");
    huge.len = 1ull << 62;
    huge.dir = SEG_IN;
    CHECK(submit(fd, &m, sizeof m, &huge, 1) == -E2BIG, "enormous segment");
    vcuda_seg two[2] = {{(uintptr_t)buf.data(), info.config.max_data_len / 2 + 1, SEG_OUT, 0},
                        {(uintptr_t)buf.data(), info.config.max_data_len / 2 + 1, SEG_OUT, 0}};
    CHECK(submit(fd, &m, sizeof m, two, 2) == -E2BIG, "segments over max_data_len together");
    std::vector<vcuda_seg> many(info.max_segs + 1, vcuda_seg{(uintptr_t)buf.data(), 16, SEG_OUT, 0});
    CHECK(submit(fd, &m, sizeof m, many.data(), many.size()) == -E2BIG, "too many segments");
    CHECK(submit(fd, &m, sizeof m, many.data(), info.max_segs) == 0, "max segments");

    // Overlapping segments, out and in over the same pages, zero-length, unaligned.
    vcuda_seg ov[] = {
        {(uintptr_t)buf.data(), 65536, SEG_OUT, 0},
        {(uintptr_t)buf.data() + 4096, 16384, SEG_IN, 0},
        {(uintptr_t)buf.data(), 65536, SEG_OUT, 0},
        {(uintptr_t)buf.data() + 8191, 3, SEG_IN, 0},
        {(uintptr_t)buf.data() + 100, 0, SEG_IN, 0},
        {(uintptr_t)buf.data() + 1, 200000, SEG_IN, 0},
    };
    CHECK(submit(fd, &m, sizeof m, ov, sizeof ov / sizeof ov[0]) == 0, "overlapping segments");
    std::vector<vcuda_seg> same(info.max_segs, vcuda_seg{(uintptr_t)buf.data() + 10, 100, SEG_IN, 0});
    CHECK(submit(fd, &m, sizeof m, same.data(), same.size()) == 0, "one page pinned 256 times");

    // Scattered pages: every other page of a buffer (no merging).
    std::vector<vcuda_seg> sc;
    for (uint32_t i = 0; i < 100; i++)
        sc.push_back(vcuda_seg{(uintptr_t)buf.data() + 2 * i * 4096 + 4096 - ((uintptr_t)buf.data() % 4096), 4096, SEG_IN, 0});
    CHECK(submit(fd, &m, sizeof m, sc.data(), sc.size()) == 0, "scattered pages");

    // A large buffer: its pages fit the device's descriptor limit, or (scattered) the module
    // copies through kernel chunks.
    size_t large = 32u << 20;
    if (large > info.config.max_data_len) large = info.config.max_data_len;
    uint8_t *lb = (uint8_t *)mmap(nullptr, large, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    for (size_t i = 0; i < large; i++) lb[i] = (uint8_t)(i * 7 + (i >> 12));
    vcuda_seg ls = {(uintptr_t)lb + 3, large - 3, SEG_IN, 0};
    int r = submit(fd, &m, sizeof m, &ls, 1);
    CHECK(r == 0, "large in segment: %d", r);
    // The device wrote nothing (Nop): every byte is as it was, pinned or bounced.
    size_t bad = 0;
    for (size_t i = 0; i < large; i++) bad += lb[i] != (uint8_t)(i * 7 + (i >> 12));
    CHECK(bad == 0, "large in segment: %zu bytes changed", bad);
    ls.dir = SEG_OUT;
    CHECK(submit(fd, &m, sizeof m, &ls, 1) == 0, "large out segment");
    munmap(lb, large);
    CHECK(submit(fd, &m, sizeof m, nullptr, 0) == 0, "nop after bad input");
}

struct burst_arg {
    int fd;
    int n;
    int errors;
};

static void *burst(void *p) {
    burst_arg *a = (burst_arg *)p;
    nop_msg m = make_nop();
    std::vector<uint8_t> buf(3 * 4096 + 17);
    for (int i = 0; i < a->n; i++) {
        vcuda_seg s[2] = {{(uintptr_t)buf.data(), buf.size(), SEG_OUT, 0},
                          {(uintptr_t)buf.data() + 5, 4000, SEG_IN, 0}};
        if (submit(a->fd, &m, sizeof m, s, i % 3) != 0) a->errors++;
    }
    return nullptr;
}

// Many threads, shared and private files; more calls than a ring holds descriptors (leaked
// descriptors would stall this).
static void test_concurrency(int fd) {
    const int T = 8;
    pthread_t th[T];
    burst_arg args[T];
    for (int i = 0; i < T; i++) {
        args[i] = {i % 2 ? fd : open_dev(), 400, 0};
        pthread_create(&th[i], nullptr, burst, &args[i]);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], nullptr);
        CHECK(args[i].errors == 0, "thread %d: %d failed calls", i, args[i].errors);
        if (i % 2 == 0) close(args[i].fd);
    }
    // Sessions are closed: more open/call/close cycles than the backend allows sessions at
    // once (256) all work.
    nop_msg m = make_nop();
    for (int i = 0; i < 300; i++) {
        int f = open("/dev/vcuda", O_RDWR);
        CHECK(f >= 0, "open %d: %s", i, strerror(errno));
        if (f < 0) break;
        CHECK(submit(f, &m, sizeof m, nullptr, 0) == 0, "call on file %d", i);
        close(f);
    }
    // More sessions at once than the backend allows: the calls of the extra ones fail with
    // EMFILE (the device refused the session), the others work.
    std::vector<int> fds;
    for (int i = 0; i < 300; i++) fds.push_back(open("/dev/vcuda", O_RDWR));
    int ok = 0, emfile = 0, other = 0;
    for (int f : fds) {
        int r = f < 0 ? -errno : submit(f, &m, sizeof m, nullptr, 0);
        if (r == 0) ok++;
        else if (r == -EMFILE) emfile++;
        else other++;
    }
    printf("300 sessions at once: %d ok, %d EMFILE, %d other\n", ok, emfile, other);
    CHECK(ok >= 200 && emfile > 0 && other == 0, "session limit: %d ok, %d EMFILE, %d other", ok,
          emfile, other);
    for (int f : fds)
        if (f >= 0) close(f);
    int f = open("/dev/vcuda", O_RDWR);
    CHECK(f >= 0 && submit(f, &m, sizeof m, nullptr, 0) == 0, "call after the session limit");
    close(f);
}

// Iterations of `spin` that take about `seconds` on this backend.
static unsigned long long calibrate(double seconds) {
    unsigned long long r = (unsigned long long)(spin_per_second() * seconds);
    return r < 1000 ? 1000 : r;
}

static bool data_round_trip(size_t bytes, unsigned seed) {
    std::vector<uint32_t> h(bytes / 4), back(bytes / 4);
    for (size_t i = 0; i < h.size(); i++) h[i] = (uint32_t)(i * 2654435761u + seed);
    void *d = nullptr;
    if (cudaMalloc(&d, bytes) != cudaSuccess) return false;
    bool ok = cudaMemcpy(d, h.data(), bytes, cudaMemcpyHostToDevice) == cudaSuccess &&
              cudaMemcpy(back.data(), d, bytes, cudaMemcpyDeviceToHost) == cudaSuccess &&
              back == h;
    cudaFree(d);
    return ok;
}

// Forks a child running `body`, kills it after `delay` seconds, reaps it.
template <typename F>
static void kill_child_after(const char *what, double delay, F body) {
    fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
        body();
        _exit(0);
    }
    usleep((useconds_t)(delay * 1e6));
    kill(pid, SIGKILL);
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "%s: child was not killed (status %#x)",
          what, st);
}

// VCUDA_IOC_SHARE of [addr, addr + len): 0 and the handle, or -errno.
static int share(int fd, const void *addr, uint64_t len, uint64_t *handle = nullptr) {
    vcuda_share s = {(uintptr_t)addr, len, 0};
    if (ioctl(fd, VCUDA_IOC_SHARE, &s) < 0) return -errno;
    if (handle) *handle = s.handle;
    return 0;
}

static int unshare(int fd, uint64_t handle) {
    return ioctl(fd, VCUDA_IOC_UNSHARE, &handle) < 0 ? -errno : 0;
}

// Page-locked memory shared with the device in place (VCUDA_IOC_SHARE/UNSHARE): bad input,
// sharing and unsharing, a region left shared at close and in a killed process, two
// threads unsharing one region.
static void test_share(int fd) {
    size_t len = 1 << 20;
    uint8_t *buf = (uint8_t *)mmap(nullptr, len, PROT_READ | PROT_WRITE,
                                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    CHECK(share(fd, buf + 1, 4096) == -EINVAL, "unaligned address");
    CHECK(share(fd, buf, 100) == -EINVAL, "length not whole pages");
    CHECK(share(fd, buf, 0) == -EINVAL, "empty");
    CHECK(share(fd, (void *)(~0ull - 4095), 8192) == -EINVAL, "address overflow");
    CHECK(share(fd, buf, 1ull << 41) == -E2BIG || share(fd, buf, 1ull << 41) == -EFAULT,
          "huge length");
    CHECK(ioctl(fd, VCUDA_IOC_SHARE, (void *)8) < 0 && errno == EFAULT, "bad arg pointer");
    void *gone = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(gone, len);
    CHECK(share(fd, gone, 8192) == -EFAULT, "unmapped memory");
    void *ro = mmap(nullptr, 16384, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(share(fd, ro, 16384) == -EFAULT, "read-only memory");
    munmap(ro, 16384);
    CHECK(share(fd, (void *)0xffff888000000000ull, 4096) == -EFAULT, "kernel address");
    CHECK(unshare(fd, 0) == -EINVAL, "unshare of handle 0");
    CHECK(unshare(fd, 12345) == -EINVAL, "unshare of an unknown handle");
    CHECK(ioctl(fd, VCUDA_IOC_UNSHARE, (void *)8) < 0 && errno == EFAULT, "bad unshare pointer");

    // Share, a call meanwhile, unshare; a second unshare is refused.
    uint64_t h = 0, h2 = 0;
    CHECK(share(fd, buf, len, &h) == 0 && h != 0, "share 1 MiB: handle %llu",
          (unsigned long long)h);
    CHECK(share(fd, buf, 8192, &h2) == 0 && h2 != 0 && h2 != h, "the same pages twice");
    nop_msg m = make_nop();
    CHECK(submit(fd, &m, sizeof m, nullptr, 0) == 0, "a call with regions shared");
    CHECK(unshare(fd, h) == 0, "unshare");
    CHECK(unshare(fd, h) == -EINVAL, "second unshare");
    CHECK(unshare(fd, h2) == 0, "unshare of the second region");

    // A large, scattered region: 32 MiB of fresh pages.
    size_t big = 32u << 20;
    uint8_t *b = (uint8_t *)mmap(nullptr, big, PROT_READ | PROT_WRITE,
                                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    int r = share(fd, b, big, &h);
    CHECK(r == 0 || r == -ENOMEM, "share 32 MiB: %d", r);
    if (r == 0) CHECK(unshare(fd, h) == 0, "unshare 32 MiB");
    munmap(b, big);

    // Two threads unshare one region: one succeeds, the other is refused.
    CHECK(share(fd, buf, len, &h) == 0, "share for the race");
    struct Race {
        int fd;
        uint64_t h;
        int r;
    } race[2] = {{fd, h, 1}, {fd, h, 1}};
    pthread_t th[2];
    for (auto &x : race)
        pthread_create(&th[&x - race], nullptr, [](void *p) -> void * {
            Race *x = (Race *)p;
            x->r = unshare(x->fd, x->h);
            return nullptr;
        }, &x);
    for (auto t : th) pthread_join(t, nullptr);
    CHECK((race[0].r == 0) != (race[1].r == 0) && race[0].r + race[1].r == -EINVAL,
          "racing unshares: %d, %d", race[0].r, race[1].r);

    // Left shared: a file closed with a region (its pages are released with the session,
    // checked by the pin count at the end), and a process killed while sharing.
    int fd2 = open_dev();
    CHECK(share(fd2, buf, len, &h) == 0, "share on a second file");
    close(fd2);
    munmap(buf, len);
    kill_child_after("share", 0.3, [] {
        int f = open_dev();
        size_t n = 4u << 20;
        void *p = mmap(nullptr, n, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        for (;;) {
            uint64_t h = 0;
            if (share(f, p, n, &h) == 0) unshare(f, h);
            share(f, p, 4096, &h);
        }
    });
}

static volatile sig_atomic_t usr1_seen;
static void on_usr1(int) { usr1_seen++; }

// The CUDA work of a child process (`module_abuse --child MODE SPIN`). A child forked from a
// process that already uses CUDA must not use it (CUDA, and vcuda, answer every call there
// with an initialization error), so these children are this program started afresh.
static int child_main(const char *mode, unsigned long long spin_1s) {
    if (strcmp(mode, "copy") == 0) {
        for (;;) data_round_trip(16u << 20, 7);
    }
    if (strcmp(mode, "synchronize") == 0) {
        float *d;
        cudaMalloc(&d, 4);
        spin<<<1, 32>>>(spin_1s * 3, d);
        cudaDeviceSynchronize();
        fprintf(stderr, "the synchronize returned before the kill\n");
        return 0;
    }
    if (strcmp(mode, "exit") == 0) {
        pthread_t th[4];
        for (int i = 0; i < 4; i++)
            pthread_create(&th[i], nullptr, [](void *) -> void * {
                for (;;) data_round_trip(4u << 20, 3);
                return nullptr;
            }, nullptr);
        usleep(600000);
        _exit(0);
    }
    if (strcmp(mode, "usr1") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_usr1;  // no SA_RESTART: an interruptible wait would fail
        sigaction(SIGUSR1, &sa, nullptr);
        float *d;
        if (cudaMalloc(&d, 4) != cudaSuccess) _exit(3);
        spin<<<1, 32>>>(spin_1s * 2, d);
        cudaError_t e = cudaDeviceSynchronize();
        bool ok = e == cudaSuccess && data_round_trip(1 << 20, 9);
        fprintf(stderr, "usr1: %d signals, synchronize: %s\n", (int)usr1_seen,
                cudaGetErrorString(e));
        _exit(ok && usr1_seen > 0 ? 0 : 4);
    }
    return 2;
}

// Starts `module_abuse --child MODE SPIN` (see child_main).
static pid_t spawn_child(const char *mode, unsigned long long spin_1s) {
    char spin_arg[32];
    snprintf(spin_arg, sizeof spin_arg, "%llu", spin_1s);
    fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", "module_abuse", "--child", mode, spin_arg, (char *)nullptr);
        _exit(127);
    }
    return pid;
}

// Starts child MODE, kills it after `delay` seconds, reaps it.
static void kill_spawned_after(const char *mode, double delay, unsigned long long spin_1s) {
    pid_t pid = spawn_child(mode, spin_1s);
    usleep((useconds_t)(delay * 1e6));
    kill(pid, SIGKILL);
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "%s: child was not killed (status %#x)",
          mode, st);
}

static void test_signals(unsigned long long spin_1s) {
    // SIGKILL while large copies are in flight.
    for (double delay : {0.3, 0.7, 1.1}) kill_spawned_after("copy", delay, spin_1s);
    // SIGKILL during a synchronize on a long kernel.
    kill_spawned_after("synchronize", 0.5, spin_1s);
    // Process exit (exit_group kills the other threads) with calls in flight.
    pid_t pid = spawn_child("exit", spin_1s);
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit with calls in flight: status %#x", st);

    // A handled signal does not interrupt a call: the synchronize completes normally.
    pid = spawn_child("usr1", spin_1s);
    for (int i = 0; i < 10; i++) {
        usleep(150000);
        kill(pid, SIGUSR1);
    }
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "handled signal during a call: status %#x", st);
}

// Reads the u32 at `off` of a reply.
static uint32_t word(const uint8_t *r, size_t off) {
    uint32_t v;
    memcpy(&v, r + off, 4);
    return v;
}

// Detached submits (VCUDA_SUBMIT_DETACHED): no in segments, unknown flags refused; the call
// runs, and what its reply would hold comes at the front of the next waiting submit's reply,
// in order; more detached chains than the module keeps in flight still all run.
static void test_detached(int fd) {
    nop_msg m = make_nop();
    std::vector<uint8_t> reply(65536);
    uint32_t rl = 99;
    CHECK(submit(fd, &m, sizeof m, nullptr, 0, &rl, reply.data(), 65536, SUBMIT_DETACHED) == 0,
          "detached nop");
    CHECK(rl == 0, "detached nop: reply_len %u", rl);
    // The Nop's reply record (it was not flagged reply-on-error) arrives with the next reply.
    CHECK(submit(fd, &m, sizeof m, nullptr, 0, &rl, reply.data()) == 0, "nop after detached");
    CHECK(rl >= 32 + 2 * 32 && word(reply.data(), 8) == 2,
          "held record in front: reply %u bytes, %u records", rl, word(reply.data(), 8));
    CHECK(submit(fd, &m, sizeof m, nullptr, 0, &rl, reply.data()) == 0 && word(reply.data(), 8) == 1,
          "held record delivered once");

    uint8_t in[64];
    vcuda_seg s = {(uintptr_t)in, sizeof in, 2, 0};
    CHECK(submit(fd, &m, sizeof m, &s, 1, nullptr, nullptr, 65536, SUBMIT_DETACHED) == -EINVAL,
          "detached with an in segment");

    // Twice as many as the module keeps in flight: the rest wait, every one runs.
    int n = 128, waited = 0, records = 0;
    for (int i = 0; i < n; i++) {
        int r = submit(fd, &m, sizeof m, nullptr, 0, &rl, reply.data(), 65536, SUBMIT_DETACHED);
        CHECK(r == 0, "detached nop %d: %d", i, r);
        if (rl > 0) {
            waited++;
            records += word(reply.data(), 8);
        }
    }
    CHECK(submit(fd, &m, sizeof m, nullptr, 0, &rl, reply.data()) == 0, "nop after 128 detached");
    records += word(reply.data(), 8);
    printf("detached: %d of %d waited, %d records\n", waited, n, records);
    CHECK(records == n + 1, "every detached nop answered once: %d records", records);
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "--child") == 0)
        return child_main(argv[2], strtoull(argv[3], nullptr, 10));
    setvbuf(stdout, nullptr, _IOLBF, 0);
    int fd = open_dev();
    test_info(fd);
    test_bad_input(fd);
    printf("bad input: done\n");
    test_detached(fd);
    printf("detached: done\n");
    test_concurrency(fd);
    printf("concurrency: done\n");

    CHECK(data_round_trip(8u << 20, 1), "CUDA round trip before the kills");
    unsigned long long spin_1s = calibrate(1.0);
    printf("spin: %llu iterations a second\n", spin_1s);
    test_signals(spin_1s);
    printf("signals: done\n");
    test_share(fd);
    printf("share: done\n");

    // Everything still works.
    CHECK(data_round_trip(8u << 20, 2), "CUDA round trip after the kills");
    nop_msg m = make_nop();
    CHECK(submit(fd, &m, sizeof m, nullptr, 0) == 0, "raw call after the kills");
    close(fd);

    // Every page pinned is unpinned once the device returned the abandoned calls.
    long acq = 0, rel = 0;
    for (int i = 0; i < 300; i++) {
        acq = vmstat("nr_foll_pin_acquired");
        rel = vmstat("nr_foll_pin_released");
        if (acq == rel) break;
        usleep(100000);
    }
    printf("pins: %ld acquired, %ld released\n", acq, rel);
    CHECK(acq > 0 && acq == rel, "pins leaked: %ld acquired, %ld released", acq, rel);

    if (failures) {
        printf("module-abuse: %d FAILED\n", failures);
        return 1;
    }
    printf("module-abuse: PASS\n");
    return 0;
}
