"""Predict what glibc's getaddrinfo(name, AF_UNSPEC) does with the nameservers as they behave
now: its outcome (addresses of which family, or which failure) and how long it takes; and
what-ifs (a server refusing, a server blackholed).

A step-by-step simulation of glibc 2.36 (Debian 12), whose rules it follows:
- send_dg (res_send.c): A and AAAA go out together (sendmmsg) and share one window per server
  (resolver_delay.server_wait). Each reply is judged on its own: an error rcode (SERVFAIL,
  NOTIMP, REFUSED) or a lame reply (NOERROR, no answer, no AA, no RA, no additional) is
  rejected; if the other query's reply had already been accepted, the lookup ends with that
  one (A answered, AAAA lame: getaddrinfo returns the A address); if both are rejected, the
  next server is asked. A truncated reply repeats both queries over TCP to the same server.
  A window that ends with one reply accepted switches the process to single-request (A, then
  AAAA after A's reply) and retries in a new window, then to single-request-reopen (a new
  socket for AAAA), then returns the one reply. In single-request mode a rejected A reply
  moves on to the next server at once, AAAA unsent (measured on 2.36; the send_dg source
  read for this would wait out the window).
- send_vc: over TCP (use-vc, or after truncation, which keeps TCP for the servers after it)
  there is one try per server and no timeout: a refused connect moves on, a blackholed one
  costs the kernel's SYN retries, a server that accepts and never answers hangs the lookup;
  every reply is taken as it is (a SERVFAIL over TCP ends the lookup).
- __res_context_send: `attempts` passes over the servers from the rotate offset (which
  advances by one for every query glibc sends, search-list names included); a server that
  answers ICMP port unreachable costs nothing; none answering at all is ECONNREFUSED.
- __res_context_query: the lookup succeeds if either reply has NOERROR and answers;
  otherwise NXDOMAIN -> name not found, SERVFAIL -> temporary failure, empty -> no data,
  the rest -> non-recoverable.
- __res_context_search: ndots decides whether the name is tried as is first; the search list
  goes on after not-found, no-data and SERVFAIL, stops on anything else (timeouts included)
  and at once when every server refused; the name as is comes last unless tried already.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

from inspector.discover.resolver_conf import ResolverConfig
from inspector.discover.resolver_delay import server_wait, syn_timeout

REFUSED_COST_S = 0.001     # ICMP port unreachable arrives within a round trip
FAMILIES = {"A": "IPv4", "AAAA": "IPv6"}
REJECTED = frozenset({"servfail", "rcode-refused", "notimp", "lame"})
# getaddrinfo's error for each final h_errno of nss_dns (what `getent ahosts` and Python's
# socket.gaierror say)
GAI_ERRORS = {"HOST_NOT_FOUND": "Name or service not known",
              "NO_DATA": "No address associated with hostname",
              "TRY_AGAIN": "Temporary failure in name resolution",
              "NO_RECOVERY": "Name or service not known"}
# how a predicted lookup ends: answered, one of glibc's errors, or never (its TCP path waits)
Outcome = Literal["answered", "nxdomain", "nodata", "failed", "hangs"]
OUTCOME_OF: dict[str, Outcome] = {"HOST_NOT_FOUND": "nxdomain", "NO_DATA": "nodata",
                                  "TRY_AGAIN": "failed", "NO_RECOVERY": "failed"}


@dataclass(frozen=True)
class Reply:
    """One query's reply as glibc reads it."""
    rcode: str = "NOERROR"
    answers: int = 1
    latency_s: float = 0.0
    authoritative: bool = False
    recursion_available: bool = True
    additional: int = 0
    truncated: bool = False

    @property
    def outcome(self) -> str:
        from inspector.probes.dns.query import reply_outcome
        return reply_outcome(self.rcode, self.answers, self.authoritative,
                             self.recursion_available, self.additional, self.truncated)

    @property
    def usable(self) -> bool:
        """res_query's test: NOERROR with answer records."""
        return self.rcode == "NOERROR" and self.answers > 0


ANSWERED = Reply()
EMPTY = Reply(answers=0)
LAME = Reply(answers=0, recursion_available=False)
NXDOMAIN = Reply("NXDOMAIN", 0)
SERVFAIL = Reply("SERVFAIL", 0)
REFUSED = Reply("REFUSED", 0)
TRUNCATED = Reply(answers=0, truncated=True)


@dataclass
class ServerState:
    """What one nameserver does to glibc's queries (for one name), as the probe saw it or as a
    what-if assumes. Replies per query type; a type not listed gets `default`; None: silent."""
    default: Reply | None = ANSWERED
    replies: dict[str, Reply | None] = field(default_factory=dict)
    udp_error: str | None = None        # port-unreachable | unreachable | error: the socket fails
    error_after_s: float = REFUSED_COST_S
    tcp: str | None = None              # connect: accepted | refused | timeout | error; None:
                                        # not probed (taken to answer as over UDP)
    tcp_replies: dict[str, Reply | None] = field(default_factory=dict)   # None: never answers
    tcp_latency_s: float = 0.0
    kind: str = ""                      # the probe's verdict, for the steps

    def reply(self, rdtype: str) -> Reply | None:
        return self.replies.get(rdtype, self.default)

    def tcp_reply(self, rdtype: str) -> Reply | None:
        if rdtype in self.tcp_replies:
            return self.tcp_replies[rdtype]
        udp = self.reply(rdtype)
        return None if udp is None else replace(udp, truncated=False)

    @classmethod
    def answering(cls, latency_s: float = 0.0, rcode: str = "NOERROR",
                  **per_type: Reply | None) -> ServerState:
        base = Reply(rcode, 1 if rcode == "NOERROR" else 0, latency_s)
        # the canned replies (LAME, SERVFAIL ...) arrive as fast as the others
        replies = {k: v if v is None or v.latency_s else replace(v, latency_s=latency_s)
                   for k, v in per_type.items()}
        return cls(base, replies, tcp="accepted", kind="answered")

    @classmethod
    def silent(cls) -> ServerState:
        """Blackholed: no UDP reply, TCP connects time out."""
        return cls(None, tcp="timeout", kind="timeout")

    @classmethod
    def port_unreachable(cls, latency_s: float = REFUSED_COST_S) -> ServerState:
        """Host up, no DNS service: ICMP port unreachable, TCP connection refused."""
        return cls(None, udp_error="port-unreachable", error_after_s=latency_s or REFUSED_COST_S,
                   tcp="refused", kind="refused")


# A server's behaviour: one state for every name, or per query name ("*": the others).
Behaviour = ServerState | Mapping[str, ServerState]


def _outcome(st: ServerState, rdtype: str) -> str:
    """The outcome of a reply already received (every received type has one)."""
    reply = st.reply(rdtype)
    return reply.outcome if reply is not None else "no reply"


def state_for(behaviour: Behaviour, qname: str) -> ServerState:
    if isinstance(behaviour, ServerState):
        return behaviour
    key = qname.rstrip(".").lower()
    found = behaviour.get(key) or behaviour.get("*")
    if found is None:                   # not probed for this name: the first one probed
        found = next(iter(behaviour.values()))
    return found


@dataclass
class StartOutcome:
    """With rotate: the lookup that starts at one server."""
    server: str
    seconds: float | None
    outcome: Outcome
    families: list[str] = field(default_factory=list)
    error: str | None = None


@dataclass
class Prediction:
    seconds: float | None           # None: the lookup hangs (glibc's TCP path has no timeout)
    outcome: Outcome
    steps: list[str] = field(default_factory=list)
    average: float | None = None    # with rotate: mean over the starting offsets
    families: list[str] = field(default_factory=list)   # answered: IPv4, IPv6 or both
    error: str | None = None        # getaddrinfo's error text when it fails
    starts: list[StartOutcome] = field(default_factory=list)   # rotate: from each server
    asked: list[str] = field(default_factory=list)      # the families getaddrinfo asked for

    def text(self) -> str:
        if self.seconds is None:
            return "hangs (no timeout on glibc's TCP path)"
        what: str = self.outcome
        if self.outcome == "answered" and self.families:
            what += f", {' and '.join(self.families)}" + (
                " only" if len(self.families) < len(self.asked) else "")
        elif self.error:
            what += f": {self.error}"
        return f"{self.seconds:.3f} s ({what})"


class _Hang(Exception):
    """glibc's TCP read has no timeout: a server that accepted and never answers."""


@dataclass
class _Exchange:
    """One server's part in a res_send: send_dg or send_vc."""
    status: str                     # answer | next | tcp
    seconds: float
    buffers: list[tuple[str, Reply]] = field(default_factory=list)   # what getaddrinfo parses
    ans_rcode: str | None = None    # the rcode left in glibc's first answer buffer
    got_somewhere: bool = False     # a reply or a timeout (not only ICMP refusals)
    errno: str | None = None        # send_vc's failure


@dataclass
class _Query:
    ok: bool
    families: list[str] = field(default_factory=list)
    h_errno: str = "HOST_NOT_FOUND"
    errno: str | None = None
    ans_rcode: str = "NOERROR"


class _Glibc:
    """One getaddrinfo in a fresh process: the single-request switches glibc makes on the way
    persist for the rest of the lookup, as they do in its resolver state."""

    def __init__(self, cfg: ResolverConfig, behaviours: list[Behaviour], servers: list[str],
                 rdtypes: list[str], offset: int, tcp_syn_retries: int):
        self.cfg, self.behaviours, self.servers = cfg, behaviours, servers
        self.rdtypes, self.offset, self.syn_retries = rdtypes, offset, tcp_syn_retries
        self.single = cfg.single_request or cfg.single_request_reopen
        self.reopen = cfg.single_request_reopen
        self.sends = 0
        self.t = 0.0
        self.steps: list[str] = []

    def step(self, text: str) -> None:
        self.steps.append(f"  {text}")

    # ------------------------------------------------------------------ send_dg
    def send_dg(self, ns: int, st: ServerState, wait: float) -> _Exchange:
        name = self.servers[ns]
        if st.udp_error:
            if st.error_after_s < wait:
                self.step(f"{name}: {st.udp_error}, next at once")
                return _Exchange("next", st.error_after_s)
            self.step(f"{name}: no reply in {wait:g} s")
            return _Exchange("next", wait, got_somewhere=True)
        if len(self.rdtypes) == 2 and not self.single:
            return self._together(ns, st, wait)
        return self._one_by_one(ns, st, wait)

    def _together(self, ns: int, st: ServerState, wait: float) -> _Exchange:
        name, types = self.servers[ns], self.rdtypes
        arrivals = sorted((r.latency_s, i) for i, t in enumerate(types)
                          if (r := st.reply(t)) is not None and r.latency_s < wait)
        received: list[str] = []
        accepted: list[tuple[str, Reply]] = []
        first_accepted = False
        ans_rcode = None
        for latency, i in arrivals:
            rdtype, reply = types[i], st.reply(types[i])
            assert reply is not None
            first = not received
            if first:
                ans_rcode = reply.rcode
            if reply.outcome in REJECTED:
                if not first:
                    if first_accepted:
                        self.step(f"{name}: {received[0]} {accepted[0][1].outcome}, {rdtype} "
                                  f"{reply.outcome}: glibc keeps the {received[0]} reply")
                        return _Exchange("answer", latency, accepted, ans_rcode, True)
                    self.step(f"{name}: {received[0]} and {rdtype} rejected "
                              f"({_outcome(st, received[0])}, {reply.outcome}), next")
                    return _Exchange("next", latency, [], ans_rcode, True)
                received.append(rdtype)
                continue
            if reply.truncated:
                self.step(f"{name}: {rdtype} truncated: both queries again over TCP")
                return _Exchange("tcp", latency, [], ans_rcode, True)
            first_accepted = first_accepted or first
            received.append(rdtype)
            accepted.append((rdtype, reply))
            if len(received) == len(types):
                self.step(f"{name}: " + ", ".join(f"{t} {r.outcome}" for t, r in accepted)
                          + (f" ({received[0]} {_outcome(st, received[0])})"
                             if len(accepted) < len(types) else "")
                          + f" after {latency * 1000:.1f} ms")
                return _Exchange("answer", latency, accepted, ans_rcode, True)
        if first_accepted:
            missing = [t for t in types if t not in received]
            self.single = True
            self.step(f"{name}: {', '.join(missing)} unanswered after {wait:g} s: "
                      "single-request from now on, in a new window")
            again = self._one_by_one(ns, st, wait)
            again.seconds += wait
            return again
        self.step(f"{name}: " + (f"{received[0]} rejected, " if received else "")
                  + f"no {'other ' if received else ''}reply in {wait:g} s, next")
        return _Exchange("next", wait, [], ans_rcode, True)

    def _one_by_one(self, ns: int, st: ServerState, wait: float) -> _Exchange:
        name, types = self.servers[ns], self.rdtypes
        first = st.reply(types[0])
        if first is None or first.latency_s >= wait:
            self.step(f"{name}: {types[0]} unanswered in {wait:g} s, next")
            return _Exchange("next", wait, got_somewhere=True)
        t = first.latency_s
        if first.outcome in REJECTED:       # measured (2.36): at once, AAAA never sent
            self.step(f"{name}: {types[0]} {first.outcome}, next")
            return _Exchange("next", t, [], first.rcode, True)
        if first.truncated:
            self.step(f"{name}: {types[0]} truncated: again over TCP")
            return _Exchange("tcp", t, [], first.rcode, True)
        if len(types) == 1:
            self.step(f"{name}: {types[0]} {first.outcome} after {t * 1000:.1f} ms")
            return _Exchange("answer", t, [(types[0], first)], first.rcode, True)
        second = st.reply(types[1])
        if second is None or t + second.latency_s >= wait:
            if not self.reopen:
                self.reopen = True
                self.step(f"{name}: {types[0]} {first.outcome}, {types[1]} unanswered after "
                          f"{wait:g} s: single-request-reopen, a new window")
                again = self._one_by_one(ns, st, wait)
                again.seconds += wait
                return again
            self.step(f"{name}: {types[0]} {first.outcome}, {types[1]} unanswered after "
                      f"{wait:g} s: glibc returns the {types[0]} reply alone")
            return _Exchange("answer", wait, [(types[0], first)], first.rcode, True)
        t += second.latency_s
        if second.outcome in REJECTED:
            self.step(f"{name}: {types[0]} {first.outcome}, {types[1]} {second.outcome}: glibc "
                      f"keeps the {types[0]} reply")
            return _Exchange("answer", t, [(types[0], first)], first.rcode, True)
        if second.truncated:
            self.step(f"{name}: {types[1]} truncated: both again over TCP")
            return _Exchange("tcp", t, [], first.rcode, True)
        self.step(f"{name}: {types[0]} {first.outcome}, {types[1]} {second.outcome} "
                  f"after {t * 1000:.1f} ms (one by one)")
        return _Exchange("answer", t, [(types[0], first), (types[1], second)], first.rcode, True)

    # ------------------------------------------------------------------ send_vc
    def send_vc(self, ns: int, st: ServerState) -> _Exchange:
        name = self.servers[ns]
        if st.tcp == "refused":
            self.step(f"{name}: TCP refused, next")
            return _Exchange("next", REFUSED_COST_S, errno="ECONNREFUSED")
        if st.tcp == "timeout":
            syn = syn_timeout(self.syn_retries)
            self.step(f"{name}: TCP connect gives up after {syn} s (SYN retries), next")
            return _Exchange("next", float(syn), errno="ETIMEDOUT")
        if st.tcp == "error":
            self.step(f"{name}: TCP failed, next")
            return _Exchange("next", st.tcp_latency_s, errno="EIO")
        replies = [(t, st.tcp_reply(t)) for t in self.rdtypes]
        silent = [t for t, r in replies if r is None]
        if silent:
            self.step(f"{name}: TCP accepted, {', '.join(silent)} never answered: glibc waits "
                      "for ever")
            raise _Hang()
        got = [(t, r) for t, r in replies if r is not None]
        seconds = max([st.tcp_latency_s] + [r.latency_s for _, r in got])
        self.step(f"{name}: over TCP " + ", ".join(f"{t} {r.outcome}" for t, r in got)
                  + (" (assumed: TCP not probed)" if st.tcp is None else ""))
        return _Exchange("answer", seconds, got, got[0][1].rcode, True)

    # ------------------------------------------------------------------ res_send, res_query
    def send(self, qname: str) -> tuple[bool, list[tuple[str, Reply]], str | None, str | None]:
        """(answered, buffers, rcode in the first answer buffer, errno on failure)."""
        n = len(self.servers)
        offset = (self.offset + self.sends) % n if self.cfg.rotate and n > 1 else 0
        self.sends += 1
        v_circuit = self.cfg.use_vc
        got_somewhere, terrno, ans_rcode = False, "ETIMEDOUT", None
        last_pass = False
        for attempt in range(max(self.cfg.attempts, 0)):
            if attempt:
                self.step(f"attempt {attempt + 1}")
            for shift in range(n):
                ns = (shift + offset) % n
                st = state_for(self.behaviours[ns], qname)
                while True:
                    if v_circuit:
                        last_pass = True            # TCP: one try per server
                        ex = self.send_vc(ns, st)
                    else:
                        ex = self.send_dg(ns, st, float(server_wait(self.cfg.timeout, ns, n)))
                    self.t += ex.seconds
                    got_somewhere |= ex.got_somewhere
                    ans_rcode = ex.ans_rcode or ans_rcode
                    terrno = ex.errno or terrno
                    if ex.status == "tcp":
                        v_circuit = True
                        continue
                    break
                if ex.status == "answer":
                    return True, ex.buffers, ans_rcode, None
            if last_pass:
                break
        errno = terrno if v_circuit else ("ETIMEDOUT" if got_somewhere else "ECONNREFUSED")
        return False, [], ans_rcode, errno

    def query(self, qname: str) -> _Query:
        self.steps.append(f"query {qname}:")
        ok, buffers, ans_rcode, errno = self.send(qname)
        if not ok:
            self.step("no server answered" if errno != "ECONNREFUSED"
                      else "every server refused")
            return _Query(False, h_errno="TRY_AGAIN", errno=errno,
                          ans_rcode=ans_rcode or "NOERROR")
        usable = [t for t, r in buffers if r.usable]
        if usable:
            return _Query(True, [FAMILIES.get(t, t) for t in self.rdtypes if t in usable])
        hp, hp2 = buffers[0][1], buffers[-1][1]
        code = hp.rcode if hp.rcode != "NOERROR" else hp2.rcode
        h_errno = {"NXDOMAIN": "HOST_NOT_FOUND", "SERVFAIL": "TRY_AGAIN",
                   "NOERROR": "NO_DATA"}.get(code, "NO_RECOVERY")
        self.step({"HOST_NOT_FOUND": "not found", "NO_DATA": "no address (NODATA)",
                   "TRY_AGAIN": "SERVFAIL: temporary failure"}.get(h_errno, f"{code}: "
                                                                  "non-recoverable"))
        return _Query(False, h_errno=h_errno, ans_rcode=ans_rcode or "NOERROR")

    # ------------------------------------------------------------------ res_search
    def search(self, name: str) -> _Query:
        cfg = self.cfg
        dots, trailing = name.count("."), name.endswith(".")
        saved: str | None = None
        tried_as_is = got_nodata = got_servfail = searched = root_on_list = False
        last = _Query(False)
        if dots >= cfg.ndots or trailing:
            last = self.query(name)
            if last.ok or trailing:
                return last
            saved, tried_as_is = last.h_errno, True
        for domain in cfg.search:
            searched = True
            domain = domain[1:] if domain.startswith(".") else domain
            root_on_list = root_on_list or not domain
            last = self.query(f"{name}.{domain}" if domain else f"{name}.")
            if last.ok:
                return last
            if last.errno == "ECONNREFUSED":
                return last
            if last.h_errno == "NO_DATA":
                got_nodata = True
            elif last.h_errno == "TRY_AGAIN" and last.ans_rcode == "SERVFAIL":
                got_servfail = True
            elif last.h_errno != "HOST_NOT_FOUND":
                self.steps.append("glibc stops the search list here")
                break
        if (dots or not searched or not cfg.no_tld_query) and not (tried_as_is or root_on_list):
            last = self.query(name)
            if last.ok:
                return last
        if saved is not None:
            last.h_errno = saved
        elif got_nodata:
            last.h_errno = "NO_DATA"
        elif got_servfail:
            last.h_errno = "TRY_AGAIN"
        return last


def default_rdtypes(cfg: ResolverConfig, name: str) -> list[str]:
    if name == ".":
        return ["NS"]
    return ["A"] if cfg.no_aaaa else ["A", "AAAA"]


def predict(cfg: ResolverConfig, states: list[Behaviour], servers: list[str], name: str,
            tcp_syn_retries: int = 6, rdtypes: list[str] | None = None) -> Prediction:
    """What getaddrinfo(name, AF_UNSPEC) does with these server behaviours: outcome, address
    families and time. With rotate, the worst of the starting servers (`starts` lists each,
    `average` their mean)."""
    if not states:
        return Prediction(0.0, "failed", ["no nameservers"], error=GAI_ERRORS["TRY_AGAIN"])
    rdtypes = rdtypes or default_rdtypes(cfg, name)
    offsets = range(len(states)) if cfg.rotate and len(states) > 1 else [0]
    results = [_lookup(cfg, states, servers, name, rdtypes, off, tcp_syn_retries)
               for off in offsets]
    worst = max(results, key=lambda p: float("inf") if p.seconds is None else p.seconds)
    worst.starts = [StartOutcome(servers[off], p.seconds, p.outcome, p.families, p.error)
                    for off, p in zip(offsets, results)]
    worst.asked = [FAMILIES[t] for t in rdtypes if t in FAMILIES]
    if len(results) > 1:
        finite = [p.seconds for p in results if p.seconds is not None]
        worst.average = sum(finite) / len(finite) if len(finite) == len(results) else None
        worst.steps.insert(0, f"rotate: worst of {len(results)} starting servers")
    else:
        worst.average = worst.seconds
    return worst


def _lookup(cfg: ResolverConfig, states: list[Behaviour], servers: list[str], name: str,
            rdtypes: list[str], offset: int, tcp_syn_retries: int) -> Prediction:
    glibc = _Glibc(cfg, states, servers, rdtypes, offset, tcp_syn_retries)
    if cfg.attempts <= 0:
        return Prediction(0.0, "failed", [f"attempts:{cfg.attempts}: no query is sent"],
                          error=GAI_ERRORS["TRY_AGAIN"])
    try:
        result = glibc.search(name)
    except _Hang:
        return Prediction(None, "hangs", glibc.steps)
    seconds = round(glibc.t, 6)
    if result.ok:
        return Prediction(seconds, "answered", glibc.steps, families=result.families)
    return Prediction(seconds, OUTCOME_OF[result.h_errno], glibc.steps,
                      error=GAI_ERRORS[result.h_errno])


@dataclass
class WhatIf:
    server: str
    refused: Prediction       # its host up, DNS service down (ICMP port unreachable)
    blackholed: Prediction    # host gone or packets dropped: silence


def what_ifs(cfg: ResolverConfig, states: list[Behaviour], servers: list[str], name: str,
             tcp_syn_retries: int = 6, rdtypes: list[str] | None = None) -> list[WhatIf]:
    out = []
    for i, server in enumerate(servers):
        refused = list(states)
        refused[i] = ServerState.port_unreachable()
        holed = list(states)
        holed[i] = ServerState.silent()
        out.append(WhatIf(server, predict(cfg, refused, servers, name, tcp_syn_retries, rdtypes),
                          predict(cfg, holed, servers, name, tcp_syn_retries, rdtypes)))
    return out


# What other resolvers do with the same dead server, shown when the host uses them.
MUSL_NOTE = ("musl queries every nameserver in parallel and takes the first answer; `timeout` "
             "is the total for the lookup (attempts split it), so a dead first server costs "
             "almost nothing while another answers; rotate, single-request and use-vc are ignored.")
RESOLVED_NOTE = ("systemd-resolved (127.0.0.53 stub) retries a silent upstream with its own "
                 "adaptive timer, then switches to the next server and stays there: the first "
                 "lookups after a loss are slow, later ones are not; glibc's timeout and attempts "
                 "only apply to the stub, which always answers.")
