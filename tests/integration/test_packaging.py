"""The wheel installs widgets/ and probes/ as inspector.widgets / inspector.probes only, with
the IO probe's C loop compiled in; the sdist carries its source so `pip install` can build it.
The README's install on Debian 12 (its pipx 1.1 and python3 3.11.2) works: the binary runs,
in the sandbox of the shipped systemd units too, and `man` finds the page."""
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def source_copy(dest: Path) -> Path:
    """The checkout's files (tracked and new, not ignored) copied to `dest`: a build there sees
    no stale build/ directory (a module turned into a package left its old .py in the wheel).
    All but tests/: 95 % of the files (2.5 s of CPU to copy), none of them in the sdist."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout.split("\0")
    for name in filter(None, files):
        if name.startswith("tests/"):
            continue
        src = REPO / name
        if src.is_file() and not src.is_symlink():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
        elif src.is_symlink():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            (dest / name).symlink_to(os.readlink(src))
    return dest


def build(kind: str, outdir: Path, pattern: str) -> Path:
    """`python -m build [--wheel|--sdist]` of a copy of this checkout (no isolation: no
    network); with neither, the sdist and then a wheel built from it."""
    tree = source_copy(outdir / "src")
    res = subprocess.run([sys.executable, "-m", "build", *filter(None, [kind]), "--no-isolation",
                          "--outdir", str(outdir), str(tree)],
                         capture_output=True, text=True, timeout=240)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return next(outdir.glob(pattern))


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path]:
    """(sdist, wheel) of one `python -m build`: the sdist first, then the wheel built from that
    sdist, as pip builds it from PyPI (a build takes 10-30 s: once for the tests below)."""
    outdir = tmp_path_factory.mktemp("dist")
    build("", outdir, "live_inspector-*.tar.gz")
    return next(outdir.glob("live_inspector-*.tar.gz")), next(outdir.glob("live_inspector-*.whl"))


@pytest.fixture(scope="module")
def wheel(built) -> Path:
    return built[1]


def test_every_module_is_in_the_wheel_and_nothing_else(wheel):
    """Every .py of inspector/, probes/ and widgets/ under its installed name, and no other:
    an explicit package list that misses a new package installs a broken Inspector with pipx
    while the editable install of the tests works."""
    in_wheel = {n for n in zipfile.ZipFile(wheel).namelist() if n.endswith((".py", ".pyi"))}
    src = wheel.parent / "src"
    expected = set()
    for top, installed in (("inspector", "inspector"), ("probes", "inspector/probes"),
                           ("widgets", "inspector/widgets")):
        for path in (src / top).rglob("*.py*"):
            if path.suffix in (".py", ".pyi") and "__pycache__" not in path.parts:
                expected.add(f"{installed}/{path.relative_to(src / top).as_posix()}")
    assert expected - in_wheel == set(), "modules missing from the wheel (pyproject packages)"
    assert in_wheel - expected == set(), "modules in the wheel without a source"


def test_wheel_has_no_top_level_widgets_or_probes(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names}
    assert "widgets" not in tops and "probes" not in tops
    assert "inspector/probes/latency.py" in names and "inspector/widgets/__init__.py" in names
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "inspector = inspector.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()
    # the IO probe's C request loop, compiled for this interpreter
    assert any(n.startswith("inspector/probes/io/_ioloop.") and n.endswith(".so") for n in names)
    # the man page also as a data file, where man looks from PREFIX/bin on PATH
    assert any(n.endswith(".data/data/share/man/man1/inspector.1") for n in names)
    # what `inspector files` points at: man page, completions, systemd units
    from inspector.shipped import SHIPPED
    for name, (path, _) in SHIPPED.items():
        assert any(n == f"inspector/{path}" or n.startswith(f"inspector/{path}/")
                   for n in names), name
    assert "inspector/share/systemd/inspector-record.timer" in names


def test_rules_tests_and_dashboard_ship_in_the_wheel(wheel):
    """The monitoring files (alert rules, their unit tests, the dashboard) as package data."""
    monitoring = REPO / "inspector" / "monitoring"
    shipped = {p.name for p in monitoring.iterdir()}
    assert {"inspector-alerts.yml", "inspector-alerts.test.yml", "inspector-dashboard.json"} <= shipped
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {f"inspector/monitoring/{name}" for name in shipped} <= names

def test_sdist_carries_the_c_loop_source(built):
    sdist = built[0]
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert "probes/io/_ioloop.c" in names and "pyproject.toml" in names


# ------------------------------------------------------------- pipx on Debian's own Python
DEBIAN_PYTHON = "/usr/bin/python3"
UNITS = REPO / "inspector" / "share" / "systemd"
# what the units' ProtectHome=yes and PrivateTmp=yes hide from the service
HIDDEN_BY_UNITS = ("/home", "/root", "/run/user", "/tmp", "/var/tmp")


def _run(argv: list[str], env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def _in_unit_sandbox(argv: list[str]) -> subprocess.CompletedProcess:
    """argv run as the shipped units' sandbox shows the file system: /home, /root, /run/user,
    /tmp and /var/tmp empty (a private mount namespace with a tmpfs on each)."""
    mounts = "; ".join(f"mount -t tmpfs none {d}" for d in HIDDEN_BY_UNITS if os.path.isdir(d))
    script = f'{mounts}; exec "$@"'
    return _run(["unshare", "--mount", "--propagation", "private", "sh", "-ec", script, "sh",
                 *argv])


@pytest.fixture(scope="module")
def pipx_install(built, tmp_path_factory):
    """`PIPX_HOME=... PIPX_BIN_DIR=... pipx install` as the README says for Debian 12, with
    Debian's pipx and its python3, into a prefix under /opt (outside what the units hide,
    as /opt/pipx is); removed afterwards. Given a path, pipx 1.1 builds the package twice (the
    first time in a venv it throws away, only to learn its name): given the name, with the
    sdist of `built` alone where pip looks and --no-binary, Debian's python3 builds the C loop
    once, from the files `pipx install .` builds from (those the sdist carries)."""
    pipx = shutil.which("pipx")
    if pipx is None or not os.path.exists(DEBIAN_PYTHON):
        pytest.fail("Debian's pipx and python3 are needed (apt-get install pipx; make test does)")
    version = _run([DEBIAN_PYTHON, "-c", "import sys; print(sys.version.split()[0])"]).stdout
    assert version.startswith("3.11."), version
    sdist = built[0]
    links = tmp_path_factory.mktemp("pipx-links")   # the sdist alone: a wheel here would be
    shutil.copy2(sdist, links)                       # installed as it is, not built
    name, release = sdist.name.removesuffix(".tar.gz").rsplit("-", 1)
    base = Path(tempfile.mkdtemp(prefix="inspector-pipx-test-", dir="/opt"))
    env = {"PIPX_HOME": str(base / "pipx"), "PIPX_BIN_DIR": str(base / "bin")}
    try:
        res = _run([pipx, "install", "--python", DEBIAN_PYTHON,
                    "--pip-args", f"--find-links {links} --no-binary {name}",
                    f"{name}=={release}"], env=env, timeout=900)
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
        venv = base / "pipx" / "venvs" / "live-inspector"
        # this checkout's code, not a namesake's from an index
        installed = next(venv.glob("lib/python3*/site-packages/inspector/cli.py"))
        assert installed.read_bytes() == (REPO / "inspector" / "cli.py").read_bytes()
        yield base, venv
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.slow
def test_pipx_install_runs_on_debians_python(pipx_install):
    base, venv = pipx_install
    exe = base / "bin" / "inspector"
    res = _run([str(exe), "-V"])
    assert res.returncode == 0 and res.stdout.strip() == "inspector 0.1.0", res.stderr
    python = venv / "bin" / "python"
    assert os.path.realpath(python).startswith("/usr/bin/python3"), os.path.realpath(python)
    res = _run([str(python), "-I", "-c", "import sys, inspector.probes.io._ioloop as c; "
                                         "print(sys.version.split()[0], c.__file__)"])
    assert res.returncode == 0 and res.stdout.startswith("3.11.2 "), res.stderr  # C loop built
    res = _run([str(exe), "report", "--section", "storage"])
    assert res.returncode == 0, res.stderr


@pytest.mark.slow
def test_man_finds_the_page_after_pipx_install(pipx_install):
    base, venv = pipx_install
    page = venv / "share" / "man" / "man1" / "inspector.1"
    assert page.is_file()                                   # the wheel's data file
    man = {"MANPAGER": "cat", "PAGER": "cat", "MANWIDTH": "80"}
    res = _run(["man", "-w", "inspector"], env={**man, "MANPATH": str(venv / "share" / "man")})
    assert res.stdout.strip() == str(page), res.stdout + res.stderr
    # no MANPATH: man-db derives PREFIX/share/man from PREFIX/bin on PATH (pip into a venv)
    res = _run(["man", "-aw", "inspector"],
               env={**man, "PATH": f"{venv / 'bin'}:/usr/bin:/bin", "MANPATH": ""})
    assert str(page) in res.stdout.split(), res.stdout + res.stderr
    # pipx 1.1 links only the binary: --install-man copies the page where man looks
    res = _run([str(base / "bin" / "inspector"), "files", "--install-man",
                "--man-dir", str(base / "man")])
    assert res.returncode == 0 and res.stdout.strip() == str(base / "man/man1/inspector.1")
    assert oct((base / "man/man1/inspector.1").stat().st_mode & 0o777) == "0o644"
    res = _run(["man", "inspector"], env={**man, "MANPATH": str(base / "man")})
    assert res.returncode == 0, res.stderr
    for section in ("ENVIRONMENT", "FILES", "SEE ALSO", "EXIT STATUS"):
        assert f"\n{section}\n" in res.stdout, section


@pytest.mark.slow
def test_units_verify_and_run_against_the_installed_binary(pipx_install, tmp_path):
    """systemd-analyze verify with ExecStart= naming the real installed path (no complaint at
    all), and the binary runs when /home, /root and /tmp are hidden as the units hide them,
    where a binary under /root (pipx's default for root) cannot even start."""
    base, _venv = pipx_install
    exe = base / "bin" / "inspector"
    units = tmp_path / "units"
    units.mkdir()
    for unit in UNITS.iterdir():
        text = unit.read_text()
        assert "ExecStart=/usr/local/bin/inspector " in text or unit.suffix == ".timer"
        (units / unit.name).write_text(text.replace("/usr/local/bin/inspector", str(exe)))
    res = _run(["systemd-analyze", "verify", "--man=no", *sorted(map(str, units.iterdir()))])
    assert res.returncode == 0 and (res.stdout + res.stderr).strip() == "", res.stdout + res.stderr
    res = _in_unit_sandbox([str(exe), "export", "--prometheus"])
    assert res.returncode == 0 and "inspector_build_info" in res.stdout, res.stderr
    # the control: the same binary reached through /root is gone in that sandbox
    root_dir = Path(tempfile.mkdtemp(prefix="inspector-test-", dir="/root"))
    try:
        (root_dir / "inspector").symlink_to(exe)
        assert _run([str(root_dir / "inspector"), "-V"]).returncode == 0
        res = _in_unit_sandbox([str(root_dir / "inspector"), "-V"])
        assert res.returncode == 127, (res.returncode, res.stderr)     # systemd: 203/EXEC
    finally:
        shutil.rmtree(root_dir)
