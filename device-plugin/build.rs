// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Generates the kubelet device-plugin API (proto/deviceplugin.proto) with protox, a
//! protobuf compiler in Rust, so building needs no `protoc`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/deviceplugin.proto");
    let fds = protox::compile(["deviceplugin.proto"], ["proto"])?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .compile_fds(fds)?;
    Ok(())
}
