"""Captures leave credentials of the kernel command line out, and say so."""
from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from conftest import run_bin
from inspector.captures.capture import open_root, write_capture
from inspector.roots.host import HostRoot
from inspector.text.redact import redact_cmdline


def member_bytes(tar: tarfile.TarFile, name: str) -> bytes:
    member = tar.extractfile(name)
    assert member is not None, f"{name} is not a regular file in the capture"
    return member.read()


@pytest.mark.parametrize("line, expected, keys", [
    ("ro quiet rd.iscsi.password=hunter2 root=/dev/sda1",
     "ro quiet rd.iscsi.password=<redacted> root=/dev/sda1", ["rd.iscsi.password"]),
    ("rd.iscsi.in.password=a rd.iscsi.username=bob luks.key=/k:UUID=1 cryptkey=x",
     "rd.iscsi.in.password=<redacted> rd.iscsi.username=bob luks.key=<redacted> "
     "cryptkey=<redacted>",
     ["rd.iscsi.in.password", "luks.key", "cryptkey"]),
    ('"ip.secret=a b c" api_token=t1 apiKey=k2 rootpw=x PASSWD=y',
     "ip.secret=<redacted> api_token=<redacted> apiKey=<redacted> rootpw=<redacted> "
     "PASSWD=<redacted>",
     ["ip.secret", "api_token", "apiKey", "rootpw", "PASSWD"]),
    ("inst.ks=http://admin:s3cr3t@10.0.0.1/ks.cfg inst.repo=http://mirror/os",
     "inst.ks=http://<redacted>@10.0.0.1/ks.cfg inst.repo=http://mirror/os",
     ["inst.ks (user:password@ in a URL)"]),
    ("systemd.setenv=DB_PASSWORD=x systemd.setenv=LANG=C wifi.psk=abc oauth=z credentials=c",
     "systemd.setenv=DB_PASSWORD=<redacted> systemd.setenv=LANG=C wifi.psk=<redacted> "
     "oauth=<redacted> credentials=<redacted>",
     ["systemd.setenv=DB_PASSWORD", "wifi.psk", "oauth", "credentials"]),
    ("quiet -- --api-token abc --auth-required --listen 0.0.0.0:1",
     "quiet -- --api-token <redacted> --auth-required --listen 0.0.0.0:1", ["--api-token"]),
])
def test_secret_looking_values_are_redacted(line, expected, keys):
    assert redact_cmdline(line) == (expected, keys)


def test_settings_that_only_look_alike_are_kept():
    line = ("iommu.passthrough=1 spec_store_bypass_disable=on vconsole.keymap=us "
            "usbcore.authorized_default=0 mitigations=auto console=ttyS0,115200 "
            "crashkernel=256M reboot=k panic=1 virtio_mmio.device=4K@0xd0000000:5 "
            "intel_iommu=on isolcpus=2-3 BOOT_IMAGE=/vmlinuz-6.1 root=UUID=ab-cd ro\n")
    assert redact_cmdline(line) == (line, [])


def recording_root(tmp_path, cmdline: str) -> HostRoot:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "cmdline").write_text(cmdline)
    (tmp_path / "proc" / "stat").write_text("cpu 1 2 3 4 5 6 7 8\n")
    root = HostRoot(str(tmp_path), record=True)
    root.read_text("proc/cmdline")
    root.read_text("proc/stat")
    return root


def test_a_capture_records_the_redacted_line_and_says_so(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    root = recording_root(tree, "reboot=k panic=1 rd.iscsi.password=hunter2 pci=off\n")
    out = tmp_path / "cap.tar.gz"
    info = write_capture(root, str(out))
    assert info["redacted"] == {"proc/cmdline": ["rd.iscsi.password"]}
    with tarfile.open(out) as tar:
        cmdline = member_bytes(tar, "proc/cmdline").decode()
        sidecar = json.loads(member_bytes(tar, "inspector-sidecar.json"))
    assert "hunter2" not in cmdline
    assert cmdline == "reboot=k panic=1 rd.iscsi.password=<redacted> pci=off\n"
    assert sidecar["redactions"] == {"proc/cmdline": ["rd.iscsi.password"]}
    assert b"hunter2" not in out.read_bytes() and "hunter2" not in json.dumps(sidecar)
    opened = open_root(str(out))
    assert opened.sidecar_meta["redactions"] == {"proc/cmdline": ["rd.iscsi.password"]}
    assert opened.read_text("proc/cmdline") == cmdline


def test_a_capture_without_secrets_keeps_the_line_whole(tmp_path):
    out = tmp_path / "cap.tar.gz"
    assert run_bin("capture", "-o", str(out)).returncode == 0
    with tarfile.open(out) as tar:
        recorded = member_bytes(tar, "proc/cmdline").decode()
        sidecar = json.loads(member_bytes(tar, "inspector-sidecar.json"))
    live = Path("/proc/cmdline").read_text()
    assert redact_cmdline(live)[1] == []     # this machine's line holds nothing secret-looking
    assert recorded == live and "redactions" not in sidecar
