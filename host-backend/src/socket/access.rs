// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Access control of the socket transport: where the default socket lives, the modes of its
//! directory and file, which peer uids are served, and when TCP may listen beyond loopback.

use std::ffi::OsStr;
use std::fs::DirBuilder;
use std::io;
use std::net::{IpAddr, ToSocketAddrs};
use std::os::fd::AsFd;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
use nix::sys::stat::{Mode, umask};
use nix::unistd::{Gid, Group, Uid, User, chown};

/// The directory under `$XDG_RUNTIME_DIR` (or `/run` for root) that holds the default
/// socket.
pub const SOCKET_DIR_NAME: &str = "vcuda";
/// The default socket's file name inside [`SOCKET_DIR_NAME`].
pub const SOCKET_FILE_NAME: &str = "vcuda.sock";

/// The socket path guest and backend use when nothing says otherwise:
/// `$XDG_RUNTIME_DIR/vcuda/vcuda.sock`, else `/run/vcuda/vcuda.sock` for root. There is no
/// default for other users: a predictable path in a shared directory such as `/tmp` could be
/// taken first by another user.
pub fn default_socket_path() -> Result<PathBuf, String> {
    default_socket_path_for(
        std::env::var_os("XDG_RUNTIME_DIR").as_deref(),
        Uid::effective().is_root(),
    )
}

/// [`default_socket_path`] for a given `$XDG_RUNTIME_DIR` and effective uid.
pub fn default_socket_path_for(xdg: Option<&OsStr>, root: bool) -> Result<PathBuf, String> {
    match xdg {
        Some(d) if !d.is_empty() => Ok(Path::new(d).join(SOCKET_DIR_NAME).join(SOCKET_FILE_NAME)),
        _ if root => Ok(Path::new("/run")
            .join(SOCKET_DIR_NAME)
            .join(SOCKET_FILE_NAME)),
        _ => Err(
            "no default socket: XDG_RUNTIME_DIR is unset and the backend does not run as root; \
             set XDG_RUNTIME_DIR or pass --socket PATH (in a directory only you can write)"
                .into(),
        ),
    }
}

/// Creates (or checks) the private directory of the default socket: owned by this user,
/// mode 0700, or 0710 with group `group` when the socket is shared with that group.
pub fn prepare_socket_dir(dir: &Path, group: Option<Gid>) -> io::Result<()> {
    match DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let md = std::fs::symlink_metadata(dir)?;
    if !md.file_type().is_dir() {
        return Err(io::Error::other(format!(
            "{} is not a directory; refusing to place the socket there",
            dir.display()
        )));
    }
    let me = Uid::effective().as_raw();
    if md.uid() != me {
        return Err(io::Error::other(format!(
            "{} is owned by uid {}, not by this backend's uid {me}; refusing to use it",
            dir.display(),
            md.uid()
        )));
    }
    let mode = match group {
        Some(g) => {
            chown(dir, None, Some(g)).map_err(io::Error::from)?;
            0o710
        }
        None => 0o700,
    };
    if md.mode() & 0o7777 != mode {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode))?;
    }
    Ok(())
}

/// Binds a Unix socket whose file is created mode 0600 (0660 with group `group`), replacing
/// a stale socket file nobody listens on. Anything at `path` that is not a socket is left
/// alone and binding fails.
pub fn bind_unix_private(path: &Path, group: Option<Gid>) -> io::Result<UnixListener> {
    // The umask covers the window between bind and chmod, so nobody can connect to a
    // looser socket meanwhile. The umask is process-wide; this runs before sessions start.
    let old = umask(Mode::from_bits_truncate(0o177));
    let r = bind_unix(path);
    umask(old);
    let listener = r?;
    let mode = match group {
        Some(g) => {
            chown(path, None, Some(g)).map_err(io::Error::from)?;
            0o660
        }
        None => 0o600,
    };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    Ok(listener)
}

/// Binds a Unix socket, replacing a stale socket file nobody listens on.
pub fn bind_unix(path: &Path) -> io::Result<UnixListener> {
    match UnixListener::bind(path) {
        Err(e) if e.kind() == io::ErrorKind::AddrInUse => {
            if UnixStream::connect(path).is_ok() {
                return Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    format!("{} is in use by a running backend", path.display()),
                ));
            }
            if !std::fs::symlink_metadata(path)?.file_type().is_socket() {
                return Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    format!("{} exists and is not a socket", path.display()),
                ));
            }
            std::fs::remove_file(path)?;
            UnixListener::bind(path)
        }
        r => r,
    }
}

/// A Unix peer's credentials (`SO_PEERCRED`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerCred {
    /// Process id.
    pub pid: i32,
    /// User id.
    pub uid: u32,
    /// Primary group id.
    pub gid: u32,
}

/// The credentials of the process at the other end of a Unix stream.
pub fn peer_cred(s: &impl AsFd) -> io::Result<PeerCred> {
    let c = getsockopt(s, PeerCredentials).map_err(io::Error::from)?;
    Ok(PeerCred {
        pid: c.pid(),
        uid: c.uid(),
        gid: c.gid(),
    })
}

/// Which peers a Unix socket serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessPolicy {
    /// Peer uids served.
    pub allowed_uids: Vec<u32>,
    /// With `--socket-group`: members of this group are served too.
    pub group: Option<Gid>,
}

impl AccessPolicy {
    /// The default: this backend's own uid and root.
    pub fn own_uid_and_root() -> Self {
        Self::with_uids(&[])
    }

    /// `uids` (the default when empty: this backend's uid and root).
    pub fn with_uids(uids: &[u32]) -> Self {
        let mut allowed_uids = if uids.is_empty() {
            vec![Uid::effective().as_raw(), 0]
        } else {
            uids.to_vec()
        };
        allowed_uids.sort_unstable();
        allowed_uids.dedup();
        Self {
            allowed_uids,
            group: None,
        }
    }

    /// Whether a peer with these credentials is served.
    pub fn allows(&self, peer: &PeerCred) -> bool {
        if self.allowed_uids.contains(&peer.uid) {
            return true;
        }
        match self.group {
            Some(g) => peer.gid == g.as_raw() || user_in_group(peer.uid, g),
            None => false,
        }
    }
}

/// Whether user `uid` is listed as a member of group `g` (supplementary membership).
fn user_in_group(uid: u32, g: Gid) -> bool {
    let (Ok(Some(user)), Ok(Some(group))) =
        (User::from_uid(Uid::from_raw(uid)), Group::from_gid(g))
    else {
        return false;
    };
    user.gid == g || group.mem.contains(&user.name)
}

/// Resolves `--socket-group GROUP` (a name or a number).
pub fn resolve_group(name: &str) -> Result<Gid, String> {
    if let Ok(n) = name.parse::<u32>() {
        return Ok(Gid::from_raw(n));
    }
    match Group::from_name(name) {
        Ok(Some(g)) => Ok(g.gid),
        Ok(None) => Err(format!("no group named {name}")),
        Err(e) => Err(format!("cannot look up group {name}: {e}")),
    }
}

/// Checks that TCP address `addr` may be served: any address with mutual TLS (`tls`),
/// else loopback only (with a warning: any local user can connect).
pub fn check_tcp_listen(addr: &str, tls: bool) -> Result<(), String> {
    let addrs: Vec<_> = addr
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {addr}: {e}"))?
        .collect();
    let exposed: Vec<IpAddr> = addrs
        .iter()
        .map(|a| a.ip())
        .filter(|ip| !ip.is_loopback())
        .collect();
    if tls {
        return Ok(());
    }
    if exposed.is_empty() {
        return Ok(());
    }
    Err(format!(
        "refusing to listen on tcp:{addr} ({exposed:?}): it is not a loopback address, and \
         without mutual TLS anyone who can reach it could run code on this GPU and read \
         other sessions' data. Give --tls-cert, --tls-key and --tls-client-ca (see \
         SECURITY.md), or use a Unix socket"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_path_is_private_or_refused() {
        let p = default_socket_path_for(Some(OsStr::new("/run/user/1000")), false).unwrap();
        assert_eq!(p, Path::new("/run/user/1000/vcuda/vcuda.sock"));
        let p = default_socket_path_for(None, true).unwrap();
        assert_eq!(p, Path::new("/run/vcuda/vcuda.sock"));
        let e = default_socket_path_for(Some(OsStr::new("")), false).unwrap_err();
        assert!(e.contains("XDG_RUNTIME_DIR"), "{e}");
        assert!(default_socket_path_for(None, false).is_err());
    }

    #[test]
    fn policy_allows_own_uid_and_root_only() {
        let me = Uid::effective().as_raw();
        let p = AccessPolicy::own_uid_and_root();
        let cred = |uid, gid| PeerCred { pid: 1, uid, gid };
        assert!(p.allows(&cred(me, 12345)));
        assert!(p.allows(&cred(0, 0)));
        let other = if me == 4242 { 4243 } else { 4242 };
        assert!(!p.allows(&cred(other, 4242)));
        let p = AccessPolicy::with_uids(&[other]);
        assert!(p.allows(&cred(other, 1)));
        assert!(!p.allows(&cred(other + 1, 1)));
        // A group widens it to peers whose primary group it is.
        let p = AccessPolicy {
            group: Some(Gid::from_raw(777_777)),
            ..AccessPolicy::with_uids(&[other])
        };
        assert!(p.allows(&cred(other + 1, 777_777)));
        assert!(!p.allows(&cred(other + 1, 777_778)));
    }

    #[test]
    fn socket_dir_and_file_are_private() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("vcuda");
        prepare_socket_dir(&dir, None).unwrap();
        let md = std::fs::metadata(&dir).unwrap();
        assert_eq!(md.mode() & 0o7777, 0o700);
        // A loose existing directory is tightened.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        prepare_socket_dir(&dir, None).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o7777, 0o700);
        let sock = dir.join("vcuda.sock");
        let _l = bind_unix_private(&sock, None).unwrap();
        let md = std::fs::symlink_metadata(&sock).unwrap();
        assert!(md.file_type().is_socket());
        assert_eq!(md.mode() & 0o777, 0o600);
        // A peer's credentials are ours.
        let c = UnixStream::connect(&sock).unwrap();
        let cred = peer_cred(&c).unwrap();
        assert_eq!(cred.uid, Uid::effective().as_raw());
        assert_eq!(cred.pid as u32, std::process::id());
    }

    #[test]
    fn bind_leaves_non_sockets_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("not-a-socket");
        std::fs::write(&f, b"x").unwrap();
        assert!(bind_unix(&f).is_err());
        assert_eq!(std::fs::read(&f).unwrap(), b"x");
        // A directory that is a symlink is refused.
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(tmp.path(), &link).unwrap();
        assert!(prepare_socket_dir(&link, None).is_err());
    }

    #[test]
    fn tcp_is_loopback_only_without_tls() {
        assert!(check_tcp_listen("127.0.0.1:0", false).is_ok());
        assert!(check_tcp_listen("[::1]:0", false).is_ok());
        let e = check_tcp_listen("0.0.0.0:7777", false).unwrap_err();
        assert!(e.contains("--tls-client-ca"), "{e}");
        assert!(check_tcp_listen("0.0.0.0:7777", true).is_ok());
    }
}
