"""The wheel installs widgets/ and probes/ as inspector.widgets / inspector.probes only."""
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_wheel_has_no_top_level_widgets_or_probes(tmp_path):
    res = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation",
                          "--outdir", str(tmp_path), str(REPO)],
                         capture_output=True, text=True, timeout=240)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    wheel = next(tmp_path.glob("live_inspector-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names}
    assert "widgets" not in tops and "probes" not in tops
    assert "inspector/probes/latency.py" in names and "inspector/widgets/__init__.py" in names
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "inspector = inspector.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()
