"""Real subprocess calls through root.run on a live HostRoot, against fake vendor tools on PATH
(tests/fixtures/bin/fake-vendor-tool) that print real outputs, fail, print garbage or hang."""
from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from inspector.discover import drives, fio_status, hio, nvme_health, smart
from inspector.discover.drive_state import TrendStore
from inspector.health.drives import device_findings
from inspector.model import Level, Unknown
from inspector.roots.host import HostRoot

FIXTURES = Path(__file__).parents[1] / "fixtures"
SAMPLES = FIXTURES / "samples"
HIO = (SAMPLES / "hio_info/es3000-healthy.txt").read_text()
VSL3 = (SAMPLES / "fio-status/iodrive2-vsl3-healthy.txt").read_text()
FJ = (SAMPLES / "fio-status/fio-status-fj-healthy.json").read_text()
NVME = (SAMPLES / "nvme/nvme-cli-smart-log-healthy.json").read_text()
SMART_NVME = (SAMPLES / "nvme/smartctl-nvme-healthy.json").read_text()
SATA = (SAMPLES / "smartctl/sata-healthy.json").read_text()
TOOLS = ("hio_info", "hio_temperature", "fio-status", "smartctl", "nvme")
SHORT = 1.5   # seconds: the hang cases must cost this, not the 5 s default
ROOMY = 10.0  # for calls that should succeed even on a loaded machine


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """Install the fake tools (shebang: this interpreter, -S for a fast start) first on PATH.
    Returns set(script_dict) to choose what each command line does."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    body = (FIXTURES / "bin/fake-vendor-tool").read_text().split("\n", 1)[1]
    exe = bin_dir / "fake-vendor-tool"
    exe.write_text(f"#!{sys.executable} -S\n{body}")
    exe.chmod(0o755)
    for tool in TOOLS:
        (bin_dir / tool).symlink_to("fake-vendor-tool")
    script = tmp_path / "script.json"
    monkeypatch.setenv("FAKE_TOOL_SCRIPT", str(script))
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("INSPECTOR_STATE_DIR", str(tmp_path / "state"))

    def set_script(entries: dict) -> None:
        script.write_text(json.dumps(entries))
    set_script({})
    return set_script


def out(stdout: str, rc: int = 0) -> dict:
    return {"stdout": stdout, "rc": rc}


def test_hio_output_trend_and_recording(fake, tmp_path):
    fake({"hio_info -d /dev/hioa": out(HIO), "hio_temperature -d hioa": out("temperature: 51 C\n")})
    store = TrendStore(str(tmp_path / "state"))
    first = hio.collect(HostRoot("/"), "hioa", ROOMY, store)
    assert isinstance(first, hio.HioHealth), first
    assert first.health == "OK" and first.temperature_c == 51
    assert first.source == "hio_info -d /dev/hioa"
    assert first.bad_block_trend.startswith("first reading")
    fake({"hio_info -d /dev/hioa": out(HIO.replace("0.112%", "0.150%"))})
    root = HostRoot("/", record=True)
    second = hio.collect(root, "hioa", ROOMY, store)
    assert isinstance(second, hio.HioHealth), second
    assert second.bad_block_rate_rose_from == 0.112
    assert [f.code for f in device_findings("hioa", second)] == ["hio.bad_block_rising"]
    # The run is recorded: the same health comes back from the sidecar facts.
    sidecar = root.sidecar()
    assert "hio_info -d /dev/hioa" in sidecar["facts"]["command"]
    assert list(sidecar["facts"]["drive_trend"].values())[0]["rose_from"] == 0.112
    capture = tmp_path / "capture"
    capture.mkdir()
    (capture / "inspector-sidecar.json").write_text(json.dumps(sidecar))
    replay = hio.collect(HostRoot(str(capture)), "hioa", ROOMY, None)
    assert isinstance(replay, hio.HioHealth), replay
    assert replay.max_bad_block_rate_pct == 0.15 and replay.bad_block_rate_rose_from == 0.112
    # hio_temperature "fails" here (not in the script: usage error), which is only a detail
    assert isinstance(second.temperature_c, Unknown) and "exited with status 1" in second.temperature_c.reason


def test_hio_not_installed(tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("INSPECTOR_STATE_DIR", str(tmp_path / "state"))
    health = drives.collect(HostRoot("/"), ["hioa"], timeout=SHORT)
    assert health == {"hioa": Unknown("hio_info not installed")}
    assert str(health["hioa"]) == "unknown (hio_info not installed)"
    (f,) = device_findings("hioa", health["hioa"])
    assert f.level == Level.UNKNOWN


def test_nonzero_garbage_and_hang_are_unknown_with_reason(fake):
    fake({"hio_info -d /dev/hioa": {"stdout": "", "stderr": "open /dev/hioa failed\n", "rc": 2},
          "hio_info -d /dev/hiob": out("\x1b[31m%%%% segfault ####\n"),
          "hio_info -d /dev/hioc": {"hang": True}, "hio_info -d /dev/hiod": {"hang": True},
          "smartctl --json -a /dev/sda": out(SATA)})
    start = time.monotonic()
    health = drives.collect(HostRoot("/"), ["hioa", "hiob", "hioc", "hiod", "sda"], timeout=SHORT)
    elapsed = time.monotonic() - start
    assert health["hioa"] == Unknown("hio_info exited with status 2: open /dev/hioa failed")
    assert health["hiob"].reason.startswith("hio_info printed unrecognised output")
    assert health["hioc"] == health["hiod"] == Unknown(f"hio_info timed out after {SHORT:g} s")
    assert isinstance(health["sda"], smart.SmartHealth)      # the rest is unaffected
    assert elapsed < 2 * SHORT                # concurrent: two hung tools cost one timeout


def test_fio_json_first_then_text(fake):
    fake({"fio-status -fj": out(FJ)})
    status = fio_status.run_fio_status(HostRoot("/"), ROOMY)
    assert isinstance(status, fio_status.FioStatus), status
    assert status.controllers[0].source == "fio-status -fj"
    # An older VSL rejects -fj: the text form is used.
    fake({"fio-status -a": out(VSL3.replace("Reserves: 100.00%", "Reserves: 4.00%"))})
    health = drives.collect(HostRoot("/"), ["fioa"], timeout=ROOMY)
    assert health["fioa"].source == "fio-status -a"
    assert [f.code for f in device_findings("fioa", health["fioa"])] == ["fio.reserves_low"]


def test_fio_failures(fake):
    fake({"fio-status -fj": {"hang": True}, "fio-status -a": {"hang": True}})
    start = time.monotonic()
    health = drives.collect(HostRoot("/"), ["fioa"], timeout=SHORT)
    assert health == {"fioa": Unknown(f"fio-status timed out after {SHORT:g} s")}
    assert time.monotonic() - start < 2 * SHORT   # a hung -fj is not followed by a hung -a
    fake({"fio-status -a": out("Segmentation fault\n")})
    health = drives.collect(HostRoot("/"), ["fioa"], timeout=ROOMY)
    assert health["fioa"].reason.startswith("fio-status printed unrecognised output")
    fake({"fio-status -a": out(VSL3.replace("fioa", "fiob"))})
    health = drives.collect(HostRoot("/"), ["fioa"], timeout=ROOMY)
    assert health["fioa"] == Unknown("fio-status does not list fioa")
    assert health["fiob"].controller == "fct0"


def test_nvme_cli_then_smartctl_fallback(fake):
    fake({"nvme smart-log /dev/nvme0n1 -o json": out(NVME.replace('"percent_used":3', '"percent_used":95'))})
    h = nvme_health.collect(HostRoot("/"), "nvme0n1", ROOMY)
    assert h.source == "nvme smart-log" and h.percent_used == 95
    assert [f.code for f in device_findings("nvme0n1", h)] == ["nvme.wear"]
    fake({"nvme smart-log /dev/nvme0n1 -o json": out("garbage"),
          "smartctl --json -a /dev/nvme0n1": out(SMART_NVME)})
    h = nvme_health.collect(HostRoot("/"), "nvme0n1", ROOMY)
    assert h.source == "smartctl" and h.temperature_c == 37
    fake({"nvme smart-log /dev/nvme0n1 -o json": {"hang": True}})
    h = nvme_health.collect(HostRoot("/"), "nvme0n1", SHORT)
    assert isinstance(h.critical_warning, Unknown)
    assert f"nvme timed out after {SHORT:g} s" in h.critical_warning.reason
    assert "smartctl exited with status 1" in h.critical_warning.reason


def test_smartctl_exit_bits_are_output_not_failure(fake):
    doc = json.loads(SATA)
    doc["smartctl"]["exit_status"] = 0x40 | 0x08
    doc["smart_status"]["passed"] = False
    fake({"smartctl --json -a /dev/sda": out(json.dumps(doc), rc=0x48)})
    h = smart.collect(HostRoot("/"), "sda", ROOMY)
    assert isinstance(h, smart.SmartHealth), h
    assert h.exit_status == 0x48
    assert {f.code for f in device_findings("sda", h)} == {"smart.failed", "smart.logged_errors"}


def test_real_smartctl_on_this_machines_disks():
    """The installed smartctl against the real disk: a virtio disk has no SMART, which is
    an unknown with a reason, never an error or a finding."""
    real = shutil.which("smartctl") or "/usr/sbin/smartctl"
    assert os.access(real, os.X_OK), "smartctl is expected on the build machine (make test installs smartmontools)"
    disks = [n for n in os.listdir("/sys/block") if drives.kind_of(n) in ("virtual", "smart", "nvme")]
    health = drives.collect(HostRoot("/"), disks, timeout=5)
    for name in disks:
        value = health[name]
        if drives.kind_of(name) == "virtual":
            assert value == Unknown("virtual disk (virtio_blk): no SMART") or "Xen" in value.reason
        assert device_findings(name, value) == [] or not isinstance(value, Unknown)
    if Path("/sys/block/vda").exists():
        direct = smart.collect(HostRoot("/"), "vda", 5)      # what smartctl itself says
        assert isinstance(direct, Unknown) and direct.reason.startswith("smartctl:")


def test_recorded_run_replays_identically_offline(fake, tmp_path):
    """What a live run saw (commands + trend) is in the sidecar, so `--root` shows the same."""
    from inspector.model import to_jsonable
    sata = json.loads(SATA)
    sata["ata_smart_attributes"]["table"][2]["raw"] = {"value": 3, "string": "3"}
    fake({"hio_info -d /dev/hioa": out(HIO.replace("IO timeout: 0", "IO timeout: 2")),
          "fio-status -a": out(VSL3), "smartctl --json -a /dev/sda": out(json.dumps(sata), rc=0),
          "nvme smart-log /dev/nvme0n1 -o json": out(NVME)})
    names = ["hioa", "fioa", "nvme0n1", "sda"]
    live_root = HostRoot("/", record=True)
    live = drives.collect(live_root, names, timeout=ROOMY)
    capture = tmp_path / "capture"
    capture.mkdir()
    (capture / "inspector-sidecar.json").write_text(json.dumps(live_root.sidecar()))
    offline = drives.collect(HostRoot(str(capture)), names, timeout=ROOMY)
    from inspector.health.drives import stamp_levels  # the health step judges the levels
    stamp_levels(live)
    stamp_levels(offline)
    live_json, offline_json = to_jsonable(live), to_jsonable(offline)
    # sysfs identity of nvme0n1 is "not present" on this machine either way
    assert offline_json == live_json
    assert live_json["hioa"]["level"] == "warn" and live_json["sda"]["level"] == "warn"
    assert live_json["fioa"]["level"] == "ok" and live_json["nvme0n1"]["level"] == "ok"
