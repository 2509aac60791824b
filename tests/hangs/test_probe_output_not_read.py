"""`probe io -w 3s` whose standard output is a pipe nobody reads: the prints filled the pipe,
blocked, and the command stayed alive as long as the reader slept (25 s and more). Now it ends
within its bound plus a 2 s grace for the reader, says what it dropped, and a reader that does
read still gets every line. The real binary, real pipes."""
from __future__ import annotations

import os
import re
import subprocess
import time

from conftest import inspector_bin
from inspector.commands.bounded_stdout import GRACE_S

SLACK = 5.0        # start-up, the probe's set-up and its stop, beside two busy loops


def test_a_reader_that_never_reads_does_not_hold_the_probe(tmp_path):
    read_end, write_end = os.pipe()        # held open here, never read
    try:
        started = time.monotonic()
        proc = subprocess.Popen([inspector_bin(), "probe", "io", "-w", "3s", "-i", "1ms",
                                 str(tmp_path)], stdout=write_end, stderr=subprocess.PIPE,
                                text=True)
        os.close(write_end)
        try:
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        took = time.monotonic() - started
    finally:
        os.close(read_end)
    assert proc.returncode == 0, err
    assert took <= 3 + GRACE_S + SLACK, f"ended after {took:.1f} s"
    assert re.search(r"standard output not read for 2 s after the run: \d+ writes dropped",
                     err), err


def test_a_reader_that_reads_gets_every_line(tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    out = subprocess.run(f"{inspector_bin()} probe io -w 1s -i 2ms {target} | cat",
                         shell=True, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    numbers = [int(m) for m in re.findall(r"request=(\d+) time=", out.stdout)]
    assert numbers and numbers == list(range(1, len(numbers) + 1)), out.stdout[-500:]
    completed = re.search(r"(\d+) requests completed", out.stdout)
    assert completed and int(completed.group(1)) <= len(numbers), out.stdout[-500:]
    assert "dropped" not in out.stderr
