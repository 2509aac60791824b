"""The TUI over ssh (`inspector --ssh HOST` in tmux, against the real sshd): a probe started
from its Probes screen would run on this machine, not on the host shown, so it is refused
with the reason and nothing is started."""
from __future__ import annotations

import time

from ssh_fixtures import host_sshd  # noqa: F401  (fixture)

from conftest import require_root
from tmux_session import tmux  # noqa: F401  (fixture)

PROBES_KEY = "6"        # the Probes screen's number (inspector.tui.modes.MODES)


def _one_line(screen: str) -> str:
    """The screen's words in one line: a notification wraps where its box ends."""
    return " ".join(line.strip(" │▎▊▌┃") for line in screen.splitlines())


def test_a_probe_is_refused_on_a_host_shown_over_ssh(host_sshd, tmux, tmp_path):  # noqa: F811
    require_root()
    target = tmp_path / "probe.bin"
    target.write_bytes(b"x" * (1 << 20))
    tmux.start(f"--ssh {host_sshd.destination} {' '.join(host_sshd.cli_options())}",
               width=160, height=50)
    tmux.wait(lambda s: f"live over ssh {host_sshd.destination}" in s,
              "the TUI showing the host over ssh", timeout=180)
    app = tmux.inspector()
    tmux.keys(PROBES_KEY)
    tmux.wait(lambda s: "Enter edits" in s, "the Probes screen")
    tmux.keys("n")                          # edits the target
    tmux.keys("C-u", str(target), "Enter")  # Enter ends the edit and starts
    said = f"probes run on this machine only; the TUI is showing {host_sshd.destination} over ssh"
    screen = tmux.wait(lambda s: said in _one_line(s), "the refusal", timeout=30)
    time.sleep(1.0)
    assert not [c for c in app.children(recursive=True)
                if "inspector.tui.probes.process" in " ".join(c.cmdline())], screen
    # the same form on this machine would have started it (the refusal is the ssh one)
    assert "needs" not in _one_line(screen) and "not a" not in _one_line(screen)
    tmux.keys("q")
    deadline = time.monotonic() + 20
    while tmux.has_session() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not tmux.has_session(), tmux.screen()
