"""What a host sends back is hostile input. A fake `sh` behind a real sshd answers the
capture with traversal names, a gzip bomb, an endless stream or a stream that stalls, and the
live loop with garbage, an endless line or silence: each is refused or bounded, the command
ends in time, and nothing is written outside its private temporary directory (TMPDIR here,
empty again once it exits)."""
from __future__ import annotations

import io
import os
import signal
import struct
import tarfile
import time
import zlib
from pathlib import Path

import pytest
from sshd import SshServer

from conftest import require_root, run_bin

CANARY = "inspector-hostile-canary"


def _tar_gz(members: list[tarfile.TarInfo], data: dict[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        for info in members:
            content = data.get(info.name)
            if content is not None:
                info.size = len(content)
            tar.addfile(info, io.BytesIO(content) if content is not None else None)
    return raw.getvalue()


def _file(name: str) -> tarfile.TarInfo:
    return tarfile.TarInfo(name)


def _link(name: str, target: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = tarfile.SYMTYPE, target
    return info


def _traversal(tmp: Path) -> bytes:
    sidecar = b'{"version": 1, "facts": {}}'
    names = [f"../../{CANARY}-up", f"/tmp/{CANARY}-abs", f"proc/../../{CANARY}-mid"]
    members = [_file("inspector-sidecar.json"), _link("sys", "/tmp"),
               _file(f"sys/{CANARY}-through-link"), *[_file(n) for n in names]]
    return _tar_gz(members, {m.name: b"x" if m.isfile() and m.name != "inspector-sidecar.json"
                             else sidecar for m in members if m.isfile()})


def _bomb(tmp: Path) -> bytes:
    """A tar.gz whose one member is 2 GiB of zeros: about 2 MB on the wire. One gzip stream,
    its deflate data one compressed MiB of zeros repeated: each copy ends on a full flush (no
    reference back), so every copy decodes alike. Compressing the 2 GiB itself took 7 s of CPU."""
    info = tarfile.TarInfo("proc/zeros")
    info.size = 2 << 30
    header = info.tobuf(format=tarfile.GNU_FORMAT)
    deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)      # raw: our own framing
    start = deflate.compress(header) + deflate.flush(zlib.Z_FULL_FLUSH)
    block = bytes(1 << 20)
    copies = [deflate.compress(block) + deflate.flush(zlib.Z_FULL_FLUSH) for _ in range(2)]
    assert copies[0] == copies[1], "a fully flushed MiB did not compress alike twice"
    crc = zlib.crc32(header)
    for _ in range(2048):
        crc = zlib.crc32(block, crc)
    gzip_header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\x03"  # deflate, no mtime, best, Unix
    return b"".join([gzip_header, start, copies[0] * 2048, deflate.flush(zlib.Z_FINISH),
                     struct.pack("<II", crc, (len(header) + (2 << 30)) & 0xFFFFFFFF)])


# the fake host's shell: MODE picks the answer; a live mode answers the capture with a real
# capture of this host made by the shipped script (host_capture: made once for the module,
# not by each session: what is under test is the live stream after it) and the live loop
# badly
FAKE = r"""
IFS= read -r first
case $MODE in
live-*)
    case $first in INSPECTOR_TOOL_TIMEOUT=*) cat > /dev/null; cat "$CAPTURE"; exit ;; esac ;;
esac
case $MODE in
file) cat "$PAYLOAD" ;;
endless) cat /dev/zero ;;
stall) head -c "$KEEP" "$PAYLOAD"; sleep 600 ;;
live-garbage) while :; do echo "garbage line, not a frame"; done ;;
live-endless-line) echo '@@inspector-live 1 0'; while :; do printf 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'; done ;;
live-silent) echo '@@inspector-live 1 0'; sleep 600 ;;
esac
"""


@pytest.fixture
def fake_host(tmp_path, host_capture):
    require_root()
    servers = []

    def start(mode: str, payload: bytes = b"", keep: int = 0) -> SshServer:
        script = tmp_path / "fake.sh"
        script.write_text(FAKE)
        data = tmp_path / "payload"
        data.write_bytes(payload)
        server = SshServer.start(force=f"MODE={mode} PAYLOAD={data} KEEP={keep} "
                                       f"CAPTURE={host_capture} exec /bin/sh {script}")
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
    # the host's side of a stalled session (`sleep 600` under sshd, in a session of its own)
    # outlives the connection, as on a real host: end it with the test
    _end_processes_naming(str(tmp_path))


def _end_processes_naming(text: str) -> None:
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                if text.encode() not in cmdline.read():
                    continue
            os.killpg(int(pid), signal.SIGKILL)     # the script and its sleep: one group
        except OSError:
            pass


def _run(server: SshServer, tmp_path: Path, *argv: str, env: dict | None = None,
         timeout: float = 120):
    private = tmp_path / "tmpdir"
    private.mkdir(exist_ok=True)
    started = time.monotonic()
    result = run_bin("--ssh", server.destination, *server.cli_options(), *argv, timeout=timeout,
                     env={"TMPDIR": str(private), **(env or {})})
    seconds = time.monotonic() - started
    assert list(private.iterdir()) == [], "temporary files left behind"
    return result, seconds


def _no_canary(tmp_path: Path) -> None:
    for where in (tmp_path, tmp_path.parent, tmp_path.parent.parent, Path("/tmp"), Path("/"),
                  Path.cwd()):
        assert not [p for p in where.iterdir() if CANARY in p.name], where


def test_traversal_names_refuse_the_capture(fake_host, tmp_path):
    server = fake_host("file", _traversal(tmp_path))
    out = tmp_path / "out.tar.gz"
    result, _ = _run(server, tmp_path, "capture", "-o", str(out))
    assert result.returncode == 2
    assert "not a readable capture" in result.stderr and "unsafe" in result.stderr
    assert not out.exists()
    _no_canary(tmp_path)
    result, _ = _run(server, tmp_path, "report")
    assert result.returncode == 2 and result.stdout == ""
    _no_canary(tmp_path)


def test_a_gzip_bomb_is_bounded(fake_host, tmp_path):
    payload = _bomb(tmp_path)
    assert len(payload) < 4 << 20
    server = fake_host("file", payload)
    out = tmp_path / "out.tar.gz"
    result, seconds = _run(server, tmp_path, "capture", "-o", str(out),
                           env={"INSPECTOR_MAX_UNPACKED_BYTES": str(64 << 20)})
    assert result.returncode == 2
    assert "67108864" in result.stderr or "more than" in result.stderr
    assert not out.exists()
    assert seconds < 60


def test_an_endless_stream_is_cut(fake_host, tmp_path):
    server = fake_host("endless")
    out = tmp_path / "out.tar.gz"
    result, seconds = _run(server, tmp_path, "capture", "-o", str(out),
                           env={"INSPECTOR_MAX_SSH_BYTES": str(16 << 20)})
    assert result.returncode == 2
    assert f"more than {16 << 20} bytes" in result.stderr
    assert not out.exists()
    assert seconds < 60


def test_a_stalled_stream_costs_its_deadline_and_shows_what_came(fake_host, tmp_path, host_capture):
    whole = host_capture.read_bytes()
    server = fake_host("stall", whole, keep=len(whole) * 2 // 3)
    out = tmp_path / "out.tar.gz"
    result, seconds = _run(server, tmp_path, "capture", "-o", str(out), "--deadline", "8s")
    assert result.returncode == 0, result.stderr
    assert "no end after 8 s" in result.stderr and "warning" in result.stderr
    assert 8 <= seconds < 40
    report = run_bin("--root", str(out), "report", "--json", timeout=120)
    assert report.returncode == 0
    import json
    doc = json.loads(report.stdout)
    storage = doc["sections"]["storage"]
    assert "not collected when captured" in json.dumps(storage)
    assert "no end after 8 s" in json.dumps(storage)
    assert doc["host"]["hostname"] == os.uname().nodename      # the facts arrived first


@pytest.fixture(scope="module")
def host_capture(tmp_path_factory):
    """A real capture of this host, made by the shipped script (once: a capture.sh run is
    about a second of CPU)."""
    out = tmp_path_factory.mktemp("host-capture") / "host.tar.gz"
    script = run_bin("files", "capture.sh").stdout.strip()
    with open(script, "rb") as src, open(out, "wb") as dst:
        import subprocess
        subprocess.run(["sh", "-s"], stdin=src, stdout=dst, check=True, timeout=240)
    return out


@pytest.mark.parametrize("mode, said", [
    ("live-garbage", "not Inspector's live stream"),
    ("live-endless-line", "a line over"),
    ("live-silent", "no answer in time"),
])
def test_a_bad_live_stream_is_bounded(fake_host, tmp_path, mode, said):
    server = fake_host(mode)
    result, seconds = _run(server, tmp_path, "top", "--count", "2", timeout=180)
    assert said in result.stdout + result.stderr
    # the capture first (tens of seconds on a loaded machine), then two samples that wait
    # at most 3 s for their frame each
    assert seconds < 150
    if mode == "live-garbage":
        assert result.returncode == 2
    else:
        assert result.returncode == 0
        assert "unknown" in result.stdout
