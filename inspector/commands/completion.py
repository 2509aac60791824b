"""`inspector completion bash|zsh`: print the shell completion script shipped with the package
(generated from the argparse definitions by inspector.cli_docs)."""
from __future__ import annotations

import argparse
import sys

from inspector.commands import SUMMARIES
from inspector.commands.common import exit_epilog

DESCRIPTION = """\
Print the completion script for SHELL. To install it:

  bash, for everyone:  inspector completion bash > /etc/bash_completion.d/inspector
  bash, for you:       inspector completion bash > \\
                         ~/.local/share/bash-completion/completions/inspector
  zsh:                 inspector completion zsh > "${fpath[1]}/_inspector"  (then compinit)

or load it in the running shell: source <(inspector completion bash)."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("completion", help=SUMMARIES["completion"],
                       description=DESCRIPTION, epilog=exit_epilog(ok="printed"),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("shell", choices=("bash", "zsh"), metavar="SHELL", help="bash or zsh")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from inspector.shipped import shipped_text
    sys.stdout.write(shipped_text(args.shell))
    return 0
