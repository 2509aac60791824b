"""Rich renderer for the resolver section: servers as glibc uses them, options, predicted delays."""
from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from inspector.discover.resolver import ResolverSection
from inspector.discover.resolver_delay import DelayEstimate
from inspector.model import Unknown


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


def _row(grid: Table, label: str, value: str | Text) -> None:
    """Host-provided strings are plain text, never Rich markup ("[fixed]", "[from ...]")."""
    grid.add_row(label, value if isinstance(value, Text) else Text(value))


def render(section: object) -> RenderableType:
    if not isinstance(section, ResolverSection):
        return Text(str(section), style="yellow")
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    source = section.path
    if section.link_target:
        source += f" -> {section.link_target}"
    if section.manager:
        source += f"  (managed by {section.manager}{', ' + section.mode if section.mode else ''})"
    _row(grid, "file", source)
    cfg = section.config
    if isinstance(cfg, Unknown):
        _row(grid, "config", Text(str(cfg), style="yellow"))
        return grid
    servers = Text()
    for i, (ns, wait) in enumerate(zip(section.used_nameservers, section.server_waits)):
        servers.append(f"{ns}", style="bold cyan")
        servers.append(f" (waits {wait} s)", style="dim")
        if i < len(section.used_nameservers) - 1:
            servers.append(", ")
    if cfg.nameserver_defaulted:
        servers.append("  none configured: glibc uses 127.0.0.1", style="yellow")
    _row(grid, "nameservers", servers)
    if section.ignored_nameservers:
        _row(grid, "ignored", Text(", ".join(section.ignored_nameservers) +
                                     "  (glibc uses the first 3)", style="yellow"))
    if cfg.invalid_nameservers:
        _row(grid, "invalid", Text(", ".join(map(repr, cfg.invalid_nameservers)),
                                     style="yellow"))
    if section.stub:
        ups = section.upstreams
        _row(grid, "upstreams", Text(", ".join(ups) or "none", style="bold cyan")
                     if isinstance(ups, list) else Text(str(ups), style="yellow"))
    search = " ".join(cfg.search) if cfg.search else "-"
    _row(grid, "search", f"{search}" + (f"  (from {cfg.search_source})"
                                          if cfg.search_source else ""))
    options = " ".join(cfg.option_words())
    if cfg.options_from_env:
        options += f"  (RES_OPTIONS: {' '.join(cfg.options_from_env)})"
    _row(grid, "options", options)
    if cfg.unknown_options:
        _row(grid, "unknown", Text(" ".join(cfg.unknown_options) + "  (ignored by glibc)",
                                     style="yellow"))
    if section.environment:
        _row(grid, "environment", " ".join(f"{k}={v!r}" for k, v in
                                             section.environment.items()))
    nss = section.nss_hosts
    _row(grid, "nsswitch hosts", nss if isinstance(nss, str) else Text(str(nss), style="dim"))
    if section.stub:
        _row(grid, "first server lost", Text("systemd-resolved fails over between its "
                                               "upstreams; glibc only talks to the stub",
                                               style="dim"))
    else:
        _row(grid, "first server lost", _delay(section.first_server_loss))
    _row(grid, "all servers lost", _delay(section.all_servers_down))
    return Group(grid)
