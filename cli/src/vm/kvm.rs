// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Whether KVM can run a guest here (else QEMU falls back to TCG).

use std::fs;
use std::os::fd::AsRawFd;

/// Whether KVM can run a guest here: the CPU reports hardware virtualisation (vmx/svm; a
/// nested guest without it can have a /dev/kvm that creates VMs but does not boot them: seen
/// here, see shared/facts/qemu.md) and /dev/kvm creates a VM with a vCPU.
pub(super) fn kvm_usable() -> bool {
    let hw = fs::read_to_string("/proc/cpuinfo").is_ok_and(|c| {
        c.lines()
            .filter(|l| l.starts_with("flags"))
            .any(|l| l.split_whitespace().any(|f| f == "vmx" || f == "svm"))
    });
    if !hw {
        return false;
    }
    const KVM_GET_API_VERSION: libc::c_ulong = 0xAE00;
    const KVM_CREATE_VM: libc::c_ulong = 0xAE01;
    const KVM_CREATE_VCPU: libc::c_ulong = 0xAE41;
    let Ok(kvm) = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
    else {
        return false;
    };
    // SAFETY: KVM ioctls on a descriptor we own; none of them takes a pointer.
    unsafe {
        if libc::ioctl(kvm.as_raw_fd(), KVM_GET_API_VERSION as _, 0) != 12 {
            return false;
        }
        let vm = libc::ioctl(kvm.as_raw_fd(), KVM_CREATE_VM as _, 0);
        if vm < 0 {
            return false;
        }
        let vcpu = libc::ioctl(vm, KVM_CREATE_VCPU as _, 0);
        if vcpu >= 0 {
            libc::close(vcpu);
        }
        libc::close(vm);
        vcpu >= 0
    }
}
