"""resolv.conf read the way glibc (res_init.c, 2.26 .. 2.3x) reads it. Pure functions, no I/O.

API (the DNS failover probe builds on it):

    parse_resolv_conf(text, env=None, hostname=None) -> ResolverConfig
        text      contents of /etc/resolv.conf (any garbage: never raises)
        env       {"RES_OPTIONS": ..., "LOCALDOMAIN": ...}; missing or None keys are unset
        hostname  gethostname(); its domain is the search list when the file sets none
    ResolverConfig.used_nameservers      the first MAXNS (3): the only ones glibc queries
    ResolverConfig.ignored_nameservers   valid lines past the third
    search_names(name, config) -> list[str]
        the names glibc's res_search tries, in order, when every answer is NXDOMAIN
    timeout_rounds(name, config) -> int
        how many full res_send rounds a lookup of `name` runs when every server times out
        (a timeout ends the search-list walk; the name as is is still tried: usually 2)

glibc semantics reproduced here:
- A keyword matches only at the start of a line and must be followed by a blank or tab;
  lines starting with ';' or '#' are comments; a line ends at its first NUL byte.
- nameserver: the first word; IPv4 in inet_aton form (so "10.1" is 10.0.0.1), else IPv6 with an
  optional %scope; anything else is ignored. No valid line at all -> 127.0.0.1 (defaulted).
- domain and search replace each other: the last such line wins. `domain` keeps its first word.
  LOCALDOMAIN (when set) overrides both. No search list -> the domain part of the hostname.
- options (file lines, then RES_OPTIONS): tokens split by blanks/tabs, matched by prefix as
  glibc's strncmp does ("rotatex" is rotate). ndots:N capped at 15, timeout:N capped at 30,
  attempts:N capped at 5, values parsed like atoi. Unrecognised tokens are kept in
  `unknown_options` (glibc ignores them silently: "timeout=2" is a classic typo).
- Effective timeout per server is computed in res_send (see resolver_delay): 0 behaves as 1.
"""
from __future__ import annotations

import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field

MAXNS = 3
RES_TIMEOUT = 5        # default seconds
RES_MAXRETRANS = 30    # timeout cap
RES_DFLRETRY = 2       # default attempts
RES_MAXRETRY = 5       # attempts cap
RES_MAXNDOTS = 15
DEFAULT_NAMESERVER = "127.0.0.1"

# glibc's option table, in its matching order (single-request-reopen before single-request).
FLAG_OPTIONS: tuple[tuple[str, str], ...] = (
    ("rotate", "rotate"),
    ("edns0", "edns0"),
    ("single-request-reopen", "single_request_reopen"),
    ("single-request", "single_request"),
    ("no_tld_query", "no_tld_query"),
    ("no-tld-query", "no_tld_query"),
    ("no-reload", "no_reload"),
    ("use-vc", "use_vc"),
    ("trust-ad", "trust_ad"),
    ("no-aaaa", "no_aaaa"),
)
_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


@dataclass
class ResolverConfig:
    """/etc/resolv.conf as glibc reads it (RES_OPTIONS and LOCALDOMAIN applied)."""
    nameservers: list[str] = field(default_factory=list)      # every valid line, in order
    nameserver_defaulted: bool = False                          # none valid: glibc uses 127.0.0.1
    invalid_nameservers: list[str] = field(default_factory=list)  # values glibc could not parse
    search: list[str] = field(default_factory=list)  # domains appended to short names, in order
    search_source: str | None = None     # search | domain | LOCALDOMAIN | hostname | None
    ndots: int = 1                       # names with fewer dots try the search list first
    # timeout:N, seconds per try on the first server, after glibc's cap (30); may be 0 or
    # negative like glibc's (waits then count as 1 s)
    timeout: int = RES_TIMEOUT
    # attempts:N, rounds over all servers, after glibc's cap (5); <= 0 means no query is sent
    attempts: int = RES_DFLRETRY
    rotate: bool = False                 # each lookup starts at the next server (round robin)
    edns0: bool = False                  # queries carry EDNS0 (larger UDP answers)
    single_request: bool = False         # A and AAAA sent one after the other, not together
    single_request_reopen: bool = False  # only one of A/AAAA answered: resend on a new socket
    no_tld_query: bool = False           # a name without dots is not tried as a top-level domain
    no_reload: bool = False              # a changed resolv.conf is not re-read automatically
    use_vc: bool = False                 # queries over TCP: no timeout of its own (SYN retries)
    trust_ad: bool = False               # keep the server's DNSSEC AD bit for applications
    no_aaaa: bool = False                # getaddrinfo sends no AAAA queries (glibc 2.36+)
    options_from_env: list[str] = field(default_factory=list)  # RES_OPTIONS tokens applied
    # option tokens glibc does not know and silently ignores ("timeout=2" is a typo)
    unknown_options: list[str] = field(default_factory=list)
    sortlist: list[str] = field(default_factory=list)          # raw, not interpreted

    @property
    def used_nameservers(self) -> list[str]:
        return self.nameservers[:MAXNS]

    @property
    def ignored_nameservers(self) -> list[str]:
        return self.nameservers[MAXNS:]

    @property
    def effective_timeout(self) -> int:
        """The first server's wait in seconds (res_send: timeout << 0, at least 1)."""
        return max(self.timeout, 1)

    def option_words(self) -> list[str]:
        """The options in resolv.conf spelling, for display."""
        words = [f"ndots:{self.ndots}", f"timeout:{self.timeout}", f"attempts:{self.attempts}"]
        seen = set()
        for spelling, attr in FLAG_OPTIONS:
            if getattr(self, attr) and attr not in seen:
                seen.add(attr)
                words.append(spelling)
        return words


def parse_resolv_conf(text: str, env: Mapping[str, str | None] | None = None,
                      hostname: str | None = None) -> ResolverConfig:
    """Parse resolv.conf text with glibc's rules (module docstring). Never raises."""
    env = env or {}
    cfg = ResolverConfig()
    localdomain = env.get("LOCALDOMAIN")
    if localdomain is not None:
        cfg.search = _split_list(localdomain.split("\n", 1)[0])
        cfg.search_source = "LOCALDOMAIN"
    for raw in text.split("\n"):
        line = raw.split("\0", 1)[0]
        if not line or line[0] in ";#":
            continue
        if _match(line, "domain"):
            value = line[len("domain"):].lstrip(" \t")
            if localdomain is not None or not value:
                continue
            cfg.search = [re.split(r"[ \t]", value, maxsplit=1)[0]]
            cfg.search_source = "domain"
        elif _match(line, "search"):
            value = line[len("search"):].lstrip(" \t")
            if localdomain is not None or not value:
                continue
            cfg.search = _split_list(value)
            cfg.search_source = "search"
        elif _match(line, "nameserver"):
            value = re.split(r"[ \t]", line[len("nameserver"):].lstrip(" \t"), maxsplit=1)[0]
            address = parse_nameserver(value)
            if address is None:
                cfg.invalid_nameservers.append(value)
            else:
                cfg.nameservers.append(address)
        elif _match(line, "sortlist"):
            cfg.sortlist.extend(line[len("sortlist"):].split())
        elif _match(line, "options"):
            _apply_options(cfg, line[len("options"):], from_env=False)
    if not cfg.nameservers:
        cfg.nameservers = [DEFAULT_NAMESERVER]
        cfg.nameserver_defaulted = True
    if not cfg.search and cfg.search_source is None and hostname and "." in hostname:
        domain = hostname.split(".", 1)[1]
        if domain:
            cfg.search = [domain]
            cfg.search_source = "hostname"
    res_options = env.get("RES_OPTIONS")
    if res_options is not None:
        _apply_options(cfg, res_options, from_env=True)
    return cfg


def _match(line: str, keyword: str) -> bool:
    """glibc's MATCH(): the keyword at the line start, then a blank or a tab."""
    n = len(keyword)
    return line.startswith(keyword) and len(line) > n and line[n] in " \t"


def _split_list(value: str) -> list[str]:
    """Blank/tab separated names. glibc keeps the first entry even when empty (LOCALDOMAIN
    starting with a blank) and skips the other empty ones."""
    parts = re.split(r"[ \t]", value)
    return [parts[0]] + [p for p in parts[1:] if p]


def parse_nameserver(value: str) -> str | None:
    """The address glibc accepts from a nameserver word, normalised; None if it rejects it."""
    if not value or "\0" in value:
        return None
    # __inet_aton_exact: inet_aton forms ("10.1", "0x7f.1"), the whole word consumed
    if not any(c.isspace() for c in value):
        try:
            return socket.inet_ntoa(socket.inet_aton(value))
        except (OSError, ValueError, UnicodeError):
            pass
    address, _, scope = value.partition("%")
    try:
        canonical = socket.inet_ntop(socket.AF_INET6, socket.inet_pton(socket.AF_INET6, address))
    except (OSError, ValueError, UnicodeError):
        return None
    return f"{canonical}%{scope}" if scope else canonical


def atoi(text: str) -> int:
    """C atoi as glibc does it (strtol, then truncated to int)."""
    m = re.match(r"[ \t\n\v\f\r]*([+-]?)([0-9]*)", text)
    digits = m.group(2) if m else ""
    if not m or not digits:
        return 0
    value = int(digits) * (-1 if m.group(1) == "-" else 1)
    value = max(_LONG_MIN, min(_LONG_MAX, value))          # strtol saturates
    value &= 0xFFFFFFFF                                      # (int) keeps the low 32 bits
    return value - (1 << 32) if value > _INT_MAX else value


def _apply_options(cfg: ResolverConfig, text: str, from_env: bool) -> None:
    """glibc res_setoptions: blank/tab separated tokens, matched by prefix."""
    for token in re.split(r"[ \t]+", text):
        if not token:
            continue
        known = _apply_option(cfg, token)
        word = token.rstrip("\r\n")
        if not known:
            cfg.unknown_options.append(word)
        elif from_env:
            cfg.options_from_env.append(word)


def _apply_option(cfg: ResolverConfig, token: str) -> bool:
    if token.startswith("ndots:"):
        value = atoi(token[len("ndots:"):])
        # stored in an unsigned 4-bit field: a negative value keeps its low 4 bits
        cfg.ndots = (value if value <= RES_MAXNDOTS else RES_MAXNDOTS) & 0xF
        return True
    if token.startswith("timeout:"):
        value = atoi(token[len("timeout:"):])
        cfg.timeout = value if value <= RES_MAXRETRANS else RES_MAXRETRANS
        return True
    if token.startswith("attempts:"):
        value = atoi(token[len("attempts:"):])
        cfg.attempts = value if value <= RES_MAXRETRY else RES_MAXRETRY
        return True
    for spelling, attr in FLAG_OPTIONS:
        if token.startswith(spelling):
            setattr(cfg, attr, True)
            return True
    return False


def search_names(name: str, cfg: ResolverConfig) -> list[str]:
    """Names res_search queries for `name`, in order, when each answer is NXDOMAIN."""
    dots = name.count(".")
    trailing_dot = name.endswith(".")
    out: list[str] = []
    tried_as_is = False
    if dots >= cfg.ndots or trailing_dot:
        out.append(name)
        if trailing_dot:
            return out
        tried_as_is = True
    root_on_list = False
    if cfg.search:   # RES_DEFNAMES and RES_DNSRCH are on by default
        for domain in cfg.search:
            domain = domain[1:] if domain.startswith(".") else domain
            if not domain:
                root_on_list = True
            out.append(f"{name}.{domain}" if domain else f"{name}.")
    if (dots or not cfg.search or not cfg.no_tld_query) and not (tried_as_is or root_on_list):
        out.append(name)
    return out


def timeout_rounds(name: str, cfg: ResolverConfig) -> int:
    """Full res_send rounds for `name` when every server times out.

    A timeout (TRY_AGAIN without SERVFAIL) ends the search-list walk after its first entry;
    the name as is is still tried when it was not tried first. Measured: one search domain
    doubles the worst case."""
    dots = name.count(".")
    if name.endswith("."):
        return 1
    if dots >= cfg.ndots:
        return 2 if cfg.search else 1
    rounds = 1 if cfg.search else 0
    first = cfg.search[0] if cfg.search else None
    root_first = first is not None and first.lstrip(".") == ""
    if (dots or not cfg.search or not cfg.no_tld_query) and not root_first:
        rounds += 1
    return max(rounds, 1)
