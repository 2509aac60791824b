"""Runs from the Probes screen of the real binary in tmux (issue 20): a refusing and a silent
nameserver show as refused and timeout, as the CLI says them; fifty runs in one session keep
the UI's memory flat; probes given on the command line start at once, in order, without a
question (issue 26). (Throughput under screen switching: test_tui_probes_tmux.py.)"""
from __future__ import annotations

import os
import re
import subprocess
import time

from conftest import inspector_bin
from dns_responders import Responder, closed_port

# the Probes form's hint while a field is edited (Enter edits, then Enter starts, otherwise)
EDITING = "Enter starts · Esc done"


def test_refusing_and_silent_nameservers_are_errors_as_the_cli_says(tmux):
    silent = Responder("127.0.0.3", 0, "silent")
    refused_at = closed_port("127.0.0.2")
    try:
        servers = f"{refused_at},{silent.server}"
        cli = subprocess.run([inspector_bin(), "probe", "dns", "--server", refused_at,
                              "--server", silent.server, "--timeout", "1"],
                             capture_output=True, text=True, timeout=60)
        assert re.search(re.escape(refused_at) + r"\s+refused", cli.stdout), cli.stdout
        assert re.search(re.escape(silent.server) + r"\s+timeout", cli.stdout), cli.stdout
        tmux.start("", 160, 40)
        tmux.wait(lambda s: "1 Overview" in s, "the overview")
        tmux.keys("6")
        tmux.wait(lambda s: "Enter starts" in s, "the probe form")
        tmux.keys("BTab")                      # from the target to the kind
        tmux.keys("Enter")                     # opens the kind menu: IO, memcached, DNS
        tmux.wait(lambda s: "▲" in s and re.search(r"▊\s+DNS\s+▎", s) is not None,
                  "the kind menu open")
        tmux.keys("Down", "Down", "Enter")
        tmux.wait(lambda s: "resolv.conf, or ADDR" in s, "the DNS form")
        tmux.keys("n")                         # the target, edited, wherever the focus is
        tmux.wait(lambda s: EDITING in s, "the target edited")
        tmux.keys("C-u")
        tmux.keys("-l", servers)
        tmux.keys("Tab", "C-u")                # the seconds, edited too
        tmux.keys("-l", "3")
        tmux.keys("Enter")
        screen = tmux.wait(lambda s: re.search(r"#1\s+dns \S+\s+failed", s) is not None,
                           "the run failed", timeout=30)
        assert f"{refused_at} refused" in screen and f"{silent.server} timeout" in screen, screen
        tmux.keys("5")
        screen = tmux.wait(lambda s: "probe  #1 failed" in s, "the DNS screen's probe line")
        assert f"{refused_at} refused" in screen and f"{silent.server} timeout" in screen, screen
        assert not re.search(re.escape(refused_at) + r" \d+\.\d ms", screen)
        tmux.keys("q")
    finally:
        silent.close()


def test_probes_on_the_command_line_start_in_order_without_a_keypress(tmux, memcached):
    """`inspector --probe A --probe B`: the command line was the confirmation. Both runs load
    their server (memcached's own counters) with no key sent; the first does not wait for the
    second; q then quits (a dialog swallowed it)."""
    first, second = memcached(), memcached()
    tmux.start(f"--probe memcached:{first.address} --probe memcached:{second.address} "
               "--probe-seconds 60", 160, 40)
    tui = tmux.inspector()
    deadline = time.monotonic() + 30
    while not (first.stats()["cmd_get"] and second.stats()["cmd_get"]):
        assert time.monotonic() < deadline, ("a run never reached its server", tmux.screen())
        time.sleep(0.1)
    screen = tmux.wait(lambda s: re.search(r"#2\s+memcached\s+\S+\s+running", s) is not None,
                       "both runs in the table")
    assert re.search(r"#1\s+memcached\s+\S+\s+running", screen), screen
    assert "Start (y)" not in screen and "probe?" not in screen, screen
    assert first.address in screen or first.address[-10:] in screen
    tmux.keys("q")
    tui.wait(10)
    # exited cleanly on q: the pane's shell and then tmux follow it out, a moment later
    deadline = time.monotonic() + 10
    while tmux.has_session() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not tmux.has_session()


RUNS = 50
RSS_GROWTH_MB = 40      # issue 20: flat within 40 MB of the first run's
RSS_MB = 80             # issue 20: 50 runs under 80 MB (here: 49 -> 56 MB)
LATE_GROWTH_MB = 10     # runs 25 to 50 (here: ~2.5 MB; a leak of 0.4 MB a run fails it)


def test_fifty_runs_in_one_session_keep_memory_flat(tmux, tmp_path):
    """50 short runs one after the other in one TUI: its RSS (psutil) stays under 80 MB and
    within 40 MB of what it was after the first, and does not keep climbing (each run keeps a
    bounded summary, the probe's own memory goes with its process, and the widgets the UI
    replaces go: tui/textual_fixes)."""
    target = tmp_path / "probe.bin"
    target.write_bytes(os.urandom(1 << 20))
    # 0.1 s runs: one keeps what a 0.2 s run keeps (the summary and one interval: both are
    # shorter than the IO probe's 0.25 s sample period); each costs its process's start-up
    tmux.start(f"--probe io:{target} --probe-seconds 0.1")
    tui = tmux.inspector()
    tmux.wait(lambda s: re.search(r"#1\s+io \S+\s+done", s) is not None, "the first run done")
    rss = [tui.memory_info().rss]
    tmux.keys("n")                             # the form's target, edited: this one, 0.1 s
    tmux.wait(lambda s: EDITING in s, "the target edited")
    tmux.keys("C-u")
    tmux.keys("-l", str(target))
    tmux.keys("Tab", "C-u")
    tmux.keys("-l", "0.1")
    for k in range(2, RUNS + 1):
        tmux.keys("Enter")
        tmux.wait(lambda s, k=k: re.search(rf"#{k}\s+io \S+\s+done", s) is not None,
                  f"run #{k} done", timeout=20)
        rss.append(tui.memory_info().rss)
        tmux.keys("n")
        tmux.wait(lambda s: EDITING in s, f"the target edited after run #{k}")
    mb = [r / 2**20 for r in rss]
    print(f"\nTUI RSS over {RUNS} runs: first {mb[0]:.1f} MB, peak {max(mb):.1f} MB, "
          f"last {mb[-1]:.1f} MB")
    print(" ".join(f"{m:.0f}" for m in mb))
    assert max(mb) - mb[0] < RSS_GROWTH_MB, mb
    assert max(mb) < RSS_MB, mb
    assert mb[-1] - mb[RUNS // 2 - 1] < LATE_GROWTH_MB, mb
    assert not [c for c in tui.children(recursive=True)
                if "tui.probes.process" in " ".join(c.cmdline())]
    tmux.keys("q")
