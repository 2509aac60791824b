"""Health rules for the resolver (dns): the configuration (`rules`, on a report) and what the
DNS probe measured (`probe_rules`, on its result). One vocabulary of codes for both, so diff,
check and the history database key on the same names:

- dns.unreadable (warn): /etc/resolv.conf could not be read: missing, a dangling link (its
  manager, e.g. systemd-resolved, not running), or unreadable.
- dns.single_nameserver (warn): one nameserver (for the systemd-resolved stub: one upstream);
  from the probe: the only server probed and configured, with the measured cost of losing it.
- dns.too_many_nameservers (warn): more than three; glibc ignores the rest.
- dns.failover_delay (warn): a blackholed first server costs each lookup more than 2 s.
- dns.use_vc_no_timeout (warn): use-vc makes lookups TCP, which has no resolver timeout.
- dns.no_attempts (crit): attempts:0 (or negative): glibc sends no query at all.
- dns.unknown_option (warn): an options token glibc does not know (silently ignored).
- dns.invalid_nameserver (warn): a nameserver line glibc cannot parse (silently ignored).
Measured by the probe only:
- dns.server_down (crit for the first server, else warn): timeout, refused or unreachable.
- dns.a_only (warn): A answered, AAAA dropped.
- dns.server_error (warn): SERVFAIL, REFUSED, NOTIMP or a lame referral.
- dns.tcp_broken (crit): truncates, and its TCP fails (glibc has no TCP timeout).
- dns.intermittent (warn): failed in an earlier round, answers now.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

from inspector.discover.resolver import ResolverSection
from inspector.discover.resolver_conf import ResolverConfig
from inspector.discover.resolver_delay import DelayEstimate
from inspector.model import Finding, Level, Report, Unknown

if TYPE_CHECKING:
    from inspector.probes.dns.failover import DnsProbeResult

FAILOVER_WARN_S = 2.0
# Codes the probe used before the vocabulary was one (`probe dns --json` of earlier versions):
# read them as today's.
LEGACY_CODES = {"dns.single_server": "dns.single_nameserver", "dns.use_vc": "dns.use_vc_no_timeout"}
# What-ifs about the configuration: findings, but no server misbehaves (`probe dns` exits 0)
CONFIG_CODES = frozenset({"dns.failover_delay", "dns.single_nameserver"})


def canonical_code(code: str) -> str:
    return LEGACY_CODES.get(code, code)


def rules(report: Report) -> Iterable[Finding]:
    s = report.section("dns")
    if not isinstance(s, ResolverSection):
        return []
    cfg = s.config
    if isinstance(cfg, Unknown):
        return [_unreadable(s)]
    out: list[Finding] = []
    out.extend(_count_rules(s, cfg))
    if cfg.attempts <= 0:
        out.append(Finding(
            Level.CRIT, "resolver", f"attempts:{cfg.attempts}: glibc sends no DNS query at all",
            [f"options {' '.join(cfg.option_words())}"],
            "Remove the attempts option or set attempts:2.", code="dns.no_attempts"))
    loss = s.first_server_loss
    if (not s.stub and len(s.used_nameservers) > 1 and isinstance(loss, DelayEstimate)
            and cfg.attempts > 0 and not cfg.use_vc and loss.seconds is not None
            and loss.seconds > FAILOVER_WARN_S):
        out.append(Finding(
            Level.WARN, "resolver", f"a blackholed first nameserver adds {loss.seconds:g} s to "
            + (f"1 lookup in {len(s.used_nameservers)} (rotate; {loss.average:.3g} s on average)"
               if cfg.rotate else "every lookup"),
            [loss.explanation, f"nameservers {', '.join(s.used_nameservers)}",
             f"options {' '.join(cfg.option_words())}"],
            "Set options timeout:1 attempts:2 (or run a local caching resolver); glibc fails "
            "over at once only when the dead server's host answers with ICMP refused.",
            code="dns.failover_delay"))
    if cfg.use_vc:
        out.append(_use_vc(cfg.option_words(),
                           loss.seconds if isinstance(loss, DelayEstimate) else "?"))
    if cfg.unknown_options:
        out.append(Finding(
            Level.WARN, "resolver", "resolv.conf options glibc does not know (ignored): " +
            " ".join(cfg.unknown_options),
            [f"unknown: {w}" for w in cfg.unknown_options],
            "Spell options as name:value (timeout:2, not timeout=2).", code="dns.unknown_option"))
    if cfg.invalid_nameservers:
        out.append(Finding(
            Level.WARN, "resolver", "nameserver lines glibc cannot parse (ignored): " +
            " ".join(repr(v) for v in cfg.invalid_nameservers),
            [f"nameserver {v}" for v in cfg.invalid_nameservers],
            "A nameserver line takes one IPv4 or IPv6 address (no port, no comment glued on).",
            code="dns.invalid_nameserver"))
    return out


_SERVICES = {"systemd-resolved": "systemd-resolved", "NetworkManager": "NetworkManager"}


def _unreadable(s: ResolverSection) -> Finding:
    """No usable resolv.conf. glibc then sends every lookup to 127.0.0.1:53, so the advice
    depends on why: a link whose target is gone (its manager is not running), no file, or a
    file glibc cannot read either."""
    reason = getattr(s.config, "reason", str(s.config))
    fallback = "until then glibc sends every lookup to 127.0.0.1, which fails unless a local " \
               "resolver listens there"
    if "not present" in reason and s.link_target:
        target = s.real_path if isinstance(s.real_path, str) else s.link_target
        target = target if target.startswith("/") else f"/{target}"
        service = _SERVICES.get(s.manager or "")
        return Finding(
            Level.WARN, "resolver", f"{s.path} is a dangling link: {target} does not exist"
            + (f" ({s.manager} not running?)" if s.manager else ""),
            [f"{s.path} -> {s.link_target}", f"{target}: not present"],
            (f"Start {service} (systemctl start {service}) or replace the link with a file "
             if service else "Restore the link's target or replace the link with a file ")
            + f"listing your nameservers; {fallback}.", code="dns.unreadable")
    if "not present" in reason:
        return Finding(
            Level.WARN, "resolver", f"no {s.path}: glibc sends every lookup to 127.0.0.1",
            [f"{s.path}: not present"],
            f"Create {s.path} with your nameservers, unless a local resolver listens on "
            "127.0.0.1:53 on purpose.", code="dns.unreadable")
    return Finding(
        Level.WARN, "resolver", f"resolver configuration unreadable: {s.config}", [s.path],
        (f"Make {s.path} readable by every user (chmod 644); " if "permission" in reason.lower()
         else f"Check {s.path} (ls -l, dmesg for I/O errors); ") + f"{fallback}.",
        code="dns.unreadable")


def _count_rules(s: ResolverSection, cfg: ResolverConfig) -> list[Finding]:
    out: list[Finding] = []
    if s.ignored_nameservers:
        out.append(Finding(
            Level.WARN, "resolver", f"{len(cfg.nameservers)} nameservers: glibc uses only the "
            f"first 3 and ignores {', '.join(s.ignored_nameservers)}",
            [f"used {', '.join(s.used_nameservers)}",
             f"ignored {', '.join(s.ignored_nameservers)}"],
            "Keep the three best servers in resolv.conf; the others are never queried.",
            code="dns.too_many_nameservers"))
    if s.stub:
        ups = s.upstreams
        if isinstance(ups, list) and len(ups) == 1:
            out.append(Finding(
                Level.WARN, "resolver", f"systemd-resolved has a single upstream server {ups[0]}",
                [f"stub {', '.join(s.used_nameservers)}", f"upstreams {ups[0]}"],
                "Configure a second DNS server (resolved.conf DNS= or the network config).",
                code="dns.single_nameserver"))
        return out
    if len(cfg.nameservers) == 1:
        ns = cfg.nameservers[0]
        what = "no nameserver configured: glibc uses 127.0.0.1" if cfg.nameserver_defaulted \
            else f"a single nameserver {ns}"
        out.append(Finding(
            Level.WARN, "resolver", what,
            [f"{s.path}: nameserver {ns}"] + ([s.first_server_loss.explanation]
                                               if hasattr(s.first_server_loss, "explanation")
                                               else []),
            "Add a second nameserver so a dead server costs one timeout instead of failing "
            "every lookup.", code="dns.single_nameserver"))
    return out


def _use_vc(options: list[str], blackholed_s) -> Finding:
    return Finding(
        Level.WARN, "resolver", "use-vc: lookups go over TCP, which glibc does not time out",
        [f"options {' '.join(options)}", f"blackholed server: about {blackholed_s} s of SYN "
         "retries; a server that accepts and never answers hangs the lookup for ever"],
        "Drop use-vc unless answers are truncated on UDP; if TCP is needed, put a local "
        "resolver with its own timeouts in front.", code="dns.use_vc_no_timeout")


def probe_rules(result: DnsProbeResult) -> list[Finding]:
    """Findings from what the DNS probe measured: each server's last round, earlier rounds'
    failures, and the predicted cost of losing a server (its what-ifs)."""
    from inspector.probes.dns.query import FAILED_KINDS
    out: list[Finding] = []
    for i, r in enumerate(result.servers):
        if r.kind in ("timeout", "refused", "unreachable"):
            first = i == 0
            cost = "every lookup waits for it" if r.kind == "timeout" else "fails over at once"
            out.append(Finding(
                Level.CRIT if first else Level.WARN, r.server,
                f"nameserver {r.server} {r.kind} now ({'the first server: ' if first else ''}{cost})",
                [f"{r.server}: {r.detail}"],
                "fix or remove this nameserver" + ("; until then lookups pay its timeout"
                                                    if r.kind == "timeout" else ""),
                code="dns.server_down"))
        elif r.kind == "a-only":
            out.append(Finding(Level.WARN, r.server, f"nameserver {r.server} answers only A "
                               "(AAAA dropped): every dual-stack lookup waits three windows",
                               [r.detail], "fix the server or middlebox dropping AAAA, or set "
                               "`options single-request` only as a stopgap", code="dns.a_only"))
        elif r.kind in ("servfail", "rcode-refused", "notimp", "lame"):
            answered = [q for q, o in r.outcomes.items() if o == "answered"]
            if answered:   # send_dg keeps the good reply: the lookup succeeds, one family short
                rejected = [f"{q} {o}" for q, o in r.outcomes.items() if o != "answered"]
                out.append(Finding(
                    Level.WARN, r.server, f"nameserver {r.server}: {', '.join(rejected)} "
                    f"({', '.join(answered)} answered)", [r.detail],
                    f"glibc keeps the {answered[0]} reply, so lookups succeed without "
                    f"{'/'.join(q for q, o in r.outcomes.items() if o != 'answered')} "
                    "addresses; fix the server's answers for that type",
                    code="dns.server_error"))
            else:
                out.append(Finding(Level.WARN, r.server, f"nameserver {r.server}: {r.kind}",
                                   [r.detail], "glibc skips it and asks the next server",
                                   code="dns.server_error"))
        elif r.kind == "truncated" and r.tcp_kind != "answered":
            out.append(Finding(Level.CRIT, r.server, f"nameserver {r.server} truncates and "
                               f"its TCP fails ({r.tcp_kind}): glibc has no TCP timeout",
                               [r.detail], code="dns.tcp_broken"))
    # With several rounds, the last one is not the whole story: a server that failed in an
    # earlier round but answers now is intermittent (lookups pay its timeout now and then)
    if result.rounds > 1:
        for r in result.servers[:3]:
            kinds = result.history.get(r.server, [])
            bad = [(i, k) for i, k in enumerate(kinds) if k in FAILED_KINDS]
            if not bad or r.kind in FAILED_KINDS or r.kind == "truncated":
                continue
            tally = Counter(k for _, k in bad)
            out.append(Finding(
                Level.WARN, r.server,
                f"nameserver {r.server} {r.kind} now but failed in {len(bad)} of "
                f"{len(kinds)} rounds (" + ", ".join(f"{k} x{n}" for k, n in
                                                     tally.most_common()) + ")",
                [f"round {i + 1}: {k}" for i, k in bad][:6],
                "an intermittent server costs lookups its failover delay whenever it "
                "fails: keep watching it (--count) and fix or remove it",
                code="dns.intermittent"))
    whatifs = result.what_ifs
    # Only when the configuration itself has one server: `--server X` probes one of many.
    if whatifs and len(result.servers) == 1 and len(result.nameservers) <= 1:
        lost = whatifs[0].blackholed
        out.append(Finding(Level.WARN, "resolver",
                           f"{whatifs[0].server} is the only nameserver: if it stops "
                           "answering, every lookup " + (
                               "hangs (TCP path, no timeout)" if lost.seconds is None
                               else f"fails after {lost.seconds:g} s"),
                           lost.steps[:6], "add a second nameserver or run a local cache "
                           "(systemd-resolved, nscd, unbound)", code="dns.single_nameserver"))
    elif whatifs and len(result.servers) > 1:
        first_lost = whatifs[0].blackholed
        if first_lost.seconds is None or first_lost.seconds > FAILOVER_WARN_S:
            out.append(Finding(Level.WARN, "resolver",
                               f"losing {whatifs[0].server} (blackholed) would make lookups "
                               + ("hang (no timeout on glibc's TCP path)"
                                  if first_lost.seconds is None
                                  else f"take {first_lost.text()}"),
                               first_lost.steps[:6], "lower `options timeout:` / `attempts:`, use "
                               "rotate, or run a local cache (systemd-resolved, nscd, unbound)",
                               code="dns.failover_delay"))
    if result.use_vc:
        out.append(_use_vc(result.options, whatifs[0].blackholed.seconds if whatifs else "?"))
    return out
