"""Health rules for the resolver (dns) section.

- dns.unreadable (warn): /etc/resolv.conf could not be read: missing, a dangling link (its
  manager, e.g. systemd-resolved, not running), or unreadable.
- dns.single_nameserver (warn): one nameserver (for the systemd-resolved stub: one upstream).
- dns.too_many_nameservers (warn): more than three; glibc ignores the rest.
- dns.failover_delay (warn): a blackholed first server costs each lookup more than 2 s.
- dns.use_vc_no_timeout (warn): use-vc makes lookups TCP, which has no resolver timeout.
- dns.no_attempts (crit): attempts:0 (or negative): glibc sends no query at all.
- dns.unknown_option (warn): an options token glibc does not know (silently ignored).
- dns.invalid_nameserver (warn): a nameserver line glibc cannot parse (silently ignored).
"""
from __future__ import annotations

from typing import Iterable

from inspector.discover.resolver import ResolverSection
from inspector.model import Finding, Level, Report

FAILOVER_WARN_S = 2.0


def rules(report: Report) -> Iterable[Finding]:
    s = report.section("dns")
    if not isinstance(s, ResolverSection):
        return []
    cfg = s.config
    if not hasattr(cfg, "nameservers"):
        return [_unreadable(s)]
    out: list[Finding] = []
    out.extend(_count_rules(s))
    if cfg.attempts <= 0:
        out.append(Finding(
            Level.CRIT, "resolver", f"attempts:{cfg.attempts}: glibc sends no DNS query at all",
            [f"options {' '.join(cfg.option_words())}"],
            "Remove the attempts option or set attempts:2.", code="dns.no_attempts"))
    loss = s.first_server_loss
    if (not s.stub and len(s.used_nameservers) > 1 and hasattr(loss, "seconds")
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
        out.append(Finding(
            Level.WARN, "resolver", "use-vc: lookups go over TCP, which glibc does not time out",
            [f"options {' '.join(cfg.option_words())}", f"blackholed server: about "
             f"{loss.seconds if hasattr(loss, 'seconds') else '?'} s of SYN retries; a server "
             "that accepts and never answers hangs the lookup for ever"],
            "Drop use-vc unless answers are truncated on UDP; if TCP is needed, put a local "
            "resolver with its own timeouts in front.", code="dns.use_vc_no_timeout"))
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


def _count_rules(s: ResolverSection) -> list[Finding]:
    cfg = s.config
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
