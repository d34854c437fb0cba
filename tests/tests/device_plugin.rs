// SPDX-License-Identifier: Apache-2.0 OR MIT
//! `vcuda-device-plugin` against a kubelet played by this test: it registers, lists its
//! shares as healthy, answers `Allocate` with what an unchanged nvcc-built program needs
//! (which the test then runs with exactly that), marks the shares unhealthy while the
//! backend is away, and registers again after the kubelet "restarts" (removes its socket).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tokio::net::UnixListener;
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnixListenerStream;
use tonic::transport::Server;
use tonic::{Request, Response, Status};
use vcuda_device_plugin::api::device_plugin_client::DevicePluginClient;
use vcuda_device_plugin::api::registration_server::{Registration, RegistrationServer};
use vcuda_device_plugin::api::{
    AllocateRequest, ContainerAllocateRequest, Empty, ListAndWatchResponse, RegisterRequest,
};
use vcuda_device_plugin::uds;
use vcuda_tests::{Cuda, Kill, bin, bin_dir, build};

/// The kubelet's registration service: hands each request to the test.
struct Kubelet(mpsc::UnboundedSender<RegisterRequest>);

#[tonic::async_trait]
impl Registration for Kubelet {
    async fn register(&self, req: Request<RegisterRequest>) -> Result<Response<Empty>, Status> {
        let _ = self.0.send(req.into_inner());
        Ok(Response::new(Empty {}))
    }
}

fn backend(socket: &Path) -> Kill {
    let _ = std::fs::remove_file(socket);
    let k = Kill(
        Command::new(bin("vcuda-backend"))
            .args(["serve", "--executor", "cpu", "--socket"])
            .arg(socket)
            .env_remove("VCUDA_SOCKET")
            .stderr(Stdio::null())
            .spawn()
            .expect("start vcuda-backend"),
    );
    wait_for(socket);
    k
}

fn wait_for(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The next device list, within 20 s.
async fn next(stream: &mut tonic::Streaming<ListAndWatchResponse>) -> ListAndWatchResponse {
    tokio::time::timeout(Duration::from_secs(20), stream.message())
        .await
        .expect("a device list in time")
        .expect("the stream")
        .expect("a device list")
}

fn healths(l: &ListAndWatchResponse) -> Vec<&str> {
    l.devices.iter().map(|d| d.health.as_str()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_device_plugin_serves_a_kubelet() {
    let Some(exe) = build("vectorAdd", Cuda::V13) else {
        return;
    };
    // The library directory with its soname links, as on an installed host.
    let o = Command::new(bin("vcuda"))
        .arg("lib-dir")
        .env("VCUDA_LIB_DIR", bin_dir())
        .output()
        .unwrap();
    assert!(o.status.success());
    let lib_dir = PathBuf::from(String::from_utf8(o.stdout).unwrap().trim());

    let dir = tempfile::tempdir().unwrap();
    let kdir = dir.path().join("device-plugins");
    std::fs::create_dir(&kdir).unwrap();
    let backend_sock = dir.path().join("vcuda.sock");
    let mut be = backend(&backend_sock);

    let (tx, mut registrations) = mpsc::unbounded_channel();
    let listener = UnixListener::bind(kdir.join("kubelet.sock")).unwrap();
    tokio::spawn(
        Server::builder()
            .add_service(RegistrationServer::new(Kubelet(tx)))
            .serve_with_incoming(UnixListenerStream::new(listener)),
    );
    let _plugin = Kill(
        Command::new(bin("vcuda-device-plugin"))
            .arg("--kubelet-dir")
            .arg(&kdir)
            .arg("--backend-socket")
            .arg(&backend_sock)
            .arg("--container-socket")
            .arg(&backend_sock)
            .arg("--lib-dir")
            .arg(&lib_dir)
            .arg("--container-lib-dir")
            .arg(&lib_dir)
            .args(["--shares", "3", "--health-interval", "1"])
            .spawn()
            .expect("start vcuda-device-plugin"),
    );

    // Registration.
    let reg = tokio::time::timeout(Duration::from_secs(20), registrations.recv())
        .await
        .expect("a registration in time")
        .unwrap();
    assert_eq!(reg.version, "v1beta1");
    assert_eq!(reg.resource_name, "vcuda.io/gpu");
    assert_eq!(reg.endpoint, "vcuda.sock");
    let mut client = DevicePluginClient::new(uds::channel(kdir.join(&reg.endpoint)).await.unwrap());
    let opts = client.get_device_plugin_options(Empty {}).await.unwrap();
    assert!(!opts.get_ref().pre_start_required);

    // ListAndWatch: three healthy shares.
    let mut stream = client.list_and_watch(Empty {}).await.unwrap().into_inner();
    let first = next(&mut stream).await;
    let ids: Vec<&str> = first.devices.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, ["vcuda-0", "vcuda-1", "vcuda-2"]);
    assert_eq!(healths(&first), ["Healthy"; 3]);

    // Allocate, and a container's program run with exactly what it says.
    let alloc = client
        .allocate(AllocateRequest {
            container_requests: vec![ContainerAllocateRequest {
                devices_ids: vec!["vcuda-1".into()],
            }],
        })
        .await
        .unwrap()
        .into_inner();
    let c = &alloc.container_responses[0];
    assert_eq!(c.envs["VCUDA_SOCKET"], backend_sock.to_string_lossy());
    assert_eq!(c.envs["LD_LIBRARY_PATH"], lib_dir.to_string_lossy());
    assert!(
        c.mounts
            .iter()
            .any(|m| m.host_path == lib_dir.to_string_lossy() && m.read_only)
    );
    assert!(
        c.mounts
            .iter()
            .any(|m| m.host_path == backend_sock.to_string_lossy())
    );
    let run = Command::new(&exe)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .envs(&c.envs)
        .output()
        .unwrap();
    assert!(
        run.status.success() && String::from_utf8_lossy(&run.stdout).contains("PASS"),
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let bad = client
        .allocate(AllocateRequest {
            container_requests: vec![ContainerAllocateRequest {
                devices_ids: vec!["vcuda-9".into()],
            }],
        })
        .await;
    assert_eq!(bad.unwrap_err().code(), tonic::Code::InvalidArgument);

    // The backend goes away, and comes back.
    drop(std::mem::replace(
        &mut be,
        Kill(Command::new("true").spawn().unwrap()),
    ));
    assert_eq!(healths(&next(&mut stream).await), ["Unhealthy"; 3]);
    be = backend(&backend_sock);
    assert_eq!(healths(&next(&mut stream).await), ["Healthy"; 3]);

    // The kubelet restarts: it removes the plugins' sockets; the plugin registers again
    // and its old stream ends.
    std::fs::remove_file(kdir.join("vcuda.sock")).unwrap();
    let again = tokio::time::timeout(Duration::from_secs(20), registrations.recv())
        .await
        .expect("a new registration in time")
        .unwrap();
    assert_eq!(again.endpoint, "vcuda.sock");
    let ended = tokio::time::timeout(Duration::from_secs(20), stream.message()).await;
    assert!(matches!(ended, Ok(Ok(None)) | Ok(Err(_))), "{ended:?}");
    wait_for(&kdir.join("vcuda.sock"));
    let mut client = DevicePluginClient::new(uds::channel(kdir.join("vcuda.sock")).await.unwrap());
    let mut stream = client.list_and_watch(Empty {}).await.unwrap().into_inner();
    assert_eq!(healths(&next(&mut stream).await), ["Healthy"; 3]);
    drop(be);
}
