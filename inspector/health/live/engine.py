"""LiveRules: the live rules run over a sliding window of samples, with the state that gives
each finding the time it began (`since`) and, once it clears, the time it ended (`ended`).

A finding is keyed by (code, subject): while a rule keeps raising it, its level and message
follow the figures and `since` stays; when no rule raises it in a sample it ends, and the
ended finding is kept for the session (the most recent `keep_ended`). Raising the same key
again later starts a new finding with a new `since`. A sample in which a rule's source is
unknown (it timed out, or the sampler did not answer) ends none of that rule's findings:
they stay as they were, since nothing was seen.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable

from inspector.config import LiveThresholds
from inspector.health.live import cpu, disks, filesystems, memory, nics, tasks
from inspector.health.live.window import Context, Window
from inspector.live.findings import LiveFinding
from inspector.live.sampler import Rates
from inspector.model import Finding, Unknown, worst

Rule = Callable[[Window, LiveThresholds, Context], list[Finding]]
RULES: tuple[Rule, ...] = (cpu.rules, disks.rules, tasks.rules, memory.rules,
                           filesystems.rules, nics.rules)
# the sample's field each rule judges from
SOURCE_OF: dict[Rule, str] = {cpu.rules: "cpu", disks.rules: "disks", tasks.rules: "dstate",
                              memory.rules: "memory", filesystems.rules: "filesystems",
                              nics.rules: "nics"}


class LiveRules:
    """`update(sample) -> [LiveFinding]` (active first, then ended), one sample at a time,
    samples from one sampler in order."""

    def __init__(self, thresholds: LiveThresholds | None = None, *,
                 hypervisor: str | None = None, cpus: int = 0):
        self.thresholds = thresholds or LiveThresholds()
        t = self.thresholds
        self.context = Context(cpus=cpus, hypervisor=hypervisor)
        self.window = Window(t.window_s, max(t.disk.baseline_s, 600.0))
        self.active: dict[tuple[str, str], LiveFinding] = {}
        self.ended: deque[LiveFinding] = deque(maxlen=max(t.keep_ended, 0) or None)
        self._rule_of: dict[tuple[str, str], Rule] = {}     # the rule that raised a key

    def update(self, sample: Rates) -> list[LiveFinding]:
        self.window.push(sample)
        raised: dict[tuple[str, str], Finding] = {}
        blind: set[Rule] = set()
        for rule in RULES:
            source = getattr(sample, SOURCE_OF[rule], None)
            if isinstance(source, Unknown):
                blind.add(rule)
            for f in rule(self.window, self.thresholds, self.context):
                key = (f.code, f.subject)
                if key not in raised or f.level.severity > raised[key].level.severity:
                    raised[key] = f
                    self._rule_of[key] = rule
        now = sample.wall
        for key, f in raised.items():
            live = self.active.get(key)
            if live is None:
                live = self.active[key] = LiveFinding(f, since=now, worst=f.level)
            live.finding = f
            live.worst = worst([live.worst, f.level])
        for key in [k for k in self.active if k not in raised]:
            if self._rule_of.get(key) in blind:
                continue            # not seen in this sample: not ended either
            self._rule_of.pop(key, None)
            gone = self.active.pop(key)
            gone.ended = now
            self.ended.append(gone)
        return self.findings()

    def findings(self) -> list[LiveFinding]:
        active = sorted(self.active.values(),
                        key=lambda lf: (-lf.finding.level.severity, lf.since, lf.key))
        return active + sorted(self.ended, key=lambda lf: -(lf.ended or 0))

    def current(self) -> list[Finding]:
        """The active findings (plain Findings, `since` in their evidence)."""
        return [lf.as_finding() for lf in self.findings() if lf.active]
