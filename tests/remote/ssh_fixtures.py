"""Fixtures of the --ssh tests (imported by the test modules): real sshd servers on loopback ports (tests/remote/sshd.py)."""
from __future__ import annotations

import shutil

import pytest
from sshd import Chroot, SshServer

from conftest import require_root


def _need_tools() -> None:
    require_root()
    for tool in ("sshd", "ssh", "ssh-keygen", "busybox"):
        if not shutil.which(tool) and not shutil.which(f"/usr/sbin/{tool}"):
            pytest.fail(f"{tool} is needed (make test installs openssh-server and busybox)")


@pytest.fixture(scope="module")
def host_sshd():
    """The host itself over ssh: the session's `sh -s` is the host's /bin/sh (dash here)."""
    _need_tools()
    server = SshServer.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def bash_sshd():
    """The host itself, the script read by bash."""
    _need_tools()
    server = SshServer.start(force="exec /bin/bash -s")
    yield server
    server.stop()


@pytest.fixture(scope="module", params=["busybox", "dash", "bash"])
def chroot_sshd(request):
    """A root with no Python: the shell named by the parameter, busybox's tools, the host's
    /proc and /sys read-only."""
    _need_tools()
    chroot = Chroot.make(request.param)
    server = SshServer.start(force=f"exec /usr/sbin/chroot {chroot.path} /bin/sh -s")
    server.chroot = chroot         # type: ignore[attr-defined]
    yield server
    server.stop()
    chroot.remove()
