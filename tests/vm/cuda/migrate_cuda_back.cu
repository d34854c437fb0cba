// SPDX-License-Identifier: Apache-2.0 OR MIT
// vcuda-vm-test: executor=chain-unpinned
// vcuda-vm-test: libs=cublas,curand
// vcuda-vm-test: expect=migrate-cuda: PASS
// vcuda-vm-test: expect_err=the destination could not load the guest
// vcuda-vm-test: vm=--migrate-on migrate-at:
// vcuda-vm-test: args=24 150 20000
// A migration whose destination cannot load the guest's CUDA session takes the guest back:
// migrate_cuda.cu on the driver-API chain without VCUDA_DEVICE_VA, so each backend's device
// range lies elsewhere and the destination cannot reserve the session's addresses. The
// destination's backend refuses the state, its QEMU exits, and `vcuda vm run` resumes the
// source (paused, whole), where the program finishes.
#include "migrate_cuda.cu"
