"""The wheel installs widgets/ and probes/ as inspector.widgets / inspector.probes only, with
the IO probe's C loop compiled in; the sdist carries its source so `pip install` can build it."""
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def source_copy(dest: Path) -> Path:
    """The checkout's files (tracked and new, not ignored) copied to `dest`: a build there sees
    no stale build/ directory (a module turned into a package left its old .py in the wheel)."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout.split("\0")
    for name in filter(None, files):
        src = REPO / name
        if src.is_file() and not src.is_symlink():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
        elif src.is_symlink():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            (dest / name).symlink_to(os.readlink(src))
    return dest


def build(kind: str, outdir: Path, pattern: str) -> Path:
    """`python -m build --wheel|--sdist` of a copy of this checkout (no isolation: no network)."""
    tree = source_copy(outdir / "src")
    res = subprocess.run([sys.executable, "-m", "build", kind, "--no-isolation",
                          "--outdir", str(outdir), str(tree)],
                         capture_output=True, text=True, timeout=240)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return next(outdir.glob(pattern))


def test_every_module_is_in_the_wheel_and_nothing_else(tmp_path):
    """Every .py of inspector/, probes/ and widgets/ under its installed name, and no other:
    an explicit package list that misses a new package installs a broken Inspector with pipx
    while the editable install of the tests works."""
    wheel = build("--wheel", tmp_path, "live_inspector-*.whl")
    in_wheel = {n for n in zipfile.ZipFile(wheel).namelist() if n.endswith((".py", ".pyi"))}
    src = tmp_path / "src"
    expected = set()
    for top, installed in (("inspector", "inspector"), ("probes", "inspector/probes"),
                           ("widgets", "inspector/widgets")):
        for path in (src / top).rglob("*.py*"):
            if path.suffix in (".py", ".pyi") and "__pycache__" not in path.parts:
                expected.add(f"{installed}/{path.relative_to(src / top).as_posix()}")
    assert expected - in_wheel == set(), "modules missing from the wheel (pyproject packages)"
    assert in_wheel - expected == set(), "modules in the wheel without a source"


def test_wheel_has_no_top_level_widgets_or_probes(tmp_path):
    wheel = build("--wheel", tmp_path, "live_inspector-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names}
    assert "widgets" not in tops and "probes" not in tops
    assert "inspector/probes/latency.py" in names and "inspector/widgets/__init__.py" in names
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "inspector = inspector.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()
    # the IO probe's C request loop, compiled for this interpreter
    assert any(n.startswith("inspector/probes/_ioloop.") and n.endswith(".so") for n in names)
    # what `inspector files` points at: man page, completions, systemd units
    from inspector.shipped import SHIPPED
    for name, (path, _) in SHIPPED.items():
        assert any(n == f"inspector/{path}" or n.startswith(f"inspector/{path}/")
                   for n in names), name
    assert "inspector/share/systemd/inspector-record.timer" in names


def test_sdist_carries_the_c_loop_source(tmp_path):
    sdist = build("--sdist", tmp_path, "live_inspector-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert "probes/io/_ioloop.c" in names and "pyproject.toml" in names
