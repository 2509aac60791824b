"""A capture of 199,000 empty members (1.4 MB of tar.gz) given to --root: `check -t 2s` took
21 s idle and 54 s loaded, the default bound 86 s, past check_nrpe's 10 s. The time bound
covers the whole command, unpacking and the partial tree's removal included; `report` unpacks
the same archive in tens of seconds, not minutes."""
from __future__ import annotations

import gzip
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import run_bin
from slowness import slack

MEMBERS = 199_000            # under the default INSPECTOR_MAX_ENTRIES (200,000)


def _many_members(path, count: int) -> None:
    """A tar.gz of a minimal host root and `count` empty files, their headers made from one
    template (tarfile adds 200,000 members in about a minute): a header's checksum is the sum
    of its bytes, so the template's sum without the name plus the name's is each one's."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name in ("proc", "sys", "etc", "etc/many"):
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        data = b"0.10 0.20 0.30 1/100 42\n"
        info = tarfile.TarInfo("proc/loadavg")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    head = out.getvalue().rstrip(b"\0")
    head += b"\0" * (-len(head) % 512)
    template = bytearray(tarfile.TarInfo("etc/many/x").tobuf(tarfile.USTAR_FORMAT))
    template[0:100] = bytes(100)                   # the name, each member's own
    template[148:156] = b" " * 8                   # the checksum counts itself as spaces
    unnamed_sum, between, after = sum(template), bytes(template[100:148]), bytes(template[156:])
    blocks = []
    for i in range(count):
        member = f"etc/many/f{i}".encode()
        blocks.append(member.ljust(100, b"\0") + between
                      + b"%06o\0 " % (unnamed_sum + sum(member)) + after)
    # level 6: 1.4 MB in 0.4 s of CPU; level 9 (gzip.open's default) 1.2 MB in 2.6 s
    with gzip.open(path, "wb", compresslevel=6) as f:
        f.write(head + b"".join(blocks) + b"\0" * 1024)


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    path = tmp_path_factory.mktemp("many") / "many.tar.gz"
    _many_members(path, MEMBERS)
    # a well-formed archive, as GNU tar reads it (tarfile took 5 s of CPU to list it)
    listed = subprocess.run(["tar", "-tzf", str(path)], capture_output=True, check=True,
                            timeout=120).stdout
    assert listed.count(b"\n") == MEMBERS + 5
    return path


@pytest.fixture
def unpack_dir(tmp_path) -> Iterator[Path]:
    """TMPDIR for the command: the unpacked trees of this command only, on tmpfs where there is
    one. 199,000 files on this VM's ext4 cost ~100 us of kernel time each (tar alike: 20,000
    in 2.5 s), which measured the disk, not the unpacking; tmpfs leaves Inspector's own cost."""
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        path = Path(tempfile.mkdtemp(prefix="inspector-unpack-", dir="/dev/shm"))
        yield path
        shutil.rmtree(path, ignore_errors=True)
    else:
        path = tmp_path / "tmp"
        path.mkdir()
        yield path


def _trees(tmp: str) -> list[str]:
    return [name for name in os.listdir(tmp) if name.startswith("inspector-root-")]


# each run unpacks until its bound: 1 s and 2 s are as far below the 7 s of a whole unpacking
# as 2 s and 5 s were, for 4 CPU-s less
@pytest.mark.parametrize("bound", [1, 2])
def test_check_answers_within_its_bound_unpacking_included(many, unpack_dir, bound):
    tmp = unpack_dir
    started = time.monotonic()
    res = run_bin("check", "-t", f"{bound}s", "--root", str(many), timeout=120,
                  env={"TMPDIR": str(tmp)})
    took = time.monotonic() - started
    assert res.returncode == 3, (res.returncode, res.stdout, res.stderr)
    assert res.stdout.startswith("INSPECTOR UNKNOWN - --root ") and \
        "time bound" in res.stdout, res.stdout
    assert res.stdout.count("\n") == 1
    # the bound counts from the parser; the interpreter's start-up comes before it (~0.3 s
    # idle, seconds beside two busy loops): a hang, or unpacking to the end, takes 20 s+
    assert took < bound + slack(1.5), f"check -t {bound}s took {took:.1f} s"
    give_up = time.monotonic() + 60       # the partial tree is removed in the background
    while _trees(str(tmp)) and time.monotonic() < give_up:
        time.sleep(0.05)
    assert _trees(str(tmp)) == [], "the partial tree was left behind"


def test_report_unpacks_two_hundred_thousand_members_in_seconds_not_minutes(many, unpack_dir):
    tmp = unpack_dir
    started = time.monotonic()
    res = run_bin("report", "--root", str(many), timeout=600, env={"TMPDIR": str(tmp)})
    took = time.monotonic() - started
    assert res.returncode in (0, 1), res.stderr
    assert "load" in res.stdout.lower()
    # 112 s before on an idle machine; 13 s on tmpfs with other engineers' work beside (load 5)
    assert took < slack(30), f"report took {took:.0f} s"
    assert _trees(str(tmp)) == []
