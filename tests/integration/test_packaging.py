"""The wheel installs widgets/ and probes/ as inspector.widgets / inspector.probes only, with
the IO probe's C loop compiled in; the sdist carries its source so `pip install` can build it."""
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def build(kind: str, outdir: Path, pattern: str) -> Path:
    """`python -m build --wheel|--sdist` of this checkout (no isolation: no network)."""
    res = subprocess.run([sys.executable, "-m", "build", kind, "--no-isolation",
                          "--outdir", str(outdir), str(REPO)],
                         capture_output=True, text=True, timeout=240)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return next(outdir.glob(pattern))


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
    assert "probes/_ioloop.c" in names and "pyproject.toml" in names
