"""A user's history database goes to $XDG_DATA_HOME/inspector, created 0700 as the XDG base
directory spec asks (it names the user's probe targets and their hosts' findings), whatever
the umask: the real binary as the real user nobody."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sysconfig
import tempfile
from pathlib import Path

import pytest

AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
# The test venv's python may live under /root (pyenv), which nobody cannot enter: Debian's
# python3.11 runs the same installed code, with the venv's site-packages added as a site dir
# (its .pth files hold the editable install).
INSPECTOR_AS_ANYONE = ["/usr/bin/python3.11", "-c",
                       "import site, sys; site.addsitedir(sys.argv.pop(1)); "
                       "from inspector.cli import main; sys.exit(main())",
                       sysconfig.get_paths()["purelib"]]


@pytest.fixture
def data():
    """An XDG_DATA_HOME nobody owns (pytest's tmp_path is under root's 0700 directory)."""
    path = Path(tempfile.mkdtemp(prefix="inspector-xdg-"))
    shutil.chown(path, "nobody", "nogroup")
    yield path
    shutil.rmtree(path)


def test_record_creates_the_users_data_directory_0700(data):
    env = {**os.environ, "XDG_DATA_HOME": str(data), "HOME": str(data)}
    res = subprocess.run([*AS_NOBODY, "sh", "-c", 'umask 022; exec "$@"', "sh",
                          *INSPECTOR_AS_ANYONE, "record", "--once", "--timeout", "10s"],
                         capture_output=True, text=True, env=env, timeout=120, cwd=data)
    assert res.returncode == 0, res.stderr
    directory = data / "inspector"
    assert (directory / "history.sqlite").is_file()
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert directory.stat().st_uid == int(subprocess.check_output(["id", "-u", "nobody"]))
