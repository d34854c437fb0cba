// SPDX-License-Identifier: Apache-2.0 OR MIT
// vcuda-vm-test: expect=the kernel saw the host's write while it ran
// vcuda-vm-test: expect=the kernel saw the host's write to registered memory while it ran
// tests/cuda/zero_copy.cu in the VM, where the module shares page-locked memory in place
// (VCUDA_IOC_SHARE) and the CPU executor maps the guest's own pages for kernels: a running
// kernel and the guest program see each other's writes.
#include "../../cuda/zero_copy.cu"
