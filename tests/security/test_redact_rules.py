"""Redaction of the kernel command line by rule, tried on real-world parameter names: every
secret-carrying parameter in tests/fixtures/cmdline/secret_parameters.txt loses its value (the
key stays), and none of the 469 real parameters in plain_parameter_names.txt (systemd's
kernel-command-line(7), bootparam(7), this kernel's module parameters) loses its value."""
from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from conftest import FIXTURES
from inspector.captures.capture import write_capture
from inspector.roots.host import HostRoot
from inspector.text.redact import REDACTED, redact_cmdline

CMDLINE = FIXTURES / "cmdline"


def file_bytes(tar: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    data = tar.extractfile(member)
    assert data is not None, f"{member.name} is not a regular file"
    return data.read()


def _lines(name: str) -> list[str]:
    return [line.split("  #")[0].strip() for line in (CMDLINE / name).read_text().splitlines()
            if line.strip() and not line.startswith("#")]


SECRET = _lines("secret_parameters.txt")
PLAIN = _lines("plain_parameter_names.txt")


def test_the_lists_are_what_they_claim():
    assert len(SECRET) >= 24 and all("PLANTED" in line for line in SECRET)
    assert len(PLAIN) > 400 and not any("PLANTED" in name for name in PLAIN)


@pytest.mark.parametrize("parameter", SECRET)
def test_each_real_world_secret_is_redacted(parameter):
    line, redacted = redact_cmdline(f"ro quiet {parameter} console=ttyS0\n")
    assert "PLANTED" not in line and REDACTED in line, line
    assert line.startswith("ro quiet ") and line.endswith(" console=ttyS0\n"), line
    assert len(redacted) == 1, redacted
    key = parameter.split("=", 1)[0]
    assert line.split()[2].startswith(key + "="), (key, line)   # the key stays readable


def test_no_real_plain_parameter_loses_its_value():
    line = " ".join(f"{name}=value-{i}" for i, name in enumerate(PLAIN)) + "\n"
    kept, redacted = redact_cmdline(line)
    assert redacted == [] and kept == line


def test_secrets_among_plain_parameters_in_a_capture(tmp_path):
    """The recorded /proc/cmdline of a capture holds none of the planted values and all the
    plain ones; the sidecar names each redacted key."""
    plain = [f"{name}=v{i}" for i, name in enumerate(PLAIN[:200])]
    mixed = [p for pair in zip(plain, SECRET) for p in pair] + plain[len(SECRET):]
    cmdline = " ".join(mixed) + "\n"
    tree = tmp_path / "tree"
    (tree / "proc").mkdir(parents=True)
    (tree / "proc" / "cmdline").write_text(cmdline)
    (tree / "proc" / "stat").write_text("cpu 1 2 3 4 5 6 7 8\n")
    root = HostRoot(str(tree), record=True)
    root.read_text("proc/cmdline")
    out = tmp_path / "cap.tar.gz"
    info = write_capture(root, str(out))
    with tarfile.open(out) as tar:
        member = tar.extractfile("proc/cmdline")
        assert member is not None
        recorded = member.read().decode()
        every_member = b"".join(file_bytes(tar, m) for m in tar.getmembers() if m.isfile())
    assert b"PLANTED" not in every_member
    assert all(p in recorded.split() for p in plain), "a plain parameter was changed"
    assert len(info["redacted"]["proc/cmdline"]) == len(SECRET)
    assert json.dumps(info).count("PLANTED") == 0


def test_a_live_capture_keeps_this_machines_line():
    """This VM's own command line is plain: redaction leaves it whole."""
    live = Path("/proc/cmdline").read_text()
    assert redact_cmdline(live) == (live, [])
