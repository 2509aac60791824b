"""A real OpenSSH server on a loopback port for the --ssh tests, with a throwaway host key and
user key, and remote environments without Python: a chroot holding only busybox (or dash or
bash and the libraries they link, beside busybox's tools) and the host's /proc and /sys
bind-mounted read-only. sshd needs its chroot's path owned by root and writable by no one else,
so the trees live under /run, not /tmp.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _libraries(binary: str) -> list[str]:
    out = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    libs = []
    for line in out.splitlines():
        words = line.split()
        for word in words:
            if word.startswith("/"):
                libs.append(word)
    return libs


@dataclass
class Chroot:
    """A root with no Python: `shell` (busybox, dash or bash) as /bin/sh, busybox for the
    tools, /proc and /sys of the host read-only, /dev/null."""
    path: Path
    shell: str
    mounts: list[str] = field(default_factory=list)

    @classmethod
    def make(cls, shell: str = "busybox") -> Chroot:
        path = Path(tempfile.mkdtemp(prefix="inspector-chroot-", dir="/run"))
        os.chmod(path, 0o755)
        made = cls(path, shell)
        bin_dir = path / "bin"
        bin_dir.mkdir()
        busybox = shutil.which("busybox")
        assert busybox, "busybox is needed (make test installs it)"
        shutil.copy2(busybox, bin_dir / "busybox")
        applets = subprocess.run([busybox, "--list"], capture_output=True, text=True).stdout.split()
        for applet in applets:
            if applet not in ("sh", "busybox"):
                (bin_dir / applet).symlink_to("busybox")
        binaries = [busybox]
        if shell == "busybox":
            (bin_dir / "sh").symlink_to("busybox")
        else:
            real = shutil.which(shell)
            assert real, f"{shell} is needed"
            shutil.copy2(real, bin_dir / "sh")
            binaries.append(real)
        for binary in binaries:
            for lib in _libraries(binary):
                lib_copy = path / lib.lstrip("/")
                lib_copy.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(os.path.realpath(lib), lib_copy)
        for name, target in (("usr/bin", "../bin"), ("usr/sbin", "../bin"), ("sbin", "bin")):
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            if not (path / name).exists():
                (path / name).symlink_to(target)
        dev = path / "dev"
        dev.mkdir()
        os.mknod(dev / "null", 0o666 | 0o020000, os.makedev(1, 3))
        os.chmod(dev / "null", 0o666)
        for tree in ("proc", "sys"):
            (path / tree).mkdir()
            mountpoint = str(path / tree)
            subprocess.run(["mount", "--bind", f"/{tree}", mountpoint], check=True)
            subprocess.run(["mount", "-o", "remount,bind,ro", mountpoint], check=True)
            made.mounts.append(mountpoint)
        return made

    def has_python(self) -> bool:
        """Whether any python is reachable inside the root (asked there, by its own shell)."""
        found = subprocess.run(["chroot", str(self.path), "/bin/sh", "-c",
                                "command -v python3 || command -v python || ls /usr/lib | "
                                "grep -i python"], capture_output=True, text=True)
        return bool(found.stdout.strip())

    def remove(self) -> None:
        for target in reversed(self.mounts):
            subprocess.run(["umount", "-l", target], check=False)
        self.mounts.clear()
        shutil.rmtree(self.path, ignore_errors=True)


@dataclass
class SshServer:
    """sshd on 127.0.0.1:`port` accepting `key` for root; the session runs `force` (the host's
    own shell when None) instead of what the client asked for."""
    workdir: Path
    port: int
    proc: subprocess.Popen
    key: Path
    known_hosts: Path
    log: Path

    @property
    def destination(self) -> str:
        return f"ssh://root@127.0.0.1:{self.port}"

    def options(self) -> list[str]:
        return [f"IdentityFile={self.key}", "IdentitiesOnly=yes",
                f"UserKnownHostsFile={self.known_hosts}", "StrictHostKeyChecking=yes",
                "LogLevel=ERROR"]

    def cli_options(self) -> list[str]:
        """The same as inspector's --ssh-option arguments."""
        out = []
        for option in self.options():
            out += ["--ssh-option", option]
        return out

    @classmethod
    def start(cls, force: str | None = None) -> SshServer:
        workdir = Path(tempfile.mkdtemp(prefix="inspector-sshd-"))
        host_key, key = workdir / "host_key", workdir / "id_ed25519"
        for path in (host_key, key):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
                           check=True)
        authorized = workdir / "authorized_keys"
        authorized.write_text(key.with_suffix(".pub").read_text())
        os.chmod(authorized, 0o600)
        port = free_port()
        known = workdir / "known_hosts"
        known.write_text(f"[127.0.0.1]:{port} {host_key.with_suffix('.pub').read_text()}")
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        config = workdir / "sshd_config"
        lines = [f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {host_key}",
                 f"AuthorizedKeysFile {authorized}", "PermitRootLogin prohibit-password",
                 "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no",
                 "StrictModes no", f"PidFile {workdir / 'sshd.pid'}", "PrintMotd no",
                 "AcceptEnv none", "LogLevel ERROR"]
        if force:
            lines.append(f"ForceCommand {force}")
        config.write_text("\n".join(lines) + "\n")
        log = workdir / "sshd.log"
        with open(log, "wb") as log_file:
            proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)],
                                    stdout=subprocess.DEVNULL, stderr=log_file)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError(f"sshd did not start: {log.read_text()}") from None
                time.sleep(0.05)
        return cls(workdir, port, proc, key, known, log)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        shutil.rmtree(self.workdir, ignore_errors=True)
