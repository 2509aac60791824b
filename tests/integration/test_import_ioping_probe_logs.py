"""`inspector history import-ioping` reads logs of `inspector probe io` runs, not only ioping's."""
import os
import subprocess
import time

from conftest import inspector_bin
from inspector.record.ioping_log import parse_ioping_log


def test_a_log_of_probe_io_runs_imports_like_one_of_ioping(tmp_path):
    # the percentile line, "2 workers, O_DIRECT", the worker lines and the interval samples
    # made every block of inspector's own output "unrecognised ioping output": skipped
    data = tmp_path / "data.bin"
    data.write_bytes(os.urandom(2 << 20))
    blocks = []
    for args in (["-c", "50", "-j", "2"], ["-w", "0.6"], ["-c", "20", "--cached"],
                 ["-c", "3", "-i", "0.01"]):
        proc = subprocess.run([inspector_bin(), "probe", "io", str(data), *args],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        blocks.append((args, proc.stdout))
    epoch = int(time.time())
    text = "".join(f"## {epoch + i * 60}\n{out}" for i, (_, out) in enumerate(blocks))
    log = parse_ioping_log(text)
    assert log.problems == [] and log.warnings == []
    assert len(log.runs) == 4
    for run, (args, out) in zip(log.runs, blocks):
        completed = next(line for line in out.splitlines() if " requests completed in " in line)
        assert run.requests is not None, args
        assert completed.startswith(f"{run.requests} requests") or run.requests >= 1000, args
        assert run.target == str(data) and run.avg_us and run.iops and run.wall_iops
    # `date +%s` headers are unix time
    assert [r.timestamp for r in log.runs] == [epoch + i * 60 for i in range(4)]
    assert log.runs[0].requests == 48          # 50 minus a warm-up per worker
