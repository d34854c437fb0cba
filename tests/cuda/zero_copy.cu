// SPDX-License-Identifier: Apache-2.0 OR MIT
// Mapped host memory shared in place (zero-copy): a running kernel and the host talk through
// page-locked memory, each seeing the other's writes while the kernel runs. The kernel raises
// a flag, the host sees it and answers, the kernel sees the answer and says so; both sides
// give up after a few seconds. On a GPU this always works. Where kernels see a copy of
// mapped memory that is written back at synchronization (vcuda's coherent cache: TCP, the
// CUDA executor, VCUDA_SHARED_MEMORY=0), neither side sees the other while the kernel runs,
// and the program says which write did not pass; the values after synchronization are
// right either way. tests/tests/e2e.rs and tests/vm/cuda/zero_copy_vm.cu check the line
// where vcuda shares memory in place.
//
// Also: cudaHostRegister(Mapped) of malloc'd memory read by a running kernel the same way.
#include <chrono>
#include <thread>
#include "common.h"

__device__ unsigned long long now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// box[0]: the kernel's ping; box[1]: the host's answer; box[2]: what the kernel saw
// (2: the answer, -1: nothing before the limit).
__global__ void handshake(volatile int *box, unsigned long long limit_ns) {
    box[0] = 1;
    __threadfence_system();
    unsigned long long t0 = now_ns();
    while (box[1] != 1) {
        if (now_ns() - t0 > limit_ns) {
            box[2] = -1;
            return;
        }
    }
    box[2] = 2;
}

// Runs the handshake over `box` (page-locked, mapped, device pointer `dbox`); whether the
// answer passed both ways while the kernel ran. The host's side runs on a thread of its
// own, so it works whether or not the launch returns before the kernel ends (vcuda's CPU
// executor in a VM runs the kernel within the launch call).
static bool talk(int *box, int *dbox, const char *what) {
    volatile int *v = box;
    v[0] = v[1] = v[2] = 0;
    bool seen = false;
    std::thread host([&] {
        auto t0 = std::chrono::steady_clock::now();
        while (v[0] != 1 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(3)) {
        }
        seen = v[0] == 1;
        v[1] = 1;
    });
    handshake<<<1, 1>>>(dbox, 3ull * 1000 * 1000 * 1000);
    host.join();
    CHECK(cudaDeviceSynchronize());
    // After synchronization both writes are there, whatever the kernel saw.
    EXPECT(v[0] == 1 && v[1] == 1);
    EXPECT(v[2] == 2 || v[2] == -1);
    if (!seen)
        printf("%s: the host did not see the kernel's write while it ran\n", what);
    else if (v[2] != 2)
        printf("%s: the kernel did not see the host's write while it ran\n", what);
    return seen && v[2] == 2;
}

int main() {
    int can = 0;
    CHECK(cudaDeviceGetAttribute(&can, cudaDevAttrCanMapHostMemory, 0));
    if (!can) {
        printf("this device cannot map host memory\n");
        return finish();
    }
    int *box = nullptr, *dbox = nullptr;
    CHECK(cudaHostAlloc(&box, 4096, cudaHostAllocMapped));
    CHECK(cudaHostGetDevicePointer((void **)&dbox, box, 0));
    if (talk(box, dbox, "cudaHostAlloc"))
        printf("the kernel saw the host's write while it ran\n");
    CHECK(cudaFreeHost(box));

    // Registered memory, not page-aligned, with neighbours on its pages.
    char *heap = (char *)malloc(3 * 4096);
    int *reg = (int *)(heap + 100);
    cudaError_t e = cudaHostRegister(reg, 64, cudaHostRegisterMapped);
    if (e == cudaSuccess) {
        int *dreg = nullptr;
        CHECK(cudaHostGetDevicePointer((void **)&dreg, reg, 0));
        heap[0] = 5;
        if (talk(reg, dreg, "cudaHostRegister"))
            printf("the kernel saw the host's write to registered memory while it ran\n");
        EXPECT(heap[0] == 5);
        CHECK(cudaHostUnregister(reg));
    } else {
        EXPECT(e == cudaErrorNotSupported);
        cudaGetLastError();
        printf("cudaHostRegister(cudaHostRegisterMapped) not supported here\n");
    }
    free(heap);
    return finish();
}
