"""Every command prints in any locale: C, POSIX, and the legacy charsets servers still run
(ja_JP.eucJP, de_DE.ISO-8859-1), compiled here by glibc's localedef. A character the charset
lacks is printed as "?", the rest of the output is all there, and the exit status is the
command's own (diff: 1 for regressions), never 2 for an encoding error."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import fixture_root, inspector_bin

# name -> (glibc source, charmap, Python's codec for what the command prints)
LEGACY = {"ja_JP.eucJP": ("ja_JP", "EUC-JP", "euc_jp"),
          "de_DE.ISO-8859-1": ("de_DE", "ISO-8859-1", "latin-1")}
# label -> (LC_ALL, extra environment, the charset stdout is in). Under C and POSIX Python runs
# in UTF-8 mode (PEP 540) unless PYTHONUTF8=0 holds it to ASCII.
LOCALES = {"C": ("C", {}, "utf-8"), "POSIX": ("POSIX", {}, "utf-8"),
           "C, PYTHONUTF8=0": ("C", {"PYTHONUTF8": "0"}, "ascii"),
           **{name: (name, {}, codec) for name, (_s, _c, codec) in LEGACY.items()}}
# every command runs in these; POSIX is glibc's other name for C, the same interpreter state
# to the last stream handler (test_posix_is_the_c_locale_to_the_binary): C's runs stand for it
EVERY_COMMAND_LOCALES = [label for label in LOCALES if label != "POSIX"]


@pytest.fixture(scope="module")
def locpath(tmp_path_factory) -> Path:
    if not shutil.which("localedef") or not Path("/usr/share/i18n/locales/ja_JP").exists():
        pytest.fail("glibc's locale sources are needed (Debian: apt-get install locales)")
    dest = tmp_path_factory.mktemp("locales")
    for name, (source, charmap, _codec) in LEGACY.items():
        subprocess.run(["localedef", "-i", source, "-f", charmap, str(dest / name)],
                       capture_output=True, timeout=120)
        assert (dest / name / "LC_CTYPE").exists(), f"localedef -i {source} -f {charmap} failed"
    return dest


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory) -> tuple[Path, Path]:
    """Before: a healthy-ish flash host; after: the same name with a degraded md array."""
    work = tmp_path_factory.mktemp("snapshots")
    paths = []
    for name in ("flash-mixed", "storage-raid1-faulty"):
        out = work / f"{name}.json"
        res = subprocess.run([inspector_bin(), "snapshot", "--root", str(fixture_root(name)),
                              "-o", str(out)], capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        paths.append(out)
    return paths[0], paths[1]


def _env(label: str, locpath: Path) -> dict[str, str]:
    locale, extra, _charset = LOCALES[label]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LC_", "LANG", "PYTHONIO", "PYTHONUTF8"))}
    env.update(LC_ALL=locale, LOCPATH=str(locpath), COLUMNS="120", **extra)
    return env


def _run(args: list[str], label: str, locpath: Path) -> subprocess.CompletedProcess:
    return subprocess.run([inspector_bin(), *args], capture_output=True,
                          env=_env(label, locpath), timeout=120, stdin=subprocess.DEVNULL)


def _commands(snapshots: tuple[Path, Path]) -> dict[str, tuple[list[str], int]]:
    """name -> (arguments, expected status)."""
    before, after = snapshots
    flash = str(fixture_root("flash-mixed"))
    return {
        "bare (stdout not a terminal: the report)": ([], 0),
        "report": (["report"], 0),
        "report --root": (["--root", flash, "report", "--diagnose"], 0),
        "report --root xen": (["--root", str(fixture_root("xen-pv-guest")), "report"], 0),
        "diff with regressions": (["diff", str(before), str(after)], 1),
        "check": (["--root", flash, "check"], 2),
        "export": (["--root", flash, "export", "--prometheus"], 0),
        "fleet": (["fleet", str(before.parent)], 0),
        "files": (["files"], 0),
        "help": (["report", "--help"], 0),
    }


LIVE = {"bare (stdout not a terminal: the report)", "report"}


@pytest.mark.slow
def test_every_command_prints_whole_in_every_locale(locpath, snapshots):
    reference: dict[str, int] = {}
    failures = []
    commands = _commands(snapshots)
    # the 40 runs are independent: a few at a time (the results are read in a fixed order)
    with ThreadPoolExecutor(max_workers=4) as pool:
        runs = {(name, locale): pool.submit(_run, args, locale, locpath)
                for name, (args, _status) in commands.items()
                for locale in EVERY_COMMAND_LOCALES}
    for name, (_args, status) in commands.items():
        for locale in EVERY_COMMAND_LOCALES:
            res = runs[name, locale].result()
            err = res.stderr.decode("utf-8", "replace")
            if res.returncode != status or "internal error" in err or "Traceback" in err:
                failures.append(f"{locale} {name}: status {res.returncode}, {err[-300:]}")
                continue
            text = res.stdout.decode(LOCALES[locale][2])        # what the terminal gets: valid in its charset
            lines = len(text.splitlines())
            # the same number of lines in every locale: nothing cut off by a failed write (this
            # host's live report may change between runs: a line or two)
            slack = 3 if name in LIVE else 0
            if abs(lines - reference.setdefault(name, lines)) > slack:
                failures.append(f"{locale} {name}: {lines} lines, {reference[name]} under C")
    assert failures == []


def test_posix_is_the_c_locale_to_the_binary(locpath):
    """The binary's interpreter starts alike under POSIX and C (UTF-8 mode, the same stream
    encodings and error handlers: Inspector reads no locale variable itself) and a report
    prints the same bytes under both."""
    state = ("import sys; print(sys.flags.utf8_mode, sys.stdout.encoding, sys.stdout.errors, "
             "sys.stderr.encoding, sys.stderr.errors)")
    interpreter = Path(inspector_bin()).parent / "python"
    c, posix = (subprocess.run([str(interpreter), "-c", state], capture_output=True, text=True,
                               env=_env(label, locpath), timeout=60).stdout
                for label in ("C", "POSIX"))
    assert c == posix and c.startswith("1 utf-8 "), (c, posix)
    args = ["--root", str(fixture_root("flash-mixed")), "report"]
    c_run, posix_run = _run(args, "C", locpath), _run(args, "POSIX", locpath)
    assert c_run.returncode == posix_run.returncode == 0, posix_run.stderr
    assert posix_run.stdout == c_run.stdout and "\u00b7".encode() in c_run.stdout


def test_a_character_the_charset_lacks_is_replaced(locpath, snapshots):
    """The flash host's report has characters EUC-JP, Latin-1 and ASCII lack: "?" stands in."""
    args = ["--root", str(fixture_root("flash-mixed")), "report"]
    utf8 = _run(args, "C", locpath).stdout.decode("utf-8")
    eucjp = _run(args, "ja_JP.eucJP", locpath).stdout.decode("euc_jp")
    lacking = {c for c in utf8 if not _encodes(c, "euc_jp")}
    assert lacking, "the fixture's report has no character EUC-JP lacks: the test proves nothing"
    assert not lacking & set(eucjp) and "?" in eucjp
    for label in ("de_DE.ISO-8859-1", "C, PYTHONUTF8=0"):
        text = _run(args, label, locpath).stdout.decode(LOCALES[label][2])
        assert len(text.splitlines()) == len(utf8.splitlines()) and "?" in text, label


def _encodes(char: str, codec: str) -> bool:
    try:
        char.encode(codec)
        return True
    except UnicodeEncodeError:
        return False


def test_the_terminal_ui_draws_in_a_legacy_charset(locpath, tmp_path):
    """The TUI under ja_JP.eucJP in a real terminal (tmux): what the charset lacks (box
    corners, bars, "·") is one "?" per cell, not a six-character escape that pushes every line
    out of shape, and q still quits with 0."""
    socket = f"inspector-locale-{os.getpid()}"
    done = tmp_path / "status"
    command = (f"env LC_ALL=ja_JP.eucJP LOCPATH={locpath} {inspector_bin()}; "
               f"echo $? > {done}")
    tmux = ["tmux", "-L", socket]
    subprocess.run([*tmux, "new-session", "-d", "-x", "120", "-y", "40", command], check=True,
                   timeout=10)
    try:
        screen = ""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            screen = subprocess.run([*tmux, "capture-pane", "-p"], capture_output=True,
                                    text=True, timeout=10).stdout
            if "Overview" in screen and "CPU every" in screen:
                break
            time.sleep(0.5)
        assert "Overview" in screen and "CPU every" in screen, screen
        assert "\\u" not in screen and "\\x" not in screen, screen
        assert re.search(r"^ live \? discovered \d\d:\d\d", screen, re.MULTILINE), screen  # "·"
        assert max(len(line) for line in screen.splitlines()) <= 120
        subprocess.run([*tmux, "send-keys", "q"], check=True, timeout=10)
        deadline = time.monotonic() + 30
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert done.read_text().strip() == "0"
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True, timeout=10)
