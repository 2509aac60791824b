"""The container layer: what the root shows is gathered once (gather_container), then a pure
decision over those facts (decide_container) weighs them into one layer.

Marker files (/.dockerenv, /run/.containerenv) travel inside images, so they only name a runtime
that a separate PID namespace, a cgroup or a mount path confirms; on the host's initial PID
namespace with no such confirmation they are suspect."""
from __future__ import annotations

import re
from dataclasses import dataclass

from inspector.discover.virt.model import (
    INIT_PID_NS_INODE, INFO, MEDIUM, STRONG, SUSPECT, WEAK, Evidence, HostRole, Layer)
from inspector.discover.virt.signals import line
from inspector.host import HostRoot, Unavailable
from inspector.model import Unknown, known

_CGROUP_PATTERNS = [  # (regex on a cgroup path, verdict, flavor)
    (re.compile(r"/kubepods"), "kubernetes", None),
    (re.compile(r"/docker[/-]([0-9a-f]{12,64})"), "docker", None),
    (re.compile(r"/libpod-([0-9a-f]{12,64})"), "podman", None),
    (re.compile(r"/lxc(\.payload)?[./]"), "lxc", None),
    (re.compile(r"/machine\.slice/machine-.*\.scope"), "systemd-nspawn", None),
    (re.compile(r"/system\.slice/containerd"), "containerd", None),
]
_MOUNT_PATTERNS = [
    (re.compile(r"/var/lib/kubelet/pods/"), "kubernetes"),
    (re.compile(r"/docker/containers/[0-9a-f]{64}/"), "docker"),
    (re.compile(r"/containers/storage/overlay-containers/[0-9a-f]{64}/userdata"), "podman"),
    (re.compile(r"/var/lib/lxc/|/lxc/[^ ]+/rootfs"), "lxc"),
]
_ENV_NAMES = {"docker": "docker", "podman": "podman", "lxc": "lxc", "lxc-libvirt": "lxc",
              "systemd-nspawn": "systemd-nspawn", "oci": "container-other", "wsl": "wsl",
              "proot": "proot", "pouch": "pouch", "rkt": "rkt"}


@dataclass
class ContainerSignals:
    """Everything the container decision reads, gathered from a root in one pass."""
    proc_vz: bool                    # /proc/vz: OpenVZ guest or host
    proc_bc: bool                    # /proc/bc: OpenVZ host only
    osrelease: str | None
    proot_tracer: str | None         # "4242 (proot)" when our tracer is proot
    manager_file: str | None         # /run/host/container-manager, first line
    systemd_container: str | None    # /run/systemd/container, first line
    env1: str | Unknown | None       # container= of PID 1's environment (a fact, never the file)
    own_env: str | None              # our own $container
    kubernetes_service_host: bool    # $KUBERNETES_SERVICE_HOST set
    pid_ns: int | None               # inode of /proc/self/ns/pid
    cgroup: str | None               # /proc/self/cgroup
    mountinfo: str | None            # /proc/self/mountinfo
    lxd_sock: bool                   # /dev/lxd/sock
    containerenv: str | Unknown | None  # /run/.containerenv: None absent, else its text
    dockerenv: bool                  # /.dockerenv


def _env1_container() -> str | None:
    """Live only: the container= value of PID 1's environment, nothing else leaves the file."""
    try:
        with open("/proc/1/environ", "rb") as f:
            data = f.read(1 << 16)
    except OSError as exc:
        return Unknown(f"/proc/1/environ: {exc.strerror or exc}")
    for item in data.split(b"\0"):
        if item.startswith(b"container="):
            return item[len(b"container="):].decode("utf-8", "replace")
    return None


def _proot_tracer(root: HostRoot) -> str | None:
    """proot runs programs under ptrace: our tracer's name is "proot"."""
    status = root.try_text("proc/self/status")
    match = re.search(r"^TracerPid:\s*(\d+)", status, re.M) if known(status) else None
    if not match or match.group(1) == "0":
        return None
    comm = line(root, f"proc/{match.group(1)}/comm")
    return f"{match.group(1)} ({comm})" if comm == "proot" else None


def _pid_ns(root: HostRoot) -> int | None:
    try:    # resolve proc/self first so a capture stores the link under the real pid directory
        link = root.readlink(root.resolve("proc/self/ns") + "/pid")
    except Unavailable:
        return None
    match = re.fullmatch(r"pid:\[(\d+)\]", link or "")
    return int(match.group(1)) if match else None


def _text(root: HostRoot, rel: str) -> str | None:
    value = root.try_text(rel)
    return value if known(value) else None


def gather_container(root: HostRoot, osrelease: str | None) -> ContainerSignals:
    proc_vz = root.exists("proc/vz")
    env1 = root.fact("env1", "container", _env1_container)
    return ContainerSignals(
        proc_vz=proc_vz, proc_bc=proc_vz and root.exists("proc/bc"), osrelease=osrelease,
        proot_tracer=_proot_tracer(root),
        manager_file=line(root, "run/host/container-manager"),
        systemd_container=line(root, "run/systemd/container"),
        env1=env1 if isinstance(env1, (str, Unknown)) else None,
        own_env=root.environ("container"),
        kubernetes_service_host=bool(root.environ("KUBERNETES_SERVICE_HOST")),
        pid_ns=_pid_ns(root), cgroup=_text(root, "proc/self/cgroup"),
        mountinfo=_text(root, "proc/self/mountinfo"), lxd_sock=root.exists("dev/lxd/sock"),
        containerenv=root.try_text("run/.containerenv") if root.exists("run/.containerenv")
        else None,
        dockerenv=root.exists(".dockerenv"))


def decide_container(cs: ContainerSignals) -> tuple[Layer, list[HostRole]]:
    """The container layer (and the OpenVZ host role) from the gathered signals; no reads."""
    ev: list[Evidence] = []
    roles: list[HostRole] = []
    claims: list[tuple[str, str, str | None]] = []       # (verdict, strength, flavor)
    isolated: bool | None = None                           # evidence of a separate namespace

    def claim(verdict: str, e: Evidence, flavor: str | None = None) -> None:
        ev.append(e)
        claims.append((verdict, e.weight, flavor))

    # OpenVZ: /proc/vz in guests and host; /proc/bc only on the host.
    if cs.proc_vz:
        if cs.proc_bc:
            roles.append(HostRole("openvz-host", "OpenVZ/Virtuozzo hardware node", [
                Evidence("/proc/vz and /proc/bc", "present", "openvz-host", STRONG)]))
        else:
            claim("openvz", Evidence("/proc/vz without /proc/bc", "present", "openvz", STRONG))
            isolated = True
    release = cs.osrelease or ""
    if "microsoft" in release.lower() or "wsl" in release.lower():
        claim("wsl", Evidence("/proc/sys/kernel/osrelease", release, "wsl", STRONG),
              "wsl2" if "WSL2" in release or "microsoft-standard" in release else "wsl1")
        isolated = True
    if cs.proot_tracer:
        claim("proot", Evidence("/proc/self/status TracerPid", cs.proot_tracer, "proot", STRONG))
    manager = cs.manager_file
    if manager:
        claim(_ENV_NAMES.get(manager, manager), Evidence("/run/host/container-manager", manager,
                                                        manager, STRONG))
        isolated = True
    systemd_container = cs.systemd_container
    if systemd_container:
        claim(_ENV_NAMES.get(systemd_container, systemd_container),
              Evidence("/run/systemd/container", systemd_container, systemd_container, STRONG))
        isolated = True
    env1 = cs.env1
    if isinstance(env1, str) and env1:
        claim(_ENV_NAMES.get(env1, env1), Evidence("/proc/1/environ container=", env1, env1, STRONG))
        isolated = True
    elif isinstance(env1, Unknown) and not env1.reason.startswith("not recorded"):
        ev.append(Evidence("/proc/1/environ container=", str(env1), "unknown", INFO))
    own_env = cs.own_env
    if own_env:
        claim(_ENV_NAMES.get(own_env, own_env), Evidence("$container", own_env, own_env, MEDIUM))
    if cs.kubernetes_service_host:
        claim("kubernetes", Evidence("$KUBERNETES_SERVICE_HOST", "set", "kubernetes", MEDIUM))

    # PID namespace: the host's initial one has a fixed inode.
    ns = cs.pid_ns
    if ns is not None:
        if ns != INIT_PID_NS_INODE:
            ev.append(Evidence("/proc/self/ns/pid", f"pid:[{ns}]", "container", STRONG,
                               "not the initial PID namespace (4026531836)"))
            isolated = True
        else:
            ev.append(Evidence("/proc/self/ns/pid", f"pid:[{ns}]", "none", STRONG,
                               "the host's initial PID namespace"))
            if isolated is None:
                isolated = False

    # cgroups (v1 paths, or v2 without a cgroup namespace) and mountinfo (v2 with one).
    cgroup_hit = False
    if cs.cgroup is not None:
        for entry in cs.cgroup.splitlines():
            path = entry.split(":", 2)[-1]
            for pattern, verdict, flavor in _CGROUP_PATTERNS:
                if pattern.search(path):
                    claim(verdict, Evidence("/proc/self/cgroup", entry.strip(), verdict, STRONG), flavor)
                    cgroup_hit = True
                    break
            if cgroup_hit:
                break
        if not cgroup_hit:
            ev.append(Evidence("/proc/self/cgroup", "no docker/libpod/lxc/kubepods/machine path",
                               "none", MEDIUM, "with a cgroup namespace (cgroup v2) this proves "
                               "little: paths then start at /"))
    overlay_root = False
    if cs.mountinfo is not None:
        for entry in cs.mountinfo.splitlines():
            fields = entry.split()
            if len(fields) > 4 and fields[4] == "/" and " - overlay " in entry:
                overlay_root = True
            for pattern, verdict in _MOUNT_PATTERNS:
                if len(fields) > 4 and pattern.search(fields[3]):
                    claim(verdict, Evidence("/proc/self/mountinfo", f"{fields[3]} on {fields[4]}",
                                            verdict, STRONG))
                    cgroup_hit = True
                    break
            else:
                continue
            break
    if cgroup_hit:
        isolated = True
    if overlay_root:
        ev.append(Evidence("/proc/self/mountinfo", "/ is an overlay filesystem", "container", WEAK))
    if cs.lxd_sock:
        claim("lxc", Evidence("/dev/lxd/sock", "present", "lxc", STRONG), "lxd")
        isolated = True

    # Marker files: images carry them, so they only name a runtime that isolation confirms.
    markers = []
    if cs.containerenv is not None:
        text = cs.containerenv
        rootless = known(text) and re.search(r"^rootless=1", text, re.M) is not None
        markers.append(("podman", Evidence("/run/.containerenv", "present" + (", rootless=1" if rootless else ""),
                                           "podman", MEDIUM), "rootless" if rootless else None))
    if cs.dockerenv:
        markers.append(("docker", Evidence("/.dockerenv", "present", "docker", WEAK), None))
    for verdict, e, flavor in markers:
        if isolated is False:
            e.weight = SUSPECT
            e.note = ("ignored: the PID namespace is the host's initial one and no cgroup or mount "
                      "shows a container (a file left in the image or root filesystem)")
            ev.append(e)
        else:
            if isolated is None:
                e.note = "PID namespace and cgroups could not confirm it"
            claim(verdict, e, flavor)

    return _weigh_claims(claims, ev, isolated), roles


def _weigh_claims(claims: list[tuple[str, str, str | None]], ev: list[Evidence],
                  isolated: bool | None) -> Layer:
    if not claims:
        if isolated:
            return Layer("container", "container-other", confidence="medium", evidence=ev)
        return Layer("container", "none", confidence="high" if isolated is False else "medium",
                     evidence=ev)
    rank = {STRONG: 0, MEDIUM: 1, WEAK: 2}
    # Kubernetes is the orchestrator over a runtime: report it with the runtime as flavor.
    verdicts = [c[0] for c in claims]
    flavor = next((c[2] for c in claims if c[2]), None)
    if "kubernetes" in verdicts:
        runtime = next((v for v in verdicts if v in ("docker", "containerd", "podman", "cri-o")), None)
        verdict, flavor = "kubernetes", runtime or flavor
    else:
        best = min(claims, key=lambda c: rank.get(c[1], 3))
        verdict = best[0]
        if verdict == "containerd":
            verdict = "container-other"
            flavor = "containerd"
    strengths = {c[1] for c in claims}
    confidence = "high" if STRONG in strengths and isolated else (
        "medium" if isolated or STRONG in strengths else "low")
    distinct = {v for v in verdicts if v not in ("kubernetes", "containerd")}
    conflict = len(distinct) > 1 and not (distinct <= {"docker", "podman"} and "kubernetes" in verdicts)
    layer = Layer("container", verdict, flavor=flavor, confidence=confidence, evidence=ev)
    if conflict:
        layer.confidence = "medium" if confidence == "high" else confidence
        ev.append(Evidence("container signals", ", ".join(sorted(distinct)), verdict, INFO,
                           "signals name different container managers"))
    return layer
