"""The container layer: what the root shows is gathered once (gather_container), then a pure
decision over those facts (decide_container) weighs them into one layer.

Marker files (/.dockerenv, /run/.containerenv) travel inside images, so they only name a runtime
that a separate PID namespace, a cgroup or a mount path confirms; on the host's initial PID
namespace with no such confirmation they are suspect. A manager name (/run/host/container-manager,
/run/systemd/container, container= of PID 1 or ours) counts only as one word: systemd's
Container Interface has the manager write its name there, and a file of another kind (a script)
must not become the container's name."""
from __future__ import annotations

import re
from dataclasses import dataclass

from inspector.discover.virt.model import (
    IGNORED,
    INFO,
    INIT_PID_NS_INODE,
    MEDIUM,
    STRONG,
    SUSPECT,
    WEAK,
    Confidence,
    Evidence,
    HostRole,
    Layer,
    Weight,
)
from inspector.discover.virt.signals import line
from inspector.model import Unknown, known
from inspector.roots.host import HostRoot, Unavailable

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
    # LXD and Incus: the instance's rootfs in a storage pool (dir driver: the host path; btrfs
    # and zfs: the pool's own path); the snap's LXD lives under /var/snap/lxd
    (re.compile(r"(?:/var/snap/lxd/common/lxd|/var/lib/lxd|/var/lib/incus)/(?:storage-pools/"
                r"[^/ ]+/)?containers/[^/ ]+/rootfs"), "lxc"),
    (re.compile(r"^/(?:storage-pools/[^/ ]+/)?containers/[^/ ]+/rootfs$"), "lxc"),
    # containerd's snapshotters when the rootfs is a bind of the snapshot (native, btrfs)
    (re.compile(r"/io\.containerd\.snapshotter\.v1\.[a-z0-9-]+/snapshots/\d+/fs"), "containerd"),
]
# Which LXD: the pool path names the snap, the package or Incus
_LXD_FLAVORS = [(re.compile(r"/var/snap/lxd/"), "lxd snap"), (re.compile(r"/var/lib/lxd/"), "lxd"),
                (re.compile(r"/var/lib/incus/"), "incus"),
                (re.compile(r"^/(?:storage-pools/[^/ ]+/)?containers/[^/ ]+/rootfs$"), "lxd or incus")]
# The image layers of an overlay root (its lowerdir= and upperdir=): the runtime's storage
_OVERLAY_STORES = [
    (re.compile(r"/io\.containerd\.snapshotter\.v1\.overlayfs/snapshots/"), "containerd"),
    (re.compile(r"/var/lib/containers/storage/overlay/"), "cri-o or podman"),
    (re.compile(r"/var/lib/docker/overlay2?/"), "docker"),
]
# Where the runtime under Kubernetes shows: its cgroup scope names (systemd cgroup driver) and
# the roots of the files it bind-mounts (/etc/hostname, /etc/hosts: mountinfo field 4).
_RUNTIME_PATTERNS = [
    (re.compile(r"crio-(conmon-)?[0-9a-f]{64}"), "cri-o"),
    (re.compile(r"cri-containerd-[0-9a-f]{64}"), "containerd"),
    (re.compile(r"docker-[0-9a-f]{64}\.scope"), "docker"),
    (re.compile(r"/io\.containerd\.[a-z0-9.]+/"), "containerd"),
    (re.compile(r"/containers/storage/overlay-containers/[0-9a-f]{64}/"), "cri-o"),
    (re.compile(r"/docker/containers/[0-9a-f]{64}/"), "docker"),
]
_ENV_NAMES = {"docker": "docker", "podman": "podman", "lxc": "lxc", "lxc-libvirt": "lxc",
              "systemd-nspawn": "systemd-nspawn", "oci": "container-other", "wsl": "wsl",
              "proot": "proot", "pouch": "pouch", "rkt": "rkt",
              "crio": "cri-o", "cri-o": "cri-o"}     # CRI-O sets container=crio in its containers
_MANAGER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")
_MARKER_LIMIT = 256          # a manager name is a word; a bigger file is something else


@dataclass
class ContainerSignals:
    """Everything the container decision reads, gathered from a root in one pass."""
    proc_vz: bool                    # /proc/vz: OpenVZ guest or host
    proc_bc: bool                    # /proc/bc: OpenVZ host only
    osrelease: str | None
    proot_tracer: str | None         # "4242 (proot)" when our tracer is proot
    manager_file: str | None         # /run/host/container-manager as written (None: absent)
    systemd_container: str | None    # /run/systemd/container as written (None: absent)
    env1: str | Unknown | None       # container= of PID 1's environment (a fact, never the file)
    env1_source: str                 # where env1 came from (a fact, or a foreign tree's file)
    own_env: str | None              # our own $container
    kubernetes_service_host: bool    # $KUBERNETES_SERVICE_HOST set
    vxid: int | None                 # VxID of /proc/self/status (Linux-VServer kernels)
    pid_ns: int | None               # inode of /proc/self/ns/pid
    cgroup: str | None               # /proc/self/cgroup
    mountinfo: str | None            # /proc/self/mountinfo
    lxd_sock: bool                   # /dev/lxd/sock
    containerenv: str | Unknown | None  # /run/.containerenv: None absent, else its text
    dockerenv: bool                  # /.dockerenv


def _container_of(environ: bytes) -> str | None:
    for item in environ.split(b"\0"):
        if item.startswith(b"container="):
            return item[len(b"container="):].decode("utf-8", "replace")
    return None


def _env1_container() -> str | Unknown | None:
    """Live only: the container= value of PID 1's environment, nothing else leaves the file."""
    try:
        with open("/proc/1/environ", "rb") as f:
            data = f.read(1 << 16)
    except OSError as exc:
        return Unknown(f"/proc/1/environ: {exc.strerror or exc}")
    return _container_of(data)


def _env1(root: HostRoot) -> tuple[str | Unknown | None, str]:
    """PID 1's container=: a fact (live, or recorded in a capture, which never holds the file
    itself); in a tree someone else captured, their proc/1/environ, of which only container=
    is kept."""
    env1 = root.fact("env1", "container", _env1_container)
    if isinstance(env1, Unknown) and env1.reason.startswith("not recorded") and not root.live:
        try:
            return _container_of(root.read_bytes("proc/1/environ", 1 << 16)), "tree"
        except Unavailable:
            return env1, "fact"
    return (env1 if isinstance(env1, (str, Unknown)) else None), "fact"


def _marker(root: HostRoot, rel: str) -> str | None:
    try:
        return root.read_text(rel, _MARKER_LIMIT + 1)
    except Unavailable:
        return None


def _proot_tracer(root: HostRoot, status: str | None) -> str | None:
    """proot runs programs under ptrace: our tracer's name is "proot"."""
    match = re.search(r"^TracerPid:\s*(\d+)", status, re.M) if status else None
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
    """A file's text; None when unreadable or empty (an empty file is not evidence)."""
    value = root.try_text(rel)
    return value if known(value) and value.strip() else None


def gather_container(root: HostRoot, osrelease: str | None) -> ContainerSignals:
    proc_vz = root.exists("proc/vz")
    env1, env1_source = _env1(root)
    status = _text(root, "proc/self/status")
    vxid = re.search(r"^VxID:\s*(\d+)", status, re.M) if status else None
    return ContainerSignals(
        proc_vz=proc_vz, proc_bc=proc_vz and root.exists("proc/bc"), osrelease=osrelease,
        proot_tracer=_proot_tracer(root, status),
        manager_file=_marker(root, "run/host/container-manager"),
        systemd_container=_marker(root, "run/systemd/container"),
        env1=env1, env1_source=env1_source, own_env=root.environ("container"),
        kubernetes_service_host=bool(root.environ("KUBERNETES_SERVICE_HOST")),
        vxid=int(vxid.group(1)) if vxid else None,
        pid_ns=_pid_ns(root), cgroup=_text(root, "proc/self/cgroup"),
        mountinfo=_text(root, "proc/self/mountinfo"), lxd_sock=root.exists("dev/lxd/sock"),
        containerenv=root.try_text("run/.containerenv") if root.exists("run/.containerenv")
        else None,
        dockerenv=root.exists(".dockerenv"))


def _manager_name(text: str | None) -> str | None:
    """The one word a manager wrote; None when the text is anything else."""
    if text is None or len(text) > _MARKER_LIMIT:
        return None
    word = text.strip()
    return word if _MANAGER_NAME.fullmatch(word) else None


def _shown(text: str) -> str:
    first = text.strip().split("\n", 1)[0]
    return (first[:40] + "...") if len(first) > 40 or "\n" in text.strip() else first


def _runtimes(cs: ContainerSignals) -> list[tuple[str, str, str]]:
    """(runtime, source, what matched) for each runtime marker in our cgroup paths and the
    roots of our mounts."""
    found: list[tuple[str, str, str]] = []
    items = [("/proc/self/cgroup", entry.strip(), entry)
             for entry in (cs.cgroup or "").splitlines()]
    for entry in (cs.mountinfo or "").splitlines():
        fields = entry.split()
        if len(fields) > 4:
            items.append(("/proc/self/mountinfo", f"{fields[3]} on {fields[4]}", fields[3]))
    for source, shown, text in items:
        for pattern, runtime in _RUNTIME_PATTERNS:
            if pattern.search(text) and all(runtime != r for r, _, _ in found):
                found.append((runtime, source, shown))
    return found


def _overlay_store(mountinfo: str) -> tuple[str, str] | None:
    """(runtime, what was seen) when "/" is an overlay whose layers sit in a runtime's store."""
    for entry in mountinfo.splitlines():
        fields = entry.split()
        if len(fields) > 4 and fields[4] == "/" and " - overlay " in entry:
            options = entry.split(" - overlay ", 1)[1]
            for pattern, runtime in _OVERLAY_STORES:
                m = pattern.search(options)
                if m:
                    start = options.rfind("=", 0, m.start()) + 1
                    return runtime, f"/ overlay, layers in {options[start:m.end()]}"
    return None


def decide_container(cs: ContainerSignals) -> tuple[Layer, list[HostRole]]:
    """The container layer (and the OpenVZ host role) from the gathered signals; no reads."""
    ev: list[Evidence] = []
    roles: list[HostRole] = []
    claims: list[tuple[str, Weight, str | None]] = []    # (verdict, strength, flavor)
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
    for source, text in (("/run/host/container-manager", cs.manager_file),
                         ("/run/systemd/container", cs.systemd_container)):
        name = _manager_name(text)
        if name:
            claim(_ENV_NAMES.get(name, name), Evidence(source, name, name, STRONG))
            isolated = True
        elif text is not None and text.strip():
            ev.append(Evidence(source, _shown(text), "unknown", IGNORED,
                               "not a one-word manager name (the manager writes e.g. "
                               "'systemd-nspawn', 'podman', 'lxc'): a file of another kind"))
    env1 = cs.env1
    env1_name = _manager_name(env1) if isinstance(env1, str) else None
    if env1_name:
        note = "read from the tree's proc/1/environ (container= only)" \
            if cs.env1_source == "tree" else ""
        claim(_ENV_NAMES.get(env1_name, env1_name),
              Evidence("/proc/1/environ container=", env1_name, env1_name, STRONG, note))
        isolated = True
    elif isinstance(env1, str) and env1.strip():
        ev.append(Evidence("/proc/1/environ container=", _shown(env1), "unknown", IGNORED,
                           "not a one-word manager name"))
    elif isinstance(env1, Unknown) and not env1.reason.startswith("not recorded"):
        ev.append(Evidence("/proc/1/environ container=", str(env1), "unknown", INFO))
    own_env = _manager_name(cs.own_env)
    if own_env:
        claim(_ENV_NAMES.get(own_env, own_env), Evidence("$container", own_env, own_env, MEDIUM))
    if cs.vxid is not None:
        if cs.vxid:
            claim("linux-vserver", Evidence("/proc/self/status VxID", str(cs.vxid), "linux-vserver",
                                            STRONG, "a Linux-VServer security context (0 is the "
                                            "host's)"))
            isolated = True
        else:
            roles.append(HostRole("vserver-host", "Linux-VServer host (context 0): guests run "
                                  "beside it", [Evidence("/proc/self/status VxID", "0",
                                                         "vserver-host", STRONG)]))
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
                    flavor = next((f for p, f in _LXD_FLAVORS if p.search(fields[3])), None) \
                        if verdict == "lxc" and "lxc/" not in fields[3] else None
                    claim(verdict, Evidence("/proc/self/mountinfo", f"{fields[3]} on {fields[4]}",
                                            verdict, STRONG, f"an {flavor} instance's root" if flavor
                                            else ""), flavor)
                    cgroup_hit = True
                    break
            else:
                continue
            break
        store = _overlay_store(cs.mountinfo)
        if store is not None:
            runtime, shown = store
            e = Evidence("/proc/self/mountinfo", shown, runtime, MEDIUM,
                         "the overlay root's image layers live in this runtime's storage")
            if claims:      # a stronger signal named the container: this only backs it
                e.weight = INFO
                ev.append(e)
            else:
                claim("docker" if runtime == "docker" else "containerd" if runtime == "containerd"
                      else "container-other", e, None if runtime == "docker" else runtime)
                cgroup_hit = True
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
        containerenv = cs.containerenv
        rootless = (known(containerenv)
                    and re.search(r"^rootless=1", containerenv, re.M) is not None)
        seen = "present" + (", rootless=1" if rootless else "")
        markers.append(("podman", Evidence("/run/.containerenv", seen, "podman", MEDIUM),
                        "rootless" if rootless else None))
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

    return _weigh_claims(claims, ev, isolated, _runtimes(cs)), roles


def _weigh_claims(claims: list[tuple[str, Weight, str | None]], ev: list[Evidence],
                  isolated: bool | None, runtimes: list[tuple[str, str, str]]) -> Layer:
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
        if runtime == "podman":
            # podman is no Kubernetes runtime: its storage paths under a kubelet are CRI-O's
            runtime = "cri-o"
        if runtime is None and runtimes:
            runtime = runtimes[0][0]
        for name, source, shown in runtimes:
            if name == runtime:
                ev.append(Evidence(source, shown, name, MEDIUM, "the pod's container runtime"))
                break
        verdict, flavor = "kubernetes", runtime or flavor
    else:
        best = min(claims, key=lambda c: rank.get(c[1], 3))
        verdict = best[0]
        if verdict == "containerd":
            verdict = "container-other"
            flavor = "containerd"
    strengths = {c[1] for c in claims}
    confidence: Confidence = "high" if STRONG in strengths and isolated else (
        "medium" if isolated or STRONG in strengths else "low")
    distinct = {v for v in verdicts if v not in ("kubernetes", "containerd")}
    conflict = len(distinct) > 1 and not (distinct <= {"docker", "podman", "cri-o"}
                                          and "kubernetes" in verdicts)
    layer = Layer("container", verdict, flavor=flavor, confidence=confidence, evidence=ev)
    if conflict:
        layer.confidence = "medium" if confidence == "high" else confidence
        ev.append(Evidence("container signals", ", ".join(sorted(distinct)), verdict, INFO,
                           "signals name different container managers"))
    return layer
