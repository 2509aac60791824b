"""lifecycle.terminate_children does not wait for children that cannot die: a reader asleep in
the kernel on a mount that never answers (psutil's 'disk-sleep') ignores SIGTERM and SIGKILL
until its read returns. The TUI's exit waited for such readers twice (1 s, then 2 s: SIGTERM
with a hung mount took 3.2 s); the children that can end are still waited for and reaped."""
from __future__ import annotations

import json
import sys
import textwrap

import pytest

from conftest import require_root
from hung_mount import run_hung
from slowness import slack

pytestmark = [pytest.mark.root, pytest.mark.slow]


@pytest.fixture(autouse=True)
def _root():
    require_root()

# A parent with one child stuck reading the silent mount and one plain child; prints how long
# terminate_children took, and whether the plain child was reaped (waitpid says it is gone).
SCRIPT = textwrap.dedent("""
    import json, os, subprocess, sys, time
    import psutil
    from inspector.tui.lifecycle import terminate_children
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # our output's end
    stuck = subprocess.Popen([sys.executable, "-c", "open(sys.argv[1]).read()", sys.argv[1]],
                             **quiet)
    plain = subprocess.Popen(["sleep", "60"], **quiet)
    # waiting for the answer to its open (asleep interruptibly until a fatal signal comes:
    # then uninterruptibly, as the request is in the server's hands)
    while "fuse" not in open(f"/proc/{stuck.pid}/wchan").read() \
            and "request_wait_answer" not in open(f"/proc/{stuck.pid}/wchan").read():
        time.sleep(0.02)
    start = time.monotonic()
    found = terminate_children()
    took = time.monotonic() - start
    print(json.dumps({"took": took, "found": sorted(found) == sorted([stuck.pid, plain.pid]),
                      "plain_reaped": plain.poll() is not None,
                      "stuck_status": psutil.Process(stuck.pid).status()}))
""")


@pytest.mark.serial
def test_a_child_stuck_in_the_kernel_is_not_waited_for(tmp_path):
    target = tmp_path / "file"
    target.write_text("x")
    res = run_hung([str(target)], [sys.executable, "-c", SCRIPT.replace("sys.argv[1]",
                                                                         repr(str(target)))])
    assert not res["hung"] and res["status"] == 0, res
    out = json.loads(res["stdout"])
    print("terminate_children took", round(out["took"], 3), "s")
    assert out["found"] and out["plain_reaped"], out
    assert out["stuck_status"] == "disk-sleep", out
    assert out["took"] < slack(0.3), out
    assert res["stuck_after_release"] == 0, res      # it does die once the read returns
