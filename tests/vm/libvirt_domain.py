#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 OR MIT
"""Runs a domain of deploy/libvirt/ on the QEMU command line libvirt itself yields for it.

libvirt's QEMU driver (embedded: `virsh -c qemu:///embed?root=DIR`, no daemon) turns the
domain into a command line (`domxml-to-native qemu-argv`); this script starts QEMU with
exactly that line and plays libvirt's part on the monitor it names: the master key file the
line refers to, `qmp_capabilities`, `cont` (libvirt starts guests paused with -S), and on
the guest's power-off (`SHUTDOWN`; the line has -no-shutdown) `quit`, as on_poweroff=destroy
does.

Only what ties the domain to a host is replaced before libvirt sees it, each a path the
deployment documents: the emulator, the kernel and initrd, the backend's socket in the
`<qemu:commandline>` arguments, the firmware directories (`-L`), a serial console into a
file instead of a pty; and `type='qemu'`, `<cpu mode='maximum'/>` where KVM is unusable.
With --disk (the disk-image domain), the disk becomes an empty raw file and the network
interface goes (a network needs libvirt's network driver and a bridge); the guest is not
booted then: `--probe` checks that QEMU starts on the line and shows the device on its PCI
bus.

  libvirt_domain.py --domain XML --qemu QEMU --firmware DIR:DIR --socket SOCK --work DIR
                    [--kernel F --initrd F --console LOG] [--disk] [--probe] [--timeout S]
"""

import argparse
import json
import os
import secrets
import shlex
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

QEMU_NS = "http://libvirt.org/schemas/domain/qemu/1.0"
# The device's modern virtio-pci id (virtio id 57): qemu-patches/.
VCUDA_PCI = (0x1AF4, 0x1079)


def kvm_usable():
    """As `vcuda vm run` decides (cli/src/vm/kvm.rs; VCUDA_VM_ACCEL forces it): the CPU
    reports hardware virtualisation (a nested guest without it may have a /dev/kvm that
    creates VMs but does not run them) and /dev/kvm opens."""
    forced = os.environ.get("VCUDA_VM_ACCEL", "auto")
    if forced != "auto":
        return forced == "kvm"
    with open("/proc/cpuinfo") as f:
        hw = any(
            ln.startswith("flags") and ({"vmx", "svm"} & set(ln.split()))
            for ln in f
        )
    if not hw:
        return False
    try:
        fd = os.open("/dev/kvm", os.O_RDWR)
    except OSError:
        return False
    os.close(fd)
    return True


def rewrite(args):
    """The domain with this host's paths; its text."""
    ET.register_namespace("qemu", QEMU_NS)
    tree = ET.parse(args.domain)
    dom = tree.getroot()
    if not kvm_usable():
        dom.set("type", "qemu")
        cpu = dom.find("cpu")
        if cpu is not None:
            cpu.attrib.clear()
            cpu.set("mode", "maximum")
    dev = dom.find("devices")
    dev.find("emulator").text = args.qemu
    os_ = dom.find("os")
    if args.kernel:
        os_.find("kernel").text = args.kernel
        os_.find("initrd").text = args.initrd
    for s in dev.findall("serial"):
        s.set("type", "file")
        for child in list(s):
            if child.tag == "source":
                s.remove(child)
        ET.SubElement(s, "source", {"path": args.console})
    for c in dev.findall("console"):
        dev.remove(c)
    if args.disk:
        raw = os.path.join(args.work, "disk.raw")
        with open(raw, "wb") as f:
            f.truncate(64 << 20)
        for d in dev.findall("disk"):
            d.find("driver").set("type", "raw")
            d.find("source").set("file", raw)
        for i in dev.findall("interface"):
            dev.remove(i)
    fw = args.firmware.split(":")
    qargs = dom.find(f"{{{QEMU_NS}}}commandline")
    seen_l = 0
    for a in qargs.findall(f"{{{QEMU_NS}}}arg"):
        v = a.get("value")
        if v.startswith("socket,id=") and ",path=" in v:
            a.set("value", v.split(",path=")[0] + ",path=" + args.socket)
        elif v.startswith("/") and "firmware" in v:
            if seen_l >= len(fw):
                sys.exit("libvirt_domain.py: more -L arguments in the domain than --firmware")
            a.set("value", fw[seen_l])
            seen_l += 1
    if seen_l != len(fw):
        sys.exit(f"libvirt_domain.py: the domain has {seen_l} firmware -L arguments, "
                 f"{len(fw)} given")
    out = os.path.join(args.work, "domain.xml")
    tree.write(out)
    return out


def qemu_argv(xml, work):
    """libvirt's command line for the domain: (environment, argv)."""
    root = os.path.join(work, "libvirt")
    os.makedirs(root, exist_ok=True)
    env = dict(os.environ, HOME=work, XDG_RUNTIME_DIR=os.path.join(work, "run"))
    cmd = ["virsh", "-q", "-c", f"qemu:///embed?root={root}",
           "domxml-to-native", "qemu-argv", xml]
    if os.geteuid() == 0:
        # As root, libvirt's QEMU driver is the privileged one and wants Debian's
        # libvirt-qemu user; as an unprivileged user (here: a user namespace mapping uid
        # 1000 to us, so files stay ours) it runs QEMU as that user, as qemu:///session does.
        cmd = ["unshare", "--user", "--map-user=1000", "--map-group=1000"] + cmd
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        sys.exit(f"virsh domxml-to-native failed ({r.returncode}):\n{r.stderr}")
    words = shlex.split(r.stdout)
    qenv = {}
    while words and "=" in words[0] and not words[0].startswith("/"):
        k, v = words.pop(0).split("=", 1)
        qenv[k] = v
    return qenv, words


class Qmp:
    """A QMP client: one JSON object per line; events kept as they pass."""

    def __init__(self, path, deadline, qemu):
        while True:
            self.s = socket.socket(socket.AF_UNIX)
            try:
                self.s.connect(path)
                break
            except OSError:
                self.s.close()
                if time.monotonic() > deadline or qemu.poll() is not None:
                    raise
                time.sleep(0.05)
        self.buf = b""
        self.events = []
        self.read(30)  # greeting

    def read(self, timeout):
        """The next message, or None if none came within `timeout` seconds."""
        end = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            if left <= 0:
                return None
            self.s.settimeout(left)
            try:
                chunk = self.s.recv(65536)
            except (TimeoutError, socket.timeout):
                return None
            if not chunk:
                raise EOFError("QMP closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def cmd(self, name, **arguments):
        msg = {"execute": name}
        if arguments:
            msg["arguments"] = arguments
        self.s.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            m = self.read(60)
            if m is None:
                raise TimeoutError(f"QMP {name}: no answer")
            if "event" in m:
                self.events.append(m["event"])
                continue
            if "error" in m:
                raise RuntimeError(f"{name}: {m['error']}")
            return m.get("return")


def main():
    p = argparse.ArgumentParser()
    for a in ("--domain", "--qemu", "--firmware", "--socket", "--work"):
        p.add_argument(a, required=True)
    p.add_argument("--kernel")
    p.add_argument("--initrd")
    p.add_argument("--console", default=os.devnull)
    p.add_argument("--disk", action="store_true")
    p.add_argument("--probe", action="store_true")
    p.add_argument("--timeout", type=float, default=300)
    args = p.parse_args()
    deadline = time.monotonic() + args.timeout

    xml = rewrite(args)
    qenv, argv = qemu_argv(xml, args.work)
    print("libvirt's command line:", shlex.join(argv), flush=True)
    monitor = None
    for i, w in enumerate(argv):
        if w == "-chardev" and argv[i + 1].startswith("socket,id=charmonitor,"):
            monitor = dict(kv.split("=", 1) for kv in argv[i + 1].split(",")[1:])["path"]
        if w == "-object" and argv[i + 1].startswith("{"):
            obj = json.loads(argv[i + 1])
            if obj.get("qom-type") == "secret" and "file" in obj:
                # libvirt writes the domain's master key before starting QEMU.
                os.makedirs(os.path.dirname(obj["file"]), exist_ok=True)
                with open(obj["file"], "wb") as f:
                    f.write(secrets.token_bytes(32))
    if monitor is None:
        sys.exit("libvirt's command line has no QMP monitor")
    if "XDG_CACHE_HOME" in qenv:
        os.makedirs(qenv["XDG_CACHE_HOME"], exist_ok=True)
    qemu = subprocess.Popen(argv, env=qenv, stdin=subprocess.DEVNULL)
    try:
        qmp = Qmp(monitor, deadline, qemu)
        qmp.cmd("qmp_capabilities")
        if args.probe:
            found = any(
                (d["id"]["vendor"], d["id"]["device"]) == VCUDA_PCI
                for bus in qmp.cmd("query-pci")
                for d in bus["devices"] + [
                    dd for b in bus["devices"] if "pci_bridge" in b
                    for dd in b["pci_bridge"].get("devices", [])
                ]
            )
            qmp.cmd("quit")
            qemu.wait(timeout=30)
            print("vhost-user-cuda-pci on the PCI bus:", found)
            return 0 if found else 1
        qmp.cmd("cont")
        while "SHUTDOWN" not in qmp.events and qemu.poll() is None:
            if time.monotonic() > deadline:
                print("libvirt_domain.py: timed out", file=sys.stderr)
                return 124
            try:
                m = qmp.read(1.0)
            except EOFError:
                break
            if m is not None and "event" in m:
                qmp.events.append(m["event"])
        if qemu.poll() is None:
            qmp.cmd("quit")
        return qemu.wait(timeout=30)
    finally:
        if qemu.poll() is None:
            qemu.kill()
            qemu.wait()


if __name__ == "__main__":
    sys.exit(main())
