"""CPUID leaves, read the safest way this host allows, all through `root.fact("cpuid", ...)`.

Sources, in order (live):
1. /dev/cpu/0/cpuid (msr/cpuid driver): pread 16 bytes at offset `leaf | subleaf << 32`.
   Needs root and the cpuid module; exact and side-effect free.
2. An unprivileged probe: a child Python process maps a 32-byte x86-64 stub executable with
   mmap and calls it through ctypes. It runs in a *child* so that a W^X policy (mmap refused,
   SIGKILL/SIGSEGV on exec) or any crash costs us nothing but the answer.
3. Neither: callers fall back to the `hypervisor` flag of /proc/cpuinfo.

Fact key scheme (sidecar `{"version": 1, "facts": {"cpuid": {KEY: VALUE}}}`):
- "method": how leaves were read: "dev-cpu" (/dev/cpu/0/cpuid) or "probe" (child process);
  Unknown(reason) when CPUID is unavailable (then no leaf keys exist).
- "0x%08x" for subleaf 0, "0x%08x.%x" for another subleaf (e.g. "0x00000001",
  "0x0000000d.1"): [eax, ebx, ecx, edx] as integers. A leaf key that is absent in a capture
  is Unknown ("not recorded"), never silently zero.
- "scan": the hypervisor leaf blocks found when scanning 0x40000000..0x4000FF00 in steps of
  0x100: a list of block bases as "0x%08x". The scan is done whatever leaf 1 ECX bit 31
  ("running under a hypervisor") says, as virt-what's helper does: hypervisors older than that
  2008 convention (Xen 3.x) leave the bit clear yet answer at 0x40000000. The leaves of each
  listed block (base .. base + min(max leaf, 0x0C)) are recorded under their own leaf keys, so
  a capture holds the blocks that exist and not 256 rows of zeros. Captures made before the
  scan was unconditional have no "scan" key when the bit is clear: no blocks, as then.
"""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from dataclasses import dataclass, field

from inspector.children.pipes import no_sigpipe
from inspector.model import Unknown, known
from inspector.roots.host import HostRoot

HV_BASE = 0x40000000
HV_LAST = 0x4000FF00
HV_STEP = 0x100
HV_LEAVES_PER_BLOCK = 0x0C      # base .. base+0x0C covers Hyper-V's isolation leaf 0x4000000C
PROBE_TIMEOUT = 5.0

# Hypervisor signatures (EBX, ECX, EDX of the block's base leaf) -> technology. Sources: the
# tables of systemd (src/basic/virt.c, vm_table) and virt-what (virt-what-cpuid-helper.c), the
# hypervisors' own documentation (ACRN: Documentation/virt/acrn/cpuid.rst in Linux; OpenBSD:
# VMM_HV_SIGNATURE in sys/arch/amd64/include/vmmvar.h) and the published CPUID vendor lists.
SIGNATURES = {
    "XenVMMXenVMM": "xen",
    "KVMKVMKVM": "kvm",
    "Linux KVM Hv": "kvm",           # KVM's own Hyper-V identity
    "TCGTCGTCGTCG": "qemu",          # QEMU without KVM (TCG), QEMU 2.10 and later
    "VMwareVMware": "vmware",
    "Microsoft Hv": "microsoft",     # also Xen/KVM Hyper-V enlightenments: deferred to later blocks
    "bhyve bhyve ": "bhyve",
    "BHyVE BHyVE ": "bhyve",         # bhyve before FreeBSD 10.1 spelt it so
    "QNXQVMBSQG": "qnx",             # " QNXQVMBSQG " (QNX hypervisor)
    "ACRNACRNACRN": "acrn",
    "VBoxVBoxVBox": "oracle",        # VirtualBox with its own paravirtualisation interface
    "Apple VZ": "apple",
    "LKVMLKVMLKVM": "kvmtool",       # kvmtool (lkvm): KVM with its own device model
    "Jailhouse": "jailhouse",        # "Jailhouse\0\0\0"
    "SRESRESRESRE": "sre",           # Lockheed Martin's hardened security for Intel
    " prl hyperv ": "parallels",
    " lrpepyh vr ": "parallels",     # the same, byte-swapped by some Parallels versions
    "OpenBSDVMM58": "openbsd-vmm",
    "HAXMHAXMHAXM": "haxm",          # Intel HAXM
    "___ NVMM ___": "nvmm",          # NetBSD NVMM
    "EVMMEVMMEVMM": "intel-kgt",     # Intel Kernel Guard Technology
    "UnisysSpar64": "unisys-spar",
}


def _normal(sig: str) -> str:
    """Signatures compare without spaces and NULs: Parallels is seen as " lrpepyh  vr"."""
    return sig.replace(" ", "").replace("\0", "")


_BY_TEXT = {_normal(sig): name for sig, name in SIGNATURES.items()}


def hypervisor_of(sig: str) -> str | None:
    """Technology named by a signature; spaces and NULs do not matter."""
    return _BY_TEXT.get(_normal(sig)) if sig.strip(" \0") else None


def key(leaf: int, subleaf: int = 0) -> str:
    return f"0x{leaf:08x}" if subleaf == 0 else f"0x{leaf:08x}.{subleaf:x}"


def signature(regs: list[int]) -> str:
    """The 12-byte vendor text of a hypervisor base leaf (EBX, ECX, EDX), NULs stripped."""
    raw = struct.pack("<3I", regs[1] & 0xFFFFFFFF, regs[2] & 0xFFFFFFFF, regs[3] & 0xFFFFFFFF)
    return raw.split(b"\0", 1)[0].decode("latin-1")     # "KVMKVMKVM\0\0\0", "bhyve bhyve " kept


def _printable(text: str) -> bool:
    return bool(text) and all(32 <= ord(c) < 127 or c == "\0" for c in text)


@dataclass
class HypervisorBlock:
    base: int
    signature: str
    max_leaf: int
    hypervisor: str | None          # None: unknown signature
    leaves: dict[int, list[int]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"0x{self.base:08x}"


@dataclass
class CpuidView:
    """What discovery needs from CPUID, with how it was obtained."""
    method: str | Unknown
    vendor: str | Unknown                    # "GenuineIntel", "AuthenticAMD" ...
    hypervisor_bit: bool | Unknown           # leaf 1 ECX bit 31
    blocks: list[HypervisorBlock] | Unknown  # hypervisor leaf blocks, lowest base first

    def first_hypervisor(self, skip: tuple[str, ...] = ("microsoft",)) -> str | None:
        """The hypervisor of the first block not in `skip`; else the first block's."""
        if not known(self.blocks) or not self.blocks:
            return None
        for block in self.blocks:
            if block.hypervisor and block.hypervisor not in skip:
                return block.hypervisor
        return self.blocks[0].hypervisor

    def block(self, hypervisor: str) -> HypervisorBlock | None:
        if not known(self.blocks):
            return None
        return next((b for b in self.blocks if b.hypervisor == hypervisor), None)


# --------------------------------------------------------------------------- live readers
_DEV = "/dev/cpu/0/cpuid"

# void cpuid(uint32 leaf, uint32 subleaf, uint32 out[4]) for x86-64 System V:
#   push rbx; mov r8,rdx; mov eax,edi; mov ecx,esi; cpuid;
#   mov [r8],eax; mov [r8+4],ebx; mov [r8+8],ecx; mov [r8+12],edx; pop rbx; ret
_STUB = bytes.fromhex("53 4989d0 89f8 89f1 0fa2 418900 41895804 41894808 4189500c 5b c3")

_PROBE_CHILD = r"""
import ctypes, json, mmap, sys
stub = bytes.fromhex(sys.argv[1])
mem = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
mem.write(stub)
addr = ctypes.addressof(ctypes.c_char.from_buffer(mem))
fn = ctypes.CFUNCTYPE(None, ctypes.c_uint32, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32))(addr)
out = (ctypes.c_uint32 * 4)()
result = {}
for item in json.loads(sys.stdin.read()):
    leaf, sub = item
    fn(leaf, sub, out)
    result["%d.%d" % (leaf, sub)] = list(out)
print(json.dumps(result))
"""


def _machine() -> str:
    """platform.machine() without importing platform (~1.5 ms at every start): on Linux it is
    uname's machine field."""
    return os.uname().machine


def _is_x86_64() -> bool:
    return _machine() in ("x86_64", "AMD64", "i686", "i386")


def _dev_read(pairs: list[tuple[int, int]]) -> dict[tuple[int, int], list[int]]:
    fd = os.open(_DEV, os.O_RDONLY)
    moved_from = _to_cpu_0()
    try:
        out = {}
        for leaf, sub in pairs:
            data = os.pread(fd, 16, leaf | (sub << 32))
            out[(leaf, sub)] = list(struct.unpack("<4I", data))
        return out
    finally:
        if moved_from is not None:
            _set_affinity(moved_from)
        os.close(fd)


def _to_cpu_0() -> set[int] | None:
    """This thread onto CPU 0 while it reads /dev/cpu/0/cpuid, whose driver runs each read on
    CPU 0: from another CPU every leaf is an interprocessor call the reader spins on (the
    256-leaf hypervisor scan cost 5.4 ms of CPU from CPU 1 of a 2-vCPU VM, 1.2 ms from CPU 0).
    The affinity it had, to restore; None when it stays (CPU 0 not allowed, or the only one)."""
    try:
        allowed = os.sched_getaffinity(0)      # 0: the calling thread
    except OSError:
        return None
    if 0 not in allowed or allowed == {0} or not _set_affinity({0}):
        return None
    return allowed


def _set_affinity(cpus: set[int]) -> bool:
    try:
        os.sched_setaffinity(0, cpus)
        return True
    except OSError:
        return False


def _probe_read(pairs: list[tuple[int, int]]) -> dict[tuple[int, int], list[int]]:
    """Run the stub in a child; raises RuntimeError with a reason when it cannot."""
    if _machine() not in ("x86_64", "AMD64"):
        raise RuntimeError(f"no CPUID probe for {_machine()}")
    try:
        with no_sigpipe():      # a child that died early (SIGILL, seccomp) is its exit status
            proc = subprocess.run([sys.executable, "-I", "-S", "-c", _PROBE_CHILD, _STUB.hex()],
                                  input=json.dumps(pairs), capture_output=True, text=True,
                                  timeout=PROBE_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"probe timed out after {PROBE_TIMEOUT:g} s") from None
    except OSError as exc:
        raise RuntimeError(f"probe could not start: {exc}") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [""])[-1]
        how = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else \
            f"exit {proc.returncode}"
        raise RuntimeError(f"probe failed ({how}{': ' + last if last else ''})")
    data = json.loads(proc.stdout)
    return {_leaf_key(k): v for k, v in data.items()}


def _leaf_key(text: str) -> tuple[int, int]:
    """"leaf.subleaf" (the probe child's JSON keys) as numbers."""
    leaf, subleaf = text.split(".")
    return int(leaf), int(subleaf)


class _LiveCpuid:
    """Chooses a method once and reads leaves in batches (one child process per batch)."""

    def __init__(self) -> None:
        self.method: str | Unknown | None = None
        self.cache: dict[tuple[int, int], list[int]] = {}
        self.errors: dict[tuple[int, int], str] = {}

    def choose(self) -> str | Unknown:
        if self.method is not None:
            return self.method
        reasons = []
        if not _is_x86_64():
            self.method = Unknown(f"CPUID does not exist on {_machine()}")
            return self.method
        try:
            self.cache.update(_dev_read([(0, 0)]))
            self.method = "dev-cpu"
            return self.method
        except OSError as exc:
            reasons.append(f"{_DEV}: {exc.strerror or exc}")
        try:
            self.cache.update(_probe_read([(0, 0), (1, 0)]))
            self.method = "probe"
            return self.method
        except (RuntimeError, ValueError) as exc:
            reasons.append(str(exc))
        self.method = Unknown("; ".join(reasons))
        return self.method

    def prefetch(self, pairs: list[tuple[int, int]]) -> None:
        missing = [p for p in pairs if p not in self.cache]
        if not missing or not known(self.choose()):
            return
        try:
            reader = _dev_read if self.method == "dev-cpu" else _probe_read
            self.cache.update(reader(missing))
        except (OSError, RuntimeError, ValueError) as exc:
            for p in missing:
                self.errors[p] = str(getattr(exc, "strerror", None) or exc)

    def leaf(self, leaf: int, sub: int) -> list[int] | Unknown:
        self.prefetch([(leaf, sub)])
        if (leaf, sub) in self.cache:
            return self.cache[(leaf, sub)]
        method = self.choose()
        return Unknown(self.errors.get((leaf, sub), method.reason if isinstance(method, Unknown)
                                        else "not read"))


# --------------------------------------------------------------------------- the view
class CpuidReader:
    """Leaves by fact: live from the machine (recorded), in a capture from the sidecar."""

    def __init__(self, root: HostRoot):
        self.root = root
        self._live = _LiveCpuid() if root.live else None

    def _live_cpuid(self) -> _LiveCpuid:
        """The machine's CPUID: root.fact asks for a live value on a live root only."""
        assert self._live is not None
        return self._live

    def method(self) -> str | Unknown:
        value = self.root.fact("cpuid", "method", lambda: self._live_cpuid().choose())
        if isinstance(value, (Unknown, str)):
            return value
        return Unknown("malformed CPUID method record")

    def leaf(self, leaf: int, subleaf: int = 0) -> list[int] | Unknown:
        value = self.root.fact("cpuid", key(leaf, subleaf),
                               lambda: self._live_cpuid().leaf(leaf, subleaf))
        if isinstance(value, Unknown):
            return value
        if not (isinstance(value, list) and len(value) == 4 and all(
                isinstance(r, int) and not isinstance(r, bool) and 0 <= r < 2**32 for r in value)):
            return Unknown(f"malformed CPUID record for {key(leaf, subleaf)}")
        return value

    def scan(self) -> list[int] | Unknown:
        """Bases of the hypervisor blocks present (see module docstring)."""
        def produce() -> list[str] | Unknown:
            bases = list(range(HV_BASE, HV_LAST + 1, HV_STEP))
            live = self._live_cpuid()
            live.prefetch([(b, 0) for b in bases])
            found = []
            for base in bases:
                regs = live.leaf(base, 0)
                if isinstance(regs, Unknown):
                    return regs
                if _block_present(base, regs):
                    found.append(key(base))
            return found

        value = self.root.fact("cpuid", "scan", produce)
        if isinstance(value, Unknown):
            return value
        try:
            return [int(v, 16) for v in value]
        except (TypeError, ValueError, AttributeError):
            return Unknown("malformed CPUID scan record")

    def view(self) -> CpuidView:
        method = self.method()
        if isinstance(method, Unknown):
            return CpuidView(method, method, method, method)
        leaf0 = self.leaf(0)
        vendor: str | Unknown = leaf0 if isinstance(leaf0, Unknown) else struct.pack(
            "<3I", leaf0[1], leaf0[3], leaf0[2]).decode("latin-1").rstrip("\0")
        leaf1 = self.leaf(1)
        if isinstance(leaf1, Unknown):
            return CpuidView(method, vendor, leaf1, leaf1)
        hv_bit = bool(leaf1[2] & (1 << 31))
        bases = self.scan()
        if isinstance(bases, Unknown):
            # a capture taken before the scan ignored the bit has none when the bit is clear
            return CpuidView(method, vendor, hv_bit, bases if hv_bit else [])
        blocks = []
        for base in bases:
            regs = self.leaf(base)
            if isinstance(regs, Unknown):
                continue
            sig = signature(regs)
            max_leaf = regs[0]
            top = min(max_leaf, base + HV_LEAVES_PER_BLOCK) if base <= max_leaf < base + HV_STEP \
                else base
            if self._live is not None:
                self._live.prefetch([(leaf, 0) for leaf in range(base + 1, top + 1)])
            leaves = {base: regs}
            for leaf in range(base + 1, top + 1):
                sub = self.leaf(leaf)
                if known(sub):
                    leaves[leaf] = sub
            blocks.append(HypervisorBlock(base, sig, max_leaf, hypervisor_of(sig), leaves))
        return CpuidView(method, vendor, hv_bit, blocks)


def _block_present(base: int, regs: list[int]) -> bool:
    """A block exists when its signature is printable text or its max leaf lies in the block."""
    sig = signature(regs)
    return (_printable(sig) and hypervisor_of(sig) is not None) or (base <= regs[0] < base + HV_STEP
                                                       and _printable(sig))


def read(root: HostRoot) -> CpuidView:
    return CpuidReader(root).view()
