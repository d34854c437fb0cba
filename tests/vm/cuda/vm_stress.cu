// SPDX-License-Identifier: Apache-2.0 OR MIT
// vcuda-vm-test: expect=vm-stress: PASS
// vcuda-vm-test: vm=--smp 4 --check-unload
// Many calls in flight from many threads and processes at once, through /dev/vcuda: each of
// several processes runs threads that each own a stream and loop over async copies (small,
// and large enough to exceed the device's descriptor limit when the pages are scattered),
// kernels and synchronizes, checking every result. Run inside the guest by tests/vm/run.sh.
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

#define CK(x)                                                                                \
    do {                                                                                     \
        cudaError_t e_ = (x);                                                                \
        if (e_ != cudaSuccess) {                                                             \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            return false;                                                                    \
        }                                                                                    \
    } while (0)

__global__ void axpb(const unsigned *in, unsigned *out, size_t n, unsigned a, unsigned b) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * a + b;
}

static bool worker(int proc, int thread, int iters) {
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    bool ok = true;
    for (int it = 0; it < iters && ok; it++) {
        // Alternate small and large (6 MiB: over 1024 scattered pages) transfers.
        size_t n = (it % 2 ? (6u << 20) : (64u << 10)) / 4 + it * 7 + thread;
        std::vector<unsigned> h(n), r(n);
        unsigned a = 3 + proc, b = 11 * thread + it;
        for (size_t i = 0; i < n; i++) h[i] = (unsigned)(i * 2654435761u) ^ (proc << 24) ^ thread;
        unsigned *din, *dout;
        CK(cudaMalloc(&din, n * 4));
        CK(cudaMalloc(&dout, n * 4));
        CK(cudaMemcpyAsync(din, h.data(), n * 4, cudaMemcpyHostToDevice, s));
        axpb<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(din, dout, n, a, b);
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(r.data(), dout, n * 4, cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
        for (size_t i = 0; i < n; i++)
            if (r[i] != h[i] * a + b) {
                fprintf(stderr, "proc %d thread %d iter %d: r[%zu] = %u, want %u\n", proc, thread,
                        it, i, r[i], h[i] * a + b);
                ok = false;
                break;
            }
        CK(cudaFree(din));
        CK(cudaFree(dout));
    }
    CK(cudaStreamDestroy(s));
    return ok;
}

struct arg {
    int proc, thread, iters;
    bool ok;
};

static int run_process(int proc, int threads, int iters) {
    std::vector<pthread_t> th(threads);
    std::vector<arg> args(threads);
    for (int t = 0; t < threads; t++) {
        args[t] = {proc, t, iters, false};
        pthread_create(&th[t], nullptr, [](void *p) -> void * {
            arg *a = (arg *)p;
            a->ok = worker(a->proc, a->thread, a->iters);
            return nullptr;
        }, &args[t]);
    }
    int bad = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(th[t], nullptr);
        bad += !args[t].ok;
    }
    return bad;
}

int main(int argc, char **argv) {
    int procs = argc > 1 ? atoi(argv[1]) : 3;
    int threads = argc > 2 ? atoi(argv[2]) : 4;
    int iters = argc > 3 ? atoi(argv[3]) : 4;
    fflush(nullptr);
    std::vector<pid_t> pids;
    for (int p = 1; p < procs; p++) {
        pid_t pid = fork();
        if (pid == 0) _exit(run_process(p, threads, iters) ? 1 : 0);
        pids.push_back(pid);
    }
    int bad = run_process(0, threads, iters);
    for (pid_t pid : pids) {
        int st = 0;
        waitpid(pid, &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) bad++;
    }
    printf("%d processes x %d threads x %d iterations\n", procs, threads, iters);
    printf("vm-stress: %s\n", bad ? "FAIL" : "PASS");
    return bad ? 1 : 0;
}
