"""`--ignore PATTERN` (check, top): which findings an operator has accepted, and the
plugin-safe text they are matched as. Apart from inspector.outputs.check so that `top` does
not import the metrics and every drive collector with it."""
from __future__ import annotations

import fnmatch

from inspector.health.dns import LEGACY_CODES, canonical_code
from inspector.model import Finding
from inspector.text.escapes import printable


def plugin_text(text: str) -> str:
    """Text safe in plugin output: '|' starts perfdata for Nagios/Icinga (on the status line
    and in the long text), so a NIC named eth|0 or a vendor tool's message with a pipe would
    cut the status and turn the rest into garbage perfdata; newlines would split a finding."""
    return " ".join(text.replace("|", "/").split())


def ignore_keys(finding: Finding) -> set[str]:
    """What an --ignore pattern is matched against: the code (and the older name of a DNS
    code: dns.single_server is dns.single_nameserver), the subject as raw and as shown
    (`resolver`, `eth0`), and SUBJECT.CODE, so 'resolver.*' means every finding about it."""
    code = canonical_code(finding.code or "")
    codes = {c for c in (finding.code, code) if c}
    codes |= {old for old, new in LEGACY_CODES.items() if new == code}
    subjects = {s for s in (finding.subject, plugin_text(printable(finding.subject))) if s}
    return codes | subjects | {f"{s}.{c}" for s in subjects for c in codes}


def split_ignored(findings: list[Finding], patterns: list[str]) -> tuple[list[Finding], list[str]]:
    """(the findings no pattern matches, the patterns that matched no finding)."""
    used: set[str] = set()
    kept = []
    for f in findings:
        keys = ignore_keys(f)
        hits = {p for p in patterns if any(fnmatch.fnmatchcase(k, p) for k in keys)}
        used |= hits
        if not hits:
            kept.append(f)
    return kept, [p for p in patterns if p not in used]
