"""Every option whose values come from a closed set completes them, in bash and in zsh:
argparse choices, and the sets argparse does not check as choices (report --section NAME,
check -w METRIC=RANGE, fleet --where KEY=PATTERN, --probe SPEC). Typed in real shells in tmux,
with the script `inspector completion SHELL` prints."""
from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import inspector_bin
from inspector.cli_docs import (
    DIRECTORY_DESTS,
    PATH_DESTS,
    _stable_parser,
    _subparsers,
    closed_values,
)

_sockets = itertools.count()


def _options_naming_a_set() -> list[tuple[str, str]]:
    """(command, dest) of options whose metavar or help says their values are a set: a
    METRIC=..., KEY=... or SPEC form, or alternatives written a|b|c."""
    found = []
    with _stable_parser() as parser:
        for p in _subparsers(parser):
            for action in p._actions:
                if not action.option_strings or action.nargs == 0 or action.choices:
                    continue
                if action.dest in PATH_DESTS | DIRECTORY_DESTS:
                    continue
                metavar, text = str(action.metavar or ""), str(action.help or "")
                if re.fullmatch(r"[A-Z]+=[A-Z]+|SPEC|KIND:TARGET", metavar) or \
                        re.search(r"\b[a-z]+\|[a-z]+\|[a-z]+\b", text):
                    found.append((p.prog, action.dest))
    return found


def test_every_option_naming_a_set_has_its_values():
    named = _options_naming_a_set()
    assert ("inspector report", "section") in named and ("inspector check", "warn") in named
    assert set(named) <= set(closed_values()), sorted(set(named) - set(closed_values()))


class Shell:
    """A real shell in a tmux pane of its own server, the completion script loaded."""

    def __init__(self, argv: list[str], setup: str):
        self.socket = f"inspector-completion-{os.getpid()}-{next(_sockets)}"
        env = {**os.environ, "PATH": f"{os.path.dirname(inspector_bin())}:{os.environ['PATH']}"}
        subprocess.run(["tmux", "-L", self.socket, "new-session", "-d", "-x", "200", "-y", "50",
                        *argv], check=True, env=env, timeout=10)
        self.send(setup, "Enter")
        self.wait_for("READY")

    def send(self, *keys: str) -> None:
        subprocess.run(["tmux", "-L", self.socket, "send-keys", *keys], check=True, timeout=10)

    def screen(self) -> str:
        return subprocess.run(["tmux", "-L", self.socket, "capture-pane", "-p"],
                              capture_output=True, text=True, timeout=10).stdout

    def wait_for(self, pattern: str, timeout: float = 20) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.screen()
            if re.search(pattern, text, re.MULTILINE):
                return text
            time.sleep(0.1)
        raise AssertionError(f"{pattern!r} not on the screen:\n{self.screen()}")

    def complete(self, line: str, pattern: str, tabs: int = 1, then: str = "") -> str:
        """Type `line`, press Tab, type `then` (a mark that shows whether a space was
        added), wait for `pattern`; the line is cleared after."""
        self.send("C-u", "C-l")
        self.send("-l", line)
        for _ in range(tabs):
            self.send("Tab")
            time.sleep(0.3)
        if then:
            self.send("-l", then)
        try:
            return self.wait_for(pattern)
        finally:
            self.send("C-c")

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=10)


@pytest.fixture
def bash():
    shell = Shell(["bash", "--norc", "--noprofile"],
                  "PS1='$ '; source <(inspector completion bash); echo READ''Y")
    yield shell
    shell.close()


@pytest.fixture
def zsh(tmp_path):
    if shutil.which("zsh") is None:
        pytest.fail("zsh is not installed (apt-get install zsh; make test does it)")
    (tmp_path / "_inspector").write_text(subprocess.run(
        [inspector_bin(), "completion", "zsh"], capture_output=True, text=True, timeout=60).stdout)
    shell = Shell(["zsh", "-f"], f"PS1='$ '; fpath=({tmp_path} $fpath); autoload -U compinit; "
                                 "compinit -u; echo READ''Y")
    yield shell
    shell.close()


def test_bash_completes_the_closed_sets(bash):
    # report --section: every section, listed on the second Tab
    text = bash.complete("inspector report --section ", r"storage\s+virt", tabs=2)
    assert {"storage", "virt", "net", "dns", "cpu"} <= set(text.split())
    # a METRIC= value is the start of the word: no space after it
    bash.complete("inspector check -w ste", r"\$ inspector check -w steal=@$", then="@")
    bash.complete("inspector fleet . --where vi", r"\$ inspector fleet \. --where virt=@$",
                  then="@")
    bash.complete("inspector snapshot --probe memc", r"--probe memcached:@$", then="@")
    # a whole word gets its space, as usual
    bash.complete("inspector check --section sto", r"--section storage @$", then="@")
    bash.complete("inspector history --by h", r"--by hour @$", then="@")


def test_zsh_completes_the_closed_sets(zsh):
    text = zsh.complete("inspector report --section ", r"storage\s+virt", tabs=2)
    assert {"storage", "virt", "net", "dns", "cpu"} <= set(text.split())
    zsh.complete("inspector check -w ste", r"\$ inspector check -w steal=@$", then="@")
    zsh.complete("inspector fleet . --where ke", r"--where kernel=@$", then="@")
    zsh.complete("inspector check --section sto", r"--section storage @$", then="@")
    zsh.complete("inspector history --by h", r"--by hour @$", then="@")


def test_the_completion_scripts_are_the_generated_ones():
    """(tests/cli/test_shipped_files.py checks they are current with the parser)"""
    for shell, marker in (("bash", "_inspector_complete"), ("zsh", "compadd -S ''")):
        out = subprocess.run([inspector_bin(), "completion", shell], capture_output=True,
                             text=True, timeout=60).stdout
        assert marker in out, shell
