"""Shared test helpers: fixture roots, running the CLI in-process or as the real binary."""
from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

import slowness

# fixture modules, for every test: a test names the fixture, it imports nothing
# (memcached, silent_server; glibc_locales; tmux); CPU per test when INSPECTOR_TEST_CPU_LOG is set
pytest_plugins = ["memcached_server", "locale_data", "tmux_session", "cpu_accounting"]

TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "fixtures"
ROOTS = FIXTURES / "roots"
VENV_BIN = Path(sys.executable).parent


def fixture_root(name: str) -> Path:
    path = ROOTS / name
    assert path.is_dir(), f"missing fixture root {path}"
    return path


def replace_section(monkeypatch, name: str, **fields) -> None:
    """This test's stand-in for a section's collector or rules (fields of
    inspector.report.sections.Section): the table holds the functions themselves, so patching the
    module's `collect` or `rules` would not reach it."""
    import dataclasses

    from inspector.report import sections
    monkeypatch.setitem(sections.BY_NAME, name,
                        dataclasses.replace(sections.BY_NAME[name], **fields))


class CliResult:
    def __init__(self, status: int, out: str, err: str):
        self.status, self.out, self.err = status, out, err

    def json(self):
        return json.loads(self.out)


def run_cli(*args: str) -> CliResult:
    """Run `inspector ARGS` in-process (fast); SystemExit from argparse is caught."""
    from inspector.cli import main
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            status = main(list(args))
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 2
    return CliResult(status, out.getvalue(), err.getvalue())


def inspector_bin() -> str:
    exe = VENV_BIN / "inspector"
    return str(exe) if exe.exists() else shutil.which("inspector") or "inspector"


def run_bin(*args: str, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
    """Run the installed `inspector` binary as a user would."""
    env = {**os.environ, "COLUMNS": "200", **kw.pop("env", {})}
    return subprocess.run([inspector_bin(), *args], capture_output=True, text=True,
                          timeout=timeout, env=env, **kw)


def signal_when(argv: list[str], ready: Callable[[subprocess.Popen], object],
                signum: int = signal.SIGINT, timeout: float = 20,
                env: dict | None = None) -> tuple[int, str, str, float]:
    """Run a command as from a terminal (SIGINT not ignored) and send it `signum` once
    `ready(proc)` returns (the moment the test needs, read from what the command does: a fixed
    pause was too short on a loaded machine and mostly waiting otherwise). Returns its status,
    stdout, stderr and the seconds from the signal to its exit; killed after `timeout`."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        ready(proc)
        assert proc.poll() is None, proc.communicate()
        sent = time.monotonic()
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, err, time.monotonic() - sent


def require_root() -> None:
    """Tests that need root fail loudly (never skip silently) when run unprivileged."""
    if os.geteuid() != 0:
        pytest.fail("this test needs root (loop devices / namespaces); run the suite as root")


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def data_file(tmp_path):
    """A 4 MiB file of random bytes for IO probe tests (a test module may define its own)."""
    path = tmp_path / "data.bin"
    path.write_bytes(os.urandom(4 << 20))
    return str(path)


# Linux keeps the largest RSS a process had across execve, and a child forked from pytest
# starts with pytest's RSS as its high-water mark: ru_maxrss of a direct child reads as large
# as the test process (400 MB late in a suite run), whatever the child did. A small launcher
# forks and execs the command from its own few MB, so the figure is the command's own.
_PEAK_RSS_LAUNCHER = (
    "import os, sys\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    os.execvp(sys.argv[1], sys.argv[1:])\n"
    "_, status, usage = os.wait4(pid, 0)\n"
    "sys.stderr.write(f'\\npeak-rss-kb {usage.ru_maxrss}\\n')\n"
    "sys.exit(os.waitstatus_to_exitcode(status))\n")


def popen_measuring_peak_rss(argv: list[str], **kw) -> subprocess.Popen:
    """Popen of `argv` through the launcher; its stderr (text) ends with the peak RSS line,
    read by `peak_rss_kb`."""
    return subprocess.Popen([sys.executable, "-c", _PEAK_RSS_LAUNCHER, *argv],
                            stderr=subprocess.PIPE, text=True, **kw)


def peak_rss_kb(stderr: str) -> int:
    """The command's own peak RSS in KiB, from the stderr of `popen_measuring_peak_rss`."""
    return int(stderr.rsplit("peak-rss-kb ", 1)[1].split()[0])


def own_peak_rss_snippet() -> str:
    """Python code printing the running process's own peak RSS (KiB) from VmHWM, which, unlike
    ru_maxrss, starts afresh at execve."""
    return ("print([l for l in open('/proc/self/status') if l.startswith('VmHWM')][0]"
            ".split()[1])")


@pytest.fixture
def tiny_fs(tmp_path):
    """A 2 MiB tmpfs, for the full-disk tests."""
    require_root()
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill_until_full(directory) -> str:
    """Write a file until the filesystem says ENOSPC; returns its path."""
    import errno
    path = os.path.join(directory, "filler")
    with open(path, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    return path


@pytest.fixture
def hang(monkeypatch):
    """hang(module, name): that function blocks until the test ends (a read that never
    answers, in process); returns its call counts."""
    release = threading.Event()
    calls: dict[str, int] = {}

    def install(module, name: str) -> dict[str, int]:
        real = getattr(module, name)
        calls[name] = 0

        def blocked(*args, **kwargs):
            calls[name] += 1
            release.wait(30)
            return real(*args, **kwargs)
        monkeypatch.setattr(module, name, blocked)
        return calls
    yield install
    release.set()


def pytest_runtest_setup(item):
    slowness.used.clear()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test that scaled its bounds by the machine's slowness (tests/slowness.py) says
    by how much, beside its assertion."""
    outcome = yield
    report = outcome.get_result()
    if report.failed and call.when == "call" and slowness.used:
        report.sections.append(("slowness", "\n".join(str(m) for m in slowness.used)))


def pytest_collection_finish(session: pytest.Session) -> None:
    """The collected tests and their modules live as long as the session: moved out of the
    collector's sight, a full collection no longer walks them (tests/unit: 2.2 -> 0.6 s of GC),
    nor writes to their pages (shared with every child a test forks, until it exits)."""
    import gc
    gc.freeze()


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """`-m serial` (make test's second part) imports only the modules that mark a test serial:
    importing and collecting all ~2,900 tests to keep ~100 cost 5 s of a part that runs alone."""
    if (config.getoption("markexpr") == "serial" and collection_path.suffix == ".py"
            and collection_path.name.startswith("test_")):
        return b"mark.serial" not in collection_path.read_bytes()
    return None


# session fixtures that cost seconds of CPU (glibc's locales compiled): one worker builds them
_SHARED_SESSION_FIXTURES = {"glibc_locales"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Under `make test` (xdist, --dist loadgroup) the tests that share a fixture wider than one
    test (a module's sosreport, wheel, 199k-member archive, sshd; the compiled locales) run on
    one worker, so it is built once and not once per worker: on 2 cores the copies were CPU
    taken from the rest of the suite. Tests that share nothing still spread one by one."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            continue
        groups = set()
        for name, defs in info.name2fixturedefs.items():
            scope = defs[-1].scope if defs else "function"
            if scope in ("module", "package", "class"):
                groups.add(item.nodeid.split("::", 1)[0])
            elif scope == "session" and name in _SHARED_SESSION_FIXTURES:
                groups.add(name)
        for group in sorted(groups):
            item.add_marker(pytest.mark.xdist_group(group))
