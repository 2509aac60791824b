"""A child that exited before reading its stdin does not end the command by SIGPIPE: cli.py
sets SIGPIPE to SIG_DFL (for `inspector report | head`), and `inspector --ssh HOST check` or a
fleet with a host that refused the connection died of it (-13, no output) when ssh had exited
before the script was written. Each case runs in a fresh interpreter with SIGPIPE at SIG_DFL,
as the CLI has it; the script is larger than a pipe's buffer, so the write meets the closed
pipe whatever the timing."""
from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

BIG = 1 << 20       # past the 64 KiB pipe buffer


def run_with_default_sigpipe(body: str) -> subprocess.CompletedProcess:
    code = "import signal\nsignal.signal(signal.SIGPIPE, signal.SIG_DFL)\n" + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_a_write_to_an_exited_child_raises_inside_no_sigpipe():
    result = run_with_default_sigpipe(f"""
        import subprocess
        from inspector.children.pipes import no_sigpipe
        proc = subprocess.Popen(["true"], stdin=subprocess.PIPE)
        proc.wait()
        try:
            with no_sigpipe():
                proc.stdin.write(b"x" * {BIG})
                proc.stdin.flush()
        except BrokenPipeError:
            print("EPIPE")
        # the mask is back: SIGPIPE is not blocked, and none is left pending
        print(signal.SIGPIPE in signal.pthread_sigmask(signal.SIG_BLOCK, set()),
              signal.SIGPIPE in signal.sigpending())
    """)
    assert result.returncode == 0, (result.returncode, result.stderr)
    assert result.stdout.split() == ["EPIPE", "False", "False"]


def test_the_same_write_without_it_ends_the_process_by_sigpipe():
    """The test above can fail: without no_sigpipe the interpreter dies of the signal."""
    result = run_with_default_sigpipe(f"""
        import subprocess
        proc = subprocess.Popen(["true"], stdin=subprocess.PIPE)
        proc.wait()
        proc.stdin.write(b"x" * {BIG})
        proc.stdin.flush()
    """)
    assert result.returncode == -signal.SIGPIPE


def test_ssh_that_ended_before_its_script_leaves_the_command_running(tmp_path):
    fake_ssh = tmp_path / "ssh"
    fake_ssh.write_text("#!/bin/sh\necho 'ssh: connect to host x port 1: Connection refused' >&2\n"
                        "exit 255\n")
    fake_ssh.chmod(0o755)
    result = run_with_default_sigpipe(f"""
        import os
        os.environ["PATH"] = {str(tmp_path)!r} + ":" + os.environ["PATH"]
        from inspector.remote import ssh
        proc = ssh.start(ssh.Target("root@127.0.0.1"), b"x" * {BIG})
        print(proc.wait(), proc.stderr.read().decode().strip())
    """)
    assert result.returncode == 0, (result.returncode, result.stderr)
    assert result.stdout.strip() == "255 ssh: connect to host x port 1: Connection refused"


def test_a_thread_blocking_it_leaves_the_others_as_they_were():
    result = run_with_default_sigpipe("""
        import threading
        from inspector.children.pipes import no_sigpipe
        seen = []
        inside = threading.Event()
        done = threading.Event()
        def writer():
            with no_sigpipe():
                inside.set()
                done.wait(5)
        t = threading.Thread(target=writer)
        t.start()
        inside.wait(5)
        seen.append(signal.SIGPIPE in signal.pthread_sigmask(signal.SIG_BLOCK, set()))
        done.set()
        t.join()
        print(seen)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[False]"
