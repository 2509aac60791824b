"""The files shipped for the system around Inspector: completions and the man page current with
the parser (generated from it), working in bash and man; the systemd units valid and hardened;
`inspector files` and `inspector completion` pointing at them."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import run_bin, run_cli
from inspector.cli_docs import GENERATED, SHARE
from inspector.shipped import SHIPPED, shipped_path

UNITS = SHARE / "systemd"
# `systemd-analyze security` rates the README's former units 9.6 UNSAFE; these rate 3.1
MAX_EXPOSURE = 3.5


@pytest.mark.parametrize("name", GENERATED)
def test_generated_files_are_current(name):
    shipped = (SHARE / name).read_text(encoding="utf-8")
    assert GENERATED[name]() == shipped, \
        f"inspector/share/{name} is stale: run `python -m inspector.cli_docs` and commit it"


def test_files_names_every_shipped_file_and_they_exist():
    res = run_cli("files")
    assert res.status == 0
    for name in SHIPPED:
        path = Path(run_cli("files", name).out.strip())
        assert path.exists() and str(path) in res.out, name
    assert {p.name for p in Path(shipped_path("systemd")).iterdir()} == {
        "inspector-record.service", "inspector-record.timer", "inspector-export.service",
        "inspector-export.timer", "inspector-record-samples.service"}


def test_install_man_puts_the_page_where_man_finds_it(tmp_path):
    res = run_bin("files", "--install-man", "--man-dir", str(tmp_path / "man"))
    page = tmp_path / "man" / "man1" / "inspector.1"
    assert res.returncode == 0 and res.stdout.strip() == str(page), res.stderr
    assert page.read_bytes() == (SHARE / "man" / "inspector.1").read_bytes()
    found = subprocess.run(["man", "-w", "inspector"], capture_output=True, text=True,
                           env={**os.environ, "MANPATH": str(tmp_path / "man")}, timeout=60)
    assert found.stdout.strip() == str(page), found.stderr
    res = run_bin("files", "--man-dir", str(tmp_path))
    assert res.returncode == 2 and "--install-man" in res.stderr


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_completion_prints_the_shipped_script(shell):
    res = run_bin("completion", shell)
    assert res.returncode == 0 and res.stdout == Path(shipped_path(shell)).read_text()


def _complete(words: str) -> list[str]:
    """What bash offers for the last word, with the script `inspector completion` prints."""
    script = run_bin("completion", "bash").stdout
    line = words.split(" ")
    program = (f"{script}\nCOMP_WORDS=({' '.join(repr(w) for w in line)}); "
               f"COMP_CWORD={len(line) - 1}; COMP_LINE={words!r}; COMP_POINT=${{#COMP_LINE}}; "
               "_shtab_inspector; printf '%s\\n' \"${COMPREPLY[@]}\"")
    res = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    return res.stdout.split()


def test_bash_completes_commands_options_and_choices():
    assert "probe" in _complete("inspector pro")
    assert set(_complete("inspector probe ")) >= {"io", "memcached", "dns"}
    assert "--ramp" in _complete("inspector probe io --ra")
    assert set(_complete("inspector history --by ")) == {"hour", "day"}


def test_man_page_renders_without_warnings():
    if shutil.which("man") is None:
        pytest.fail("man is not installed (apt-get install man-db)")
    res = subprocess.run(["man", "--warnings", "-l", str(SHARE / "man" / "inspector.1")],
                         capture_output=True, text=True, timeout=60,
                         env={**os.environ, "MANWIDTH": "80", "MANPAGER": "cat", "PAGER": "cat"})
    assert res.returncode == 0 and res.stderr == "", res.stderr
    text = res.stdout
    assert "inspector probe io" in text and "EXIT STATUS" in text
    for section in ("ENVIRONMENT", "FILES", "SEE ALSO"):
        assert f"\n{section}\n" in text, section
    assert "INSPECTOR_MAX_UNPACKED_BYTES" in text and "/etc/inspector/inspector.toml" in text
    assert re.search(r"inspector\s+probe\s+io\s+exit status \(as every inspector command\)",
                     " ".join(text.split()), re.IGNORECASE), text[-3000:]


# ------------------------------------------------------------------------- systemd units
def _analyze(*args: str) -> subprocess.CompletedProcess:
    if shutil.which("systemd-analyze") is None:
        pytest.fail("systemd-analyze is not installed (apt-get install systemd)")
    return subprocess.run(["systemd-analyze", *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("unit", ["inspector-record.service", "inspector-export.service",
                                  "inspector-record-samples.service"])
def test_units_are_hardened(unit):
    res = _analyze("security", "--offline=true", str(UNITS / unit))
    score = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", res.stdout)
    assert score, res.stdout[-500:] + res.stderr
    print(unit, score.group(0))
    assert float(score.group(1)) <= MAX_EXPOSURE, res.stdout


def test_units_are_valid(tmp_path):
    """systemd-analyze verify: no unknown setting or bad value (the binary is not installed in
    /usr/local/bin here: that complaint alone is expected)."""
    for unit in UNITS.iterdir():
        shutil.copy(unit, tmp_path / unit.name)
    res = _analyze("verify", "--man=no", *sorted(str(p) for p in tmp_path.iterdir()))
    complaints = [line for line in (res.stdout + res.stderr).splitlines()
                  if line.strip() and "/usr/local/bin/inspector is not executable" not in line]
    assert complaints == []


def _settings(unit: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in (UNITS / unit).read_text().splitlines()
                if "=" in line and not line.startswith("#"))


def test_units_run_what_they_say():
    from inspector.cli import build_parser
    record = (UNITS / "inspector-record.service").read_text()
    export = (UNITS / "inspector-export.service").read_text()
    assert "StateDirectory=inspector" in record and "ProtectSystem=strict" in record
    parsed = {}
    for unit in ("inspector-record.service", "inspector-export.service",
                 "inspector-record-samples.service"):
        argv = _settings(unit)["ExecStart"].split()[1:]
        parsed[unit] = build_parser(argv).parse_args(argv)   # argparse exits on a mistake
    assert parsed["inspector-record.service"].once
    assert parsed["inspector-export.service"].command == "export"
    samples = parsed["inspector-record-samples.service"]
    assert samples.command == "record" and samples.samples and not samples.once
    assert "ReadWritePaths=-/var/lib/prometheus/node-exporter" in export


def test_timers_spread_a_fleet_and_oneshots_are_bounded():
    """A fleet's timers do not fire together (each host its own fixed offset), a hung run is
    stopped before the next is due, and the recorder service restarts after a failure."""
    for timer, period_s in (("inspector-record.timer", 300), ("inspector-export.timer", 120)):
        settings = _settings(timer)
        assert settings["FixedRandomDelay"] == "yes"
        assert 0 < _seconds(settings["RandomizedDelaySec"]) <= period_s / 2, timer
        service = _settings(timer.replace(".timer", ".service"))
        assert service["Type"] == "oneshot"
        assert 0 < _seconds(service["TimeoutStartSec"]) < period_s, timer
    samples = _settings("inspector-record-samples.service")
    assert samples["Restart"] == "on-failure" and "inspector-record.timer" in samples["Conflicts"]


def _seconds(value: str) -> float:
    span = re.fullmatch(r"(\d+)(s|min)", value)
    assert span is not None, f"not a time span in seconds or minutes: {value!r}"
    number, unit = span.groups()
    return float(number) * (60 if unit == "min" else 1)
