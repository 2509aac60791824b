"""The kinds of `inspector probe`, each with its command module and one-line help: apart from
inspector.commands.probe so that the kinds' modules can read their help here without a cycle."""
from __future__ import annotations

# kind -> the module of its command (inspector.commands.X), in the order --help lists them
KIND_MODULES = {"io": "probe_io", "memcached": "probe_memcached", "dns": "probe_dns"}
KIND_SUMMARIES = {
    "io": "IO latency probe (ioping-class, percentiles, workers, ramp)",
    "memcached": "memcached load (memslap-like) with percentiles and server counters",
    "dns": "check each nameserver as glibc uses it; predict failover delay",
}


def kind_named(words: list[str]) -> str | None:
    """The kind `inspector probe WORDS...` runs: the first word that is not an option, as
    argparse chooses it; None when it names none (help, a mistake)."""
    word = next((w for w in words if not w.startswith("-")), None)
    return word if word in KIND_MODULES else None
