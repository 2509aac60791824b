"""Where the memcached probe connects: the host resolved once, then one test connection.

Resolving once up front means an unknown name fails in one clear line ("cannot resolve HOST:
reason") instead of N connection attempts each failing inside asyncio, and the load's
connections go to one numeric address (IPv4 or IPv6) without a lookup per connection. The test
connection turns a refused port or an unreachable host into one clear line as well.
"""
from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from inspector.probes.base import ProbeError
from inspector.probes.memcached.engine import classify_connect_error

DEFAULT_PORT = 11211


class TargetError(Exception):
    """The target cannot be used: `kind` is an error id (see mc_engine.ERROR_LABELS)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Address:
    host: str          # numeric address, IPv6 without brackets ("::1")
    port: int
    family: int

    @property
    def display(self) -> str:
        return format_target(self.host, self.port)


def format_target(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def parse_address(text: str, default_port: int = DEFAULT_PORT) -> tuple[str, int]:
    """HOST, HOST:PORT, [IPv6]:PORT or a bare IPv6 address -> (host, port); the one parser of
    a memcached target (the CLI, `--probe memcached:...`, the TUI's form)."""
    text = text.strip()
    host, port = text, default_port
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise ProbeError(f"bad server address {text!r}")
        host, rest = text[1:end], text[end + 1:]
        if rest:
            if not rest.startswith(":"):
                raise ProbeError(f"bad server address {text!r}")
            port = _port(rest[1:], text)
    elif text.count(":") == 1:
        host, given = text.split(":")
        port = _port(given, text)
    if not host:
        raise ProbeError(f"bad server address {text!r}")
    return host, port


def _port(text: str, whole: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise ProbeError(f"bad port in {whole!r}") from None
    if not 0 < port < 65536:
        raise ProbeError(f"port out of range in {whole!r}")
    return port


def is_numeric(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


def _gai_reason(exc: OSError | UnicodeError) -> str:
    # a UnicodeError (a name IDNA cannot encode: a label over 63 characters) has no strerror
    strerror = exc.strerror if isinstance(exc, OSError) else None
    return strerror or str(exc) or type(exc).__name__


async def resolve_async(host: str, port: int, timeout: float) -> list[Address]:
    loop = asyncio.get_running_loop()
    try:
        infos = await asyncio.wait_for(
            loop.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP),
            timeout)
    except TimeoutError:
        raise TargetError("resolve", f"cannot resolve {host}: timed out after {timeout:g} s") from None
    except (socket.gaierror, UnicodeError, OSError) as exc:
        raise TargetError("resolve", f"cannot resolve {host}: {_gai_reason(exc)}") from None
    return _addresses(host, port, infos)


def _addresses(host: str, port: int, infos: Iterable[tuple[Any, ...]]) -> list[Address]:
    out: list[Address] = []
    for family, _, _, _, sockaddr in infos:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        addr = Address(sockaddr[0], port, family)
        if addr not in out:
            out.append(addr)
    if not out:
        raise TargetError("resolve", f"cannot resolve {host}: no IPv4 or IPv6 address")
    return out


def _connect_reason(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused (nothing listening on that port)"
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
        return f"connect timed out after {timeout:g} s"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc)


async def reach(host: str, port: int, timeout: float) -> Address:
    """Resolve, then open (and close) one connection to the first address that accepts.
    Raises TargetError with one clear line when no address can be used."""
    if is_numeric(host):
        addresses = [Address(host, port, socket.AF_INET6 if ":" in host else socket.AF_INET)]
    else:
        addresses = await resolve_async(host, port, timeout)
    first: tuple[BaseException, Address] | None = None
    for addr in addresses:
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection(addr.host, port), timeout)
        except (TimeoutError, OSError) as exc:
            first = first or (exc, addr)
            continue
        writer.transport.abort()
        return addr
    assert first is not None      # resolve_async gives an address or raises
    error, addr = first
    shown = format_target(host, port) if addr.host == host else \
        f"{format_target(host, port)} ({addr.host})"
    raise TargetError(classify_connect_error(error),
                      f"cannot connect to {shown}: {_connect_reason(error, timeout)}")
