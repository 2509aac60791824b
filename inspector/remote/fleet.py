"""Many hosts captured over ssh at once, into the layout `inspector fleet DIR` reads
(DIR/<host>/inspector-<host>.tar.gz, as Ansible's fetch would lay them out).

Hosts come from the command line, a file (one per line, `#` comments) or an Ansible inventory:
the INI form (`[group]` sections, `name ansible_host=... ansible_user=... ansible_port=...`) or
the JSON `ansible-inventory -i INVENTORY --list` prints (which reads the YAML forms and plugins
too). At most `jobs` hosts are captured at a time; each has its own deadline, and a host that
cannot be read is reported with why, never stopping the others. ssh runs in batch mode: with
many hosts at once there is no one to answer a password prompt.
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from inspector.remote.capture import DEADLINE_S, RemoteCapture, capture, open_capture
from inspector.remote.ssh import SshError, Target, check_destination
from inspector.roots import tempdirs
from inspector.writing.atomic import atomic_output

MAX_LIST_BYTES = 16 * 1024 * 1024     # a host list or an inventory
MAX_HOSTS = 100_000
JOBS = 8


class FleetListError(Exception):
    """A host list or inventory that cannot be read; one line."""


@dataclass
class Captured:
    host: str                       # the directory under DIR
    destination: str
    path: str | None = None         # the capture written, when one was
    error: str | None = None        # why not
    partial: str | None = None      # why it lacks parts
    seconds: float = 0.0


def _read_list(path: str) -> str:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_LIST_BYTES + 1)
    except OSError as exc:
        raise FleetListError(f"{path}: {exc.strerror or exc}") from None
    if len(data) > MAX_LIST_BYTES:
        raise FleetListError(f"{path}: over {MAX_LIST_BYTES >> 20} MiB: not a host list")
    return data.decode("utf-8", "replace")


def hosts_from_file(path: str) -> list[str]:
    """One destination per line ([USER@]HOST or ssh://...); blank lines and # comments skipped."""
    out = []
    for number, line in enumerate(_read_list(path).splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if line:
            out.append(_checked(line, f"{path}:{number}"))
    return out


def _checked(destination: str, where: str) -> str:
    try:
        return check_destination(destination)
    except ValueError as exc:
        raise FleetListError(f"{where}: {exc}") from None


def _destination(name: str, variables: dict) -> str:
    host = str(variables.get("ansible_host") or variables.get("ansible_ssh_host") or name)
    user = variables.get("ansible_user") or variables.get("ansible_ssh_user")
    port = variables.get("ansible_port") or variables.get("ansible_ssh_port")
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"                          # an IPv6 address
    if port:
        return f"ssh://{f'{user}@' if user else ''}{host}:{int(port)}"
    return f"{user}@{host}" if user else host.strip("[]")


def hosts_from_inventory(path: str) -> dict[str, str]:
    """Inventory name -> ssh destination, from an INI inventory or ansible-inventory's JSON."""
    text = _read_list(path)
    if text.lstrip().startswith("{"):
        return _from_json(text, path)
    out: dict[str, str] = {}
    section = ""
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].split(";", 1)[0].strip() if not raw.lstrip().startswith(
            ("#", ";")) else ""
        if not line:
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        if ":" in section and not section.endswith(":hosts"):   # :vars and :children
            continue
        words = line.split()
        name, variables = words[0], dict(w.split("=", 1) for w in words[1:] if "=" in w)
        if "[" in name and re.search(r"\[\w+:\w+\]", name):
            raise FleetListError(f"{path}:{number}: host ranges ({name}) are not expanded "
                                 "here: `ansible-inventory -i INVENTORY --list > hosts.json` "
                                 "and give that")
        out.setdefault(name, _checked(_destination(name, variables), f"{path}:{number}"))
    return out


def _from_json(text: str, path: str) -> dict[str, str]:
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise FleetListError(f"{path}: not an inventory ({exc})") from None
    if not isinstance(doc, dict):
        raise FleetListError(f"{path}: not an inventory (not an object)")
    meta = doc.get("_meta", {})
    hostvars = meta.get("hostvars", {}) if isinstance(meta, dict) else {}
    names: list[str] = [n for n in hostvars if isinstance(n, str)] if isinstance(hostvars, dict) \
        else []
    for group in doc.values():
        if isinstance(group, dict) and isinstance(group.get("hosts"), list):
            names += [h for h in group["hosts"] if isinstance(h, str)]
    out: dict[str, str] = {}
    for name in names:
        variables = hostvars.get(name, {}) if isinstance(hostvars, dict) else {}
        out.setdefault(name, _checked(_destination(name, variables if isinstance(variables, dict)
                                                   else {}), path))
    return out


def host_dirs(destinations: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """(directory name, destination): names made unique (two users on one host)."""
    seen: dict[str, int] = {}
    out = []
    for name, destination in destinations:
        safe = re.sub(r"[^A-Za-z0-9._@-]", "_", name).strip(".") or "host"
        count = seen.get(safe, 0)
        seen[safe] = count + 1
        out.append((safe if not count else f"{safe}-{count + 1}", destination))
    return out


def capture_fleet(hosts: list[tuple[str, str]], directory: str, options: tuple[str, ...] = (),
                  jobs: int = JOBS, deadline: float = DEADLINE_S,
                  tool_timeout: float = 10.0) -> list[Captured]:
    """Capture each (name, destination) into `directory`/name/inspector-name.tar.gz, `jobs`
    at a time; a capture is written only once it opened as one here (safe extraction)."""
    if len(hosts) > MAX_HOSTS:
        raise FleetListError(f"more than {MAX_HOSTS} hosts")

    def one(name: str, destination: str) -> Captured:
        done = Captured(name, destination)
        target = Target(destination, options, batch=True)
        try:
            remote: RemoteCapture = capture(target, tool_timeout=tool_timeout, deadline=deadline)
            root = open_capture(remote)
        except SshError as exc:
            done.error = str(exc)
            return done
        except Exception as exc:        # CaptureError: what came back is not a capture
            done.error = f"ssh {destination}: not a readable capture: {exc}"
            return done
        done.seconds = remote.outcome.seconds
        done.partial = remote.partial
        tempdirs.remove(root.path)
        where = os.path.join(directory, name)
        try:
            os.makedirs(where, mode=0o700, exist_ok=True)
            out = os.path.join(where, f"inspector-{name}.tar.gz")
            with open(remote.path, "rb") as src, atomic_output(out, private=True) as dst:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
            done.path = out
        except Exception as exc:        # OSError, OutputError: this host's file only
            done.error = f"cannot write {where}: {getattr(exc, 'strerror', None) or exc}"
        finally:
            tempdirs.remove(os.path.dirname(remote.path))
        return done

    with ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="ssh") as pool:
        return list(pool.map(lambda pair: one(*pair), hosts))
