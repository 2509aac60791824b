"""Files shipped with the package for the system around it: the shell completions, the man page
and the systemd units (inspector/share/), the alert rules and dashboard (inspector/monitoring/).
`inspector files` says where they are installed (deep in a venv with pipx), `inspector
completion SHELL` prints a completion script."""
from __future__ import annotations

from importlib.resources import files

# name -> (path inside the package, what it is)
SHIPPED = {
    "man": ("share/man/inspector.1", "man page (man 1 inspector)"),
    "bash": ("share/completion/inspector.bash", "bash completion"),
    "zsh": ("share/completion/_inspector", "zsh completion"),
    "systemd": ("share/systemd", "systemd units: inspector-record and inspector-export, "
                                 "each a .service and a .timer"),
    "monitoring": ("monitoring", "Prometheus alert rules, their promtool tests, Grafana "
                                 "dashboard"),
    "capture.sh": ("share/capture.sh", "capture with only a POSIX shell on the host: "
                                       "ssh HOST sh -s < capture.sh > HOST.tar.gz"),
}


def shipped_path(name: str) -> str:
    """Where the file or directory `name` (a key of SHIPPED) is installed."""
    return str(files("inspector").joinpath(SHIPPED[name][0]))


def shipped_text(name: str) -> str:
    return files("inspector").joinpath(SHIPPED[name][0]).read_text(encoding="utf-8")
