"""Drive and flash-card health for the storage section.

Contract: `collect(root, names)` takes block device names from /sys/block and returns
{name: health} for the devices it knows how to check: HioHealth (hioX), FioHealth (fioX, and
fctN controllers that have no block device, e.g. a failed card), NvmeHealth (nvmeXnY),
SmartHealth (sdX), or Unknown(reason) when the health cannot be read (tool not installed,
failed, hung, printed garbage; virtual disks without SMART). Devices with no health notion
(loop, dm, md, zram ...) are left out. Never raises.

Commands run through `root.run` (timeout, PATH + vendor paths, recorded into captures); the
devices are checked concurrently so one hung CLI costs one timeout, not one per disk.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import Any

from inspector.discover import fio_status, hio, nvme_health, smart
from inspector.discover.drive_cmd import COMMAND_TIMEOUT
from inspector.discover.drive_state import TrendStore
from inspector.model import Unknown
from inspector.roots.host import HostRoot

FIO_MODULES = ("iomemory_vsl", "iomemory_vsl4", "fio")
_VIRTUAL = {"vd": "virtio_blk", "xvd": "Xen blkfront"}


def kind_of(name: str) -> str | None:
    if re.fullmatch(r"hio[a-z]+", name):
        return "hio"
    if re.fullmatch(r"fio[a-z]+", name):
        return "fio"
    if re.fullmatch(r"nvme\d+n\d+", name):
        return "nvme"
    if re.fullmatch(r"(sd|hd)[a-z]+", name):
        return "smart"
    if re.fullmatch(r"(vd|xvd)[a-z]+", name):
        return "virtual"
    return None


def collect(root: HostRoot, names: list[str], timeout: float = COMMAND_TIMEOUT,
            store: TrendStore | None = None) -> dict[str, Any]:
    if store is None and root.live:
        store = TrendStore()
    kinds = {name: kind_of(name) for name in names}
    jobs: dict[str, Callable[[], Any]] = {}
    for name, kind in kinds.items():
        if kind == "hio":
            jobs[name] = partial(hio.collect, root, name, timeout, store)
        elif kind == "nvme":
            jobs[name] = partial(nvme_health.collect, root, name, timeout)
        elif kind == "smart":
            jobs[name] = partial(smart.collect, root, name, timeout)
    fio_names = [n for n, k in kinds.items() if k == "fio"]
    if fio_names or any(root.exists(f"sys/module/{m}") for m in FIO_MODULES):
        jobs["\0fio"] = lambda: _fio(root, fio_names, timeout)
    results: dict[str, Any] = {}
    for key, value in _run_jobs(jobs, parallel=root.live):
        if key == "\0fio":
            results.update(value if isinstance(value, dict) else {n: value for n in fio_names})
        else:
            results[key] = value
    for name, kind in kinds.items():
        if kind == "virtual":
            driver = next(v for p, v in _VIRTUAL.items() if name.startswith(p))
            results[name] = Unknown(f"virtual disk ({driver}): no SMART")
    ordered = {n: results[n] for n in names if n in results}
    ordered.update({k: v for k, v in results.items() if k not in ordered})
    return ordered    # each block's `level` is judged in the health step (health.drives)


def _run_jobs(jobs: dict[str, Callable[[], Any]], parallel: bool):
    """(key, result) of each job, in order. Live, in threads: vendor commands each wait up to
    their timeout. A capture answers from its sidecar at once, where threads would only add
    GIL handoffs (tests/bench/bench_discovery.py prints both ways on 2,000 paths)."""
    if not parallel or len(jobs) < 2:
        return [(key, _guarded(job)) for key, job in jobs.items()]
    # here, not at the top: a host with fewer than two drives to ask needs no pool (nor the
    # logging module concurrent.futures imports)
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=min(8, len(jobs)), thread_name_prefix="drive") as pool:
        futures = {key: pool.submit(_guarded, job) for key, job in jobs.items()}
        return [(key, future.result()) for key, future in futures.items()]


def _guarded(job: Callable[[], Any]) -> Any:
    try:
        return job()
    except Exception as exc:  # a parser bug must cost one device's health, not the section
        return Unknown(f"health check failed: {type(exc).__name__}: {exc}")


def _fio(root: HostRoot, fio_names: list[str], timeout: float) -> dict[str, Any] | Unknown:
    status = fio_status.run_fio_status(root, timeout)
    if isinstance(status, Unknown):
        return status
    mapped: dict[str, Any] = dict(fio_status.map_devices(status, fio_names))
    for name in fio_names:
        mapped.setdefault(name, Unknown(f"fio-status does not list {name}"))
    return mapped
