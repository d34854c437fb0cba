// SPDX-License-Identifier: Apache-2.0 OR MIT
//! `vcuda vm run`: runs a CUDA program inside a QEMU guest whose `/dev/vcuda` (the vcuda
//! kernel module) reaches a private `vcuda-backend vhost-user` on this machine.
//!
//! 1. The guest image (kernel, base initramfs with libvcuda.so and vcuda.ko, patched QEMU)
//!    comes from `images/build-guest.sh` (built or reused from its cache), or from
//!    `VCUDA_IMAGE_DIR` / `--image-dir` (a directory with `image.env`, as
//!    `build-guest.sh --out DIR` writes it).
//! 2. PROGRAM and the libraries it loads that the base image lacks (as `ldd` resolves them
//!    here; the CUDA runtime is libvcuda's job) go into a second cpio archive, with
//!    `/vcuda/run`, a script that sets the environment and runs PROGRAM with its arguments. The
//!    kernel unpacks the two archives concatenated.
//! 3. The backend listens on a socket in a private temporary directory; QEMU (KVM when it
//!    works, else TCG) boots with its RAM in a shared memfd and the `vhost-user-cuda-pci`
//!    device on that socket. The program's stdout and stderr come back on two virtio-serial
//!    ports, streamed to ours as they arrive; the serial console carries the kernel log and
//!    the guest init's status lines (`VCUDA-GUEST: ...`, see `images/guest/init`).
//! 4. With `--migrate-after`, a second backend and a second QEMU (`-incoming defer`) start
//!    after that time, the guest moves to them over QMP ([`migrate`]), the first pair is
//!    stopped, and the program finishes on the second.
//! 5. On exit, timeout, Ctrl-C or SIGTERM, QEMU and the backend are stopped and the temporary
//!    directory (socket included) is removed. The exit code is the program's.
//!
//! `vcuda vm image` ([`image()`]) stops after step 2 and writes the kernel and the initrd into
//! a directory, for a QEMU command line or a libvirt domain of one's own.

mod added;
mod console;
mod export;
mod guest;
mod image;
mod initramfs;
mod kvm;
mod migrate;
mod options;
mod process;
mod program;
mod supervise;

pub use export::image;
pub use options::{VmOptions, parse_memory};
pub use supervise::run;
