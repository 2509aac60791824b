"""Rich renderer for the resolver section: servers as glibc uses them, options, predicted delays."""
from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from inspector.discover.resolver import ResolverSection
from inspector.discover.resolver_delay import DelayEstimate
from inspector.model import Unknown
from inspector.render.rows import add_row, label_grid


def _delay(est: object) -> Text:
    if not isinstance(est, DelayEstimate):
        return Text(str(est), style="yellow")
    if est.seconds is None:
        head = Text("unbounded", style="bold red")
    else:
        style = "bold red" if est.seconds > 2 else "green"
        head = Text(f"{est.seconds:g} s", style=style)
        if est.average is not None and est.average != est.seconds:
            head.append(f" (average {est.average:.3g} s)", style="")
    if est.fails:
        head.append(" then the lookup fails", style="")
    head.append(f"  {est.explanation}", style="dim")
    return head


def render(section: object) -> RenderableType:
    if not isinstance(section, ResolverSection):
        return Text(str(section), style="yellow")
    grid = label_grid()
    source = section.path
    if section.link_target:
        source += f" -> {section.link_target}"
    if section.manager:
        source += f"  (managed by {section.manager}{', ' + section.mode if section.mode else ''})"
    add_row(grid, "file", source)
    cfg = section.config
    if isinstance(cfg, Unknown):
        add_row(grid, "config", Text(str(cfg), style="yellow"))
        return grid
    servers = Text()
    for i, (ns, wait) in enumerate(zip(section.used_nameservers, section.server_waits)):
        servers.append(f"{ns}", style="bold cyan")
        servers.append(f" (waits {wait} s)", style="dim")
        if i < len(section.used_nameservers) - 1:
            servers.append(", ")
    if cfg.nameserver_defaulted:
        servers.append("  none configured: glibc uses 127.0.0.1", style="yellow")
    add_row(grid, "nameservers", servers)
    if section.ignored_nameservers:
        add_row(grid, "ignored", Text(", ".join(section.ignored_nameservers) +
                                      "  (glibc uses the first 3)", style="yellow"))
    if cfg.invalid_nameservers:
        add_row(grid, "invalid", Text(", ".join(map(repr, cfg.invalid_nameservers)),
                                      style="yellow"))
    if section.stub:
        ups = section.upstreams
        add_row(grid, "upstreams", Text(", ".join(ups) or "none", style="bold cyan")
                if isinstance(ups, list) else Text(str(ups), style="yellow"))
    search = " ".join(cfg.search) if cfg.search else "-"
    add_row(grid, "search", f"{search}" + (f"  (from {cfg.search_source})"
                                           if cfg.search_source else ""))
    options = " ".join(cfg.option_words())
    if cfg.options_from_env:
        options += f"  (RES_OPTIONS: {' '.join(cfg.options_from_env)})"
    add_row(grid, "options", options)
    if cfg.unknown_options:
        add_row(grid, "unknown", Text(" ".join(cfg.unknown_options) + "  (ignored by glibc)",
                                      style="yellow"))
    if section.environment:
        add_row(grid, "environment", " ".join(f"{k}={v!r}" for k, v in
                                              section.environment.items()))
    nss = section.nss_hosts
    add_row(grid, "nsswitch hosts", nss if isinstance(nss, str) else Text(str(nss), style="dim"))
    if section.stub:
        add_row(grid, "first server lost", Text("systemd-resolved fails over between its "
                                                "upstreams; glibc only talks to the stub",
                                                style="dim"))
    else:
        add_row(grid, "first server lost", _delay(section.first_server_loss))
    add_row(grid, "all servers lost", _delay(section.all_servers_down))
    return Group(grid)
