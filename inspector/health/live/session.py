"""LiveSession: the live sampler's counters turned into samples and live findings, one step
at a time. The one loop `inspector top`, `check --live`, the recorder and the TUI share."""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from inspector.config import LiveThresholds
from inspector.health.live.engine import LiveFinding, LiveRules
from inspector.live.sampler import Counters, Rates, rates
from inspector.model import Finding
from inspector.roots.host import HostRoot


@dataclass
class Step:
    counters: Counters                 # this sample's counters
    sample: Rates | None               # rates since the previous step (None on the first)
    findings: list[LiveFinding] = field(default_factory=list)   # active, then ended


class LiveSession:
    """`step()` reads the sampler once (`read`: SamplerProcess.counters or .sample, or
    LiveSampler.sample in-process) and runs the live rules on the new sample."""

    def __init__(self, read: Callable[[], Counters], thresholds: LiveThresholds | None = None,
                 *, hypervisor: str | None = None):
        self.read = read
        self.rules = LiveRules(thresholds, hypervisor=hypervisor)
        self.prev: Counters | None = None

    def step(self) -> Step:
        cur = self.read()
        prev, self.prev = self.prev, cur
        if prev is None:
            return Step(cur, None, self.rules.findings())
        sample = rates(prev, cur)
        found = self.rules.update(sample)
        # the active ones, and those that ended with this sample (so a reader sees the end)
        sample.live_findings = [lf for lf in found if lf.active or lf.ended == sample.wall]
        return Step(cur, sample, found)

    def set_hypervisor(self, layer: str | None) -> None:
        """The virtualization layer discovery found (named by the steal rule)."""
        self.rules.context.hypervisor = layer


def hypervisor_of(virt: object) -> str | None:
    """The innermost VM layer of a report's virt section ("kvm (firecracker)", "xen (HVM,
    aws)"), what steals this guest's CPU; None on bare metal or when unknown."""
    layers = getattr(virt, "layers", None)
    if not isinstance(layers, list):
        return None
    for layer in layers:
        if getattr(layer, "kind", None) == "vm" and getattr(layer, "present", False):
            return str(layer.label())
    return None


def recorded_findings(found: list[LiveFinding], wall: float) -> list[Finding]:
    """What a recording keeps of one interval's live findings: each active one with the
    time it began in its message, and each that ended in this interval as OK, "ended ...".
    (A replay shows them as `top` showed them; the intervals they appear in say when.)"""
    out = []
    for lf in found:
        if lf.active:
            began = time.strftime("%H:%M:%S", time.localtime(lf.since))
            out.append(replace(lf.finding, message=f"{lf.finding.message} (since {began})"))
        elif lf.ended == wall:
            out.append(lf.as_finding())
    return out


def sample_for(root: HostRoot, seconds: float, thresholds: LiveThresholds | None = None,
               interval: float = 1.0) -> tuple[list[LiveFinding], int]:
    """Sample the live host for `seconds` (`interval` apart) through the sampler's child:
    every live finding seen (active, then ended) and how many samples the rules saw. Nothing
    on a capture (no live data)."""
    from inspector.live.worker import SamplerProcess
    if not root.live:
        return [], 0
    with SamplerProcess(root, read_timeout=min(0.8, interval)) as sampler:
        session = LiveSession(sampler.sample, thresholds)
        start = time.monotonic()
        session.step()
        samples = 0
        findings: list[LiveFinding] = []
        while time.monotonic() - start < seconds:
            delay = start + (samples + 1) * interval - time.monotonic()
            if delay > 0:
                time.sleep(min(delay, max(0.0, start + seconds - time.monotonic())))
            findings = session.step().findings
            samples += 1
    return findings, samples
