// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Finding the guest image: a prebuilt directory (`--image-dir`, `VCUDA_IMAGE_DIR`) or
//! what `images/build-guest.sh` builds or reuses, read from its `VAR=value` lines.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::options::VmOptions;

/// The guest image: what `images/build-guest.sh` prints (or `image.env` holds).
#[derive(Debug, Default)]
pub(super) struct Image {
    pub(super) bzimage: PathBuf,
    pub(super) initramfs: PathBuf,
    pub(super) manifest: PathBuf,
    pub(super) qemu: PathBuf,
    pub(super) firmware: Vec<PathBuf>,
}

/// Reads `VAR=value` lines as lib.sh's `emit_var` writes them (values maybe single-quoted).
fn parse_env_lines(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once('=')?;
            if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return None;
            }
            let v = match v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
                Some(inner) => inner.replace("'\\''", "'"),
                None => v.to_owned(),
            };
            Some((k.to_owned(), v))
        })
        .collect()
}

impl Image {
    fn from_vars(vars: &[(String, String)], base: &Path) -> io::Result<Self> {
        let get = |k: &str| {
            vars.iter()
                .rev()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
                .ok_or_else(|| io::Error::other(format!("the image description lacks {k}")))
        };
        let path = |k: &str| -> io::Result<PathBuf> {
            let p = PathBuf::from(get(k)?);
            Ok(if p.is_absolute() { p } else { base.join(p) })
        };
        let img = Image {
            bzimage: path("BZIMAGE")?,
            initramfs: path("INITRAMFS")?,
            manifest: path("MANIFEST")?,
            qemu: path("QEMU")?,
            firmware: get("QEMU_FIRMWARE")?
                .split(':')
                .filter(|s| !s.is_empty())
                .map(PathBuf::from)
                .collect(),
        };
        for p in [&img.bzimage, &img.initramfs, &img.manifest, &img.qemu] {
            if !p.exists() {
                return Err(io::Error::other(format!("{} does not exist", p.display())));
            }
        }
        Ok(img)
    }
}

/// The `images/` directory: `$VCUDA_IMAGES`, else the one of the source tree this was built
/// from.
fn images_dir() -> PathBuf {
    match std::env::var_os("VCUDA_IMAGES") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../images"),
    }
}

/// Finds or builds the guest image.
pub(super) fn guest_image(opts: &VmOptions, lib_dir: &Path) -> io::Result<Image> {
    let dir = opts.image_dir.clone().or_else(|| {
        std::env::var_os("VCUDA_IMAGE_DIR")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
    });
    if let Some(dir) = dir {
        let env = fs::read_to_string(dir.join("image.env"))
            .map_err(|e| io::Error::new(e.kind(), format!("{}/image.env: {e}", dir.display())))?;
        return Image::from_vars(&parse_env_lines(&env), &dir);
    }
    let script = images_dir().join("build-guest.sh");
    if !script.exists() {
        return Err(io::Error::other(format!(
            "{} not found: set VCUDA_IMAGES to the images/ directory of a vcuda checkout, or \
             VCUDA_IMAGE_DIR to a prebuilt image",
            script.display()
        )));
    }
    let out = Command::new("bash")
        .arg(&script)
        .arg("--lib-dir")
        .arg(lib_dir)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot run {}: {e}", script.display())))?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "{} failed ({})",
            script.display(),
            out.status
        )));
    }
    Image::from_vars(
        &parse_env_lines(&String::from_utf8_lossy(&out.stdout)),
        Path::new("/"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_lines() {
        let v = parse_env_lines("A=1\nKMAKE='LLVM=1 X=2'\nQ='it'\\''s'\nnoise\n");
        assert_eq!(
            v,
            vec![
                ("A".into(), "1".into()),
                ("KMAKE".into(), "LLVM=1 X=2".into()),
                ("Q".into(), "it's".into()),
            ]
        );
    }
}
