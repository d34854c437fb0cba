// SPDX-License-Identifier: Apache-2.0 OR MIT
//! `--add SRC[:DEST]`: the files and directory trees copied into the guest, and which of
//! them are shared libraries whose own libraries the guest needs too.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Something `--add` copies into the guest.
#[derive(Debug)]
pub(super) enum Added {
    /// A regular file: its host path and its guest path.
    File(PathBuf, String),
    /// A symbolic link (inside an added directory): its guest path and its target, as is.
    Link(String, PathBuf),
    /// A directory (inside an added directory, or added itself): its guest path.
    Dir(String),
}

/// Most files one `--add` of a directory may bring.
const MAX_ADDED_FILES: usize = 200_000;

/// A `--add SRC[:DEST]`: the file, or the directory tree (regular files, directories and
/// symbolic links; anything else is skipped), at DEST in the guest (SRC's absolute path when
/// DEST is not given).
pub(super) fn added(arg: &str) -> io::Result<Vec<Added>> {
    let (src, dest) = match arg.split_once(':') {
        Some((s, d)) => (PathBuf::from(s), Some(d.to_owned())),
        None => (PathBuf::from(arg), None),
    };
    let abs = fs::canonicalize(&src)
        .map_err(|e| io::Error::new(e.kind(), format!("--add {}: {e}", src.display())))?;
    let dest = dest.unwrap_or_else(|| abs.to_string_lossy().into_owned());
    if !dest.starts_with('/') || dest.split('/').any(|c| c == "..") {
        return Err(io::Error::other(format!(
            "--add {arg}: the guest path must be absolute, without '..'"
        )));
    }
    if abs.is_file() {
        return Ok(vec![Added::File(abs, dest)]);
    }
    if !abs.is_dir() {
        return Err(io::Error::other(format!(
            "--add {}: neither a regular file nor a directory",
            src.display()
        )));
    }
    let mut out = vec![Added::Dir(dest.clone())];
    let (root, dest_root) = (abs.clone(), PathBuf::from(&dest));
    let mut todo = vec![(abs, dest)];
    while let Some((dir, at)) = todo.pop() {
        let mut entries: Vec<_> = fs::read_dir(&dir)?.collect::<Result<_, _>>()?;
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = e.file_name().to_string_lossy().into_owned();
            let guest = format!("{}/{name}", at.trim_end_matches('/'));
            let t = e.file_type()?;
            if t.is_symlink() {
                // An absolute target inside the tree moves with it.
                let target = fs::read_link(e.path())?;
                let target = match target.strip_prefix(&root) {
                    Ok(rest) if target.is_absolute() => dest_root.join(rest),
                    _ => target,
                };
                out.push(Added::Link(guest, target));
            } else if t.is_dir() {
                out.push(Added::Dir(guest.clone()));
                todo.push((e.path(), guest));
            } else if t.is_file() {
                out.push(Added::File(e.path(), guest));
            }
            if out.len() > MAX_ADDED_FILES {
                return Err(io::Error::other(format!(
                    "--add {}: more than {MAX_ADDED_FILES} files",
                    src.display()
                )));
            }
        }
    }
    Ok(out)
}

/// Whether `path` is named like a shared library (`NAME.so`, or `NAME.so.` and a version of
/// digits and dots), whose own libraries the guest needs too.
pub(super) fn is_shared_library(path: &Path) -> bool {
    let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return false;
    };
    match name.rfind(".so") {
        Some(i) => {
            let rest = &name[i + 3..];
            i > 0
                && (rest.is_empty()
                    || rest.strip_prefix('.').is_some_and(|v| {
                        !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.')
                    }))
        }
        None => false,
    }
}

/// Whether the file at `path` starts like an ELF object.
pub(super) fn is_elf(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|()| magic == *b"\x7fELF")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_added_directory_keeps_its_tree_and_links() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir_all(d.path().join("a/b")).unwrap();
        fs::write(d.path().join("a/b/f.so.1"), b"x").unwrap();
        std::os::unix::fs::symlink("b/f.so.1", d.path().join("a/l")).unwrap();
        let src = fs::canonicalize(d.path().join("a")).unwrap();
        std::os::unix::fs::symlink(src.join("b/f.so.1"), src.join("abs")).unwrap();
        let got = added(&format!("{}:/g", src.display())).unwrap();
        let names: Vec<String> = got
            .iter()
            .map(|a| match a {
                Added::File(_, g) => format!("F {g}"),
                Added::Link(g, t) => format!("L {g} -> {}", t.display()),
                Added::Dir(g) => format!("D {g}"),
            })
            .collect();
        assert_eq!(
            names,
            [
                "D /g",
                "L /g/abs -> /g/b/f.so.1",
                "D /g/b",
                "L /g/l -> b/f.so.1",
                "F /g/b/f.so.1"
            ]
        );
        assert!(is_shared_library(Path::new("/x/f.so.1")));
        assert!(is_shared_library(Path::new(
            "/x/_ctypes.cpython-311-x86_64-linux-gnu.so"
        )));
        assert!(is_shared_library(Path::new("/x/libnvvm.so.4.0")));
        assert!(!is_shared_library(Path::new("/x/f.py")));
        assert!(!is_shared_library(Path::new("/x/x.sort.py")));
        assert!(!is_shared_library(Path::new("/x/data.source")));
        assert!(!is_shared_library(Path::new("/x/.so")));
        assert!(added("/nonexistent-vcuda-path").is_err());
        assert!(added(&format!("{}:relative", src.display())).is_err());
    }
}
