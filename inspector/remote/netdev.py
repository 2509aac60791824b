"""NIC counters for the live loop from /proc/net/dev: one file for every interface instead of
seven sysfs files each (each sysfs file costs the host an open and a glob). The kernel prints
both from the same dev_get_stats(), so rx/tx bytes, packets, errors and tx_dropped are the
sysfs figures exactly; its rx "drop" column adds rx_missed_errors, so rx_dropped is still read
from sysfs.
"""
from __future__ import annotations

# /proc/net/dev's columns after "NAME:" (net/core/net-procfs.c) that equal a sysfs counter
COLUMNS = {"rx_bytes": 0, "rx_packets": 1, "rx_errors": 2,
           "tx_bytes": 8, "tx_packets": 9, "tx_errors": 10, "tx_dropped": 11}
FROM_SYSFS = ("rx_dropped",)


def parse_net_dev(text: bytes) -> dict[str, dict[str, bytes]]:
    """NAME -> {counter: value as its sysfs file holds it (digits and a newline)}."""
    out: dict[str, dict[str, bytes]] = {}
    for line in text.splitlines()[2:]:
        name, sep, rest = line.partition(b":")     # ':' is never in an interface's name
        values = rest.split()
        if not sep or len(values) < 16 or not all(v.isdigit() for v in values):
            continue
        out[name.strip().decode("utf-8", "surrogateescape")] = {
            counter: values[column] + b"\n" for counter, column in COLUMNS.items()}
    return out
