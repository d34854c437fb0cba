// SPDX-License-Identifier: Apache-2.0 OR MIT
//! `vcuda vm image --out DIR -- PROGRAM [ARGS]`: the guest `vcuda vm run` would boot, written
//! out for a QEMU command line or a libvirt domain of one's own
//! (`deploy/libvirt/vcuda-domain-direct.xml`): `DIR/bzImage` and `DIR/initrd`, whose init
//! runs PROGRAM with ARGS, prints `VCUDA-GUEST: exit-status=N` on the serial console and
//! powers the guest off.

use std::fs;
use std::io;
use std::path::Path;

use super::guest::prepare;
use super::options::VmOptions;

/// Writes the image into `out` (created if need be) and says what it wrote and which QEMU
/// (with which firmware directories) boots it.
pub fn image(opts: &VmOptions, out: &Path) -> io::Result<u8> {
    fs::create_dir_all(out)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", out.display())))?;
    // Written beside their final names and renamed, so a domain never boots half a file.
    let initrd = out.join("initrd");
    let partial = out.join(".initrd.partial");
    let image = prepare(opts, &partial)?;
    fs::rename(&partial, &initrd)?;
    let bzimage = out.join("bzImage");
    let partial = out.join(".bzImage.partial");
    fs::copy(&image.bzimage, &partial)?;
    fs::rename(&partial, &bzimage)?;
    println!("kernel: {}", bzimage.display());
    println!(
        "initrd: {} (runs {})",
        initrd.display(),
        opts.program.join(" ")
    );
    let firmware: Vec<String> = image
        .firmware
        .iter()
        .map(|d| format!("-L {}", d.display()))
        .collect();
    println!("qemu:   {} {}", image.qemu.display(), firmware.join(" "));
    Ok(0)
}
