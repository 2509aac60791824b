"""inspector.toml: defaults, overrides (the XDG file over /etc's), and one-line errors for a
bad key, type or value; the real binary refuses a bad file in one line (top, check)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from inspector.config import ConfigError, LiveThresholds, defaults_table, load_config


def test_defaults_without_files(tmp_path):
    config = load_config([str(tmp_path / "none.toml")])
    assert config.live == LiveThresholds() and config.files == ()
    assert ("live.disk", "util_pct", 90.0) in defaults_table()


def test_later_files_override_key_by_key(tmp_path):
    system, user = tmp_path / "etc.toml", tmp_path / "user.toml"
    system.write_text("[live]\nwindow_s = 8\n[live.cpu]\nsteal_pct = 5\niowait_pct = 30\n")
    user.write_text("[live.cpu]\nsteal_pct = 2.5\n[live.nic]\ncarrier_flaps = 3\n")
    live = load_config([str(system), str(user)]).live
    assert live.window_s == 8 and live.cpu.steal_pct == 2.5 and live.cpu.iowait_pct == 30
    assert live.nic.carrier_flaps == 3 and live.disk.util_pct == 90


@pytest.mark.parametrize("text, message", [
    ("[live.cpu]\nstael_pct = 5\n", "[live.cpu] unknown key 'stael_pct' (known: busy_pct"),
    ("[live.cpu]\nsteal_pct = 'high'\n", "[live.cpu] steal_pct must be a number >= 0, not 'high'"),
    ("[live.cpu]\nsteal_pct = -1\n", "must be a number >= 0, not -1"),
    ("[live.nic]\ncarrier_flaps = 1.5\n", "carrier_flaps must be a whole number >= 0"),
    ("[live]\ncpu = 3\n", "[live.cpu] must be a table"),
    ("[probes]\nx = 1\n", "unknown table or key 'probes'"),
    ("[live\n", "not valid TOML"),
])
def test_bad_files_give_one_line(tmp_path, text, message):
    path = tmp_path / "inspector.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as exc:
        load_config([str(path)])
    assert message in str(exc.value) and str(path) in str(exc.value)
    assert "\n" not in str(exc.value)


def test_the_binary_says_so_in_one_line(tmp_path):
    (tmp_path / "inspector").mkdir()
    (tmp_path / "inspector" / "inspector.toml").write_text("[live.disk]\nutil = 80\n")
    env = {"XDG_CONFIG_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    exe = [sys.executable, "-m", "inspector"]
    top = subprocess.run(exe + ["top", "--count", "1"], capture_output=True, text=True,
                         env=env, timeout=60)
    assert top.returncode == 2 and top.stdout == ""
    assert top.stderr.count("\n") == 1 and "[live.disk] unknown key 'util'" in top.stderr
    check = subprocess.run(exe + ["check", "--live", "1s"], capture_output=True, text=True,
                           env=env, timeout=60)
    assert check.returncode == 3 and check.stdout.startswith("INSPECTOR UNKNOWN - ")
    assert "unknown key 'util'" in check.stdout


def test_the_readme_lists_every_key_with_its_default():
    from pathlib import Path
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for table, key, value in defaults_table():
        shown = f"{value:g}" if isinstance(value, float) else str(value)
        assert f"{key} = {shown}" in readme, (table, key)
