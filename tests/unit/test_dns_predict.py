"""glibc lookup prediction from server states: windows, each query's reply on its own,
single-request, rotate, attempts, search list, use-vc and TCP (tests/integration/
test_glibc_pairs.py holds the same rules against real glibc; here the cases it cannot run:
long windows, SYN retries, the figures measured with glibc 2.36 in a network namespace)."""
import pytest

from inspector.discover.resolver_conf import parse_resolv_conf
from inspector.probes.dns.predict import (
    EMPTY,
    LAME,
    SERVFAIL,
    TRUNCATED,
    Reply,
    ServerState,
    predict,
    what_ifs,
)

UP = ServerState.answering(0.002)
SILENT = ServerState.silent()
NX = ServerState.answering(0.002, rcode="NXDOMAIN")


def cfg(text):
    return parse_resolv_conf(text)


S3 = ["a", "b", "c"]
THREE = "nameserver 10.0.0.1\nnameserver 10.0.0.2\nnameserver 10.0.0.3\n"


def test_timings_measured_with_glibc():
    # measured with glibc 2.36: silent,up = 5.011; silent,silent,up = 8.016 (5 + 3)
    assert predict(cfg(THREE), [SILENT, UP, UP], S3, "x.example").seconds == pytest.approx(5.002, abs=0.01)
    assert predict(cfg(THREE), [SILENT, SILENT, UP], S3, "x.example").seconds == pytest.approx(8.002, abs=0.01)
    # 3 silent, timeout 3, attempts 1 = 3 + 2 + 4 = 9 s; timeout 1 attempts 2 = 6 s
    assert predict(cfg(THREE + "options timeout:3 attempts:1\n"), [SILENT] * 3, S3, "x.example").seconds == 9
    assert predict(cfg(THREE + "options timeout:1 attempts:2\n"), [SILENT] * 3, S3, "x.example").seconds == 6
    # 2 silent, timeout 2, attempts 2 = 8 s
    two = "nameserver 10.0.0.1\nnameserver 10.0.0.2\noptions timeout:2 attempts:2\n"
    p = predict(cfg(two), [SILENT] * 2, ["a", "b"], "x.example")
    assert p.seconds == 8 and p.outcome == "failed"
    assert p.error == "Temporary failure in name resolution"


def test_the_issue_last_server_answers_a_and_its_aaaa_is_lame():
    c = cfg("nameserver 10.0.0.1\nnameserver 10.0.0.2\noptions timeout:1 attempts:1\n")
    p = predict(c, [SILENT, ServerState.answering(0.002, AAAA=LAME)], ["a", "b"], "x.example")
    assert p.outcome == "answered" and p.families == ["IPv4"]
    assert p.seconds == pytest.approx(1.002)
    assert "glibc keeps the A reply" in "\n".join(p.steps)
    assert p.text() == "1.002 s (answered, IPv4 only)"


@pytest.mark.parametrize("rejected", [LAME, SERVFAIL, Reply("REFUSED", 0), Reply("NOTIMP", 0)])
def test_both_rejected_moves_on_one_rejected_keeps_the_other(rejected):
    c = cfg("nameserver 10.0.0.1\nnameserver 10.0.0.2\noptions timeout:5\n")
    both = ServerState.answering(0.001, A=rejected, AAAA=rejected)
    p = predict(c, [both, UP], ["a", "b"], "x.example")
    assert p.families == ["IPv4", "IPv6"] and p.seconds == pytest.approx(0.003)
    # the A reply rejected, AAAA answered: the AAAA answer, no failover
    p = predict(c, [ServerState.answering(0.001, A=rejected), UP], ["a", "b"], "x.example")
    assert p.families == ["IPv6"] and p.seconds == pytest.approx(0.001)


def test_empty_and_nxdomain_are_accepted_replies():
    c = cfg("nameserver 10.0.0.1\nnameserver 10.0.0.2\n")
    p = predict(c, [ServerState.answering(0.001, AAAA=EMPTY), UP], ["a", "b"], "x.example")
    assert p.families == ["IPv4"]
    p = predict(c, [ServerState.answering(0.001, A=EMPTY, AAAA=EMPTY), UP], ["a", "b"], "x.example")
    assert p.outcome == "nodata" and p.error == "No address associated with hostname"
    p = predict(c, [NX, UP], ["a", "b"], "x.example")
    assert p.outcome == "nxdomain" and p.error == "Name or service not known"


def test_aaaa_dropped_costs_three_windows_and_single_request_sticks():
    c = cfg("nameserver 10.0.0.1\nnameserver 10.0.0.2\noptions timeout:2 attempts:1\n")
    drop_aaaa = ServerState.answering(0.001, AAAA=None)
    p = predict(c, [drop_aaaa, UP], ["a", "b"], "x.example")
    assert p.seconds == 6 and p.families == ["IPv4"]              # measured 6.01 s (t2)
    assert predict(cfg("nameserver 10.0.0.1\noptions timeout:2 single-request\n"),
                   [drop_aaaa], ["a"], "x.example").seconds == 4
    assert predict(cfg("nameserver 10.0.0.1\noptions timeout:2 single-request-reopen\n"),
                   [drop_aaaa], ["a"], "x.example").seconds == 2
    # A dropped: two windows, then the next server, which glibc asks one by one from then on
    drop_a = ServerState.answering(0.001, A=None)
    p = predict(c, [drop_a, drop_aaaa], ["a", "b"], "x.example")
    # a: the pair's window, then A alone's; b (window 2 << 1 / 2 = 2 s), one by one already:
    # AAAA's window, then single-request-reopen's
    assert p.seconds == 8 and p.families == ["IPv4"]
    assert "single-request from now on" in "\n".join(p.steps)


def test_single_request_rejected_a_moves_on_at_once():
    c = cfg("nameserver 10.0.0.1\nnameserver 10.0.0.2\noptions single-request\n")
    p = predict(c, [ServerState.answering(0.001, A=LAME), UP], ["a", "b"], "x.example")
    # the lame A (1 ms), then b one by one (A, then AAAA: 2 ms each)
    assert p.seconds == pytest.approx(0.005) and p.families == ["IPv4", "IPv6"]


def test_search_list_per_name_and_what_stops_it():
    c = cfg("nameserver 10.0.0.1\nsearch a.test b.test\noptions timeout:1 attempts:1\n")
    per_name = {"db.a.test": NX, "db.b.test": ServerState.answering(0.001), "*": NX}
    p = predict(c, [per_name], ["a"], "db")
    assert p.outcome == "answered" and p.seconds == pytest.approx(0.003)
    assert [s for s in p.steps if s.startswith("query")] == ["query db.a.test:", "query db.b.test:"]
    # SERVFAIL from every server goes on with the list, a lame reply stops it (then "db")
    servfail = ServerState.answering(0.001, A=SERVFAIL, AAAA=SERVFAIL)
    lame = ServerState.answering(0.001, A=LAME, AAAA=LAME)
    assert predict(c, [{**per_name, "db.a.test": servfail}], ["a"], "db").outcome == "answered"
    p = predict(c, [{**per_name, "db.a.test": lame}], ["a"], "db")
    assert p.outcome == "nxdomain"
    assert [s for s in p.steps if s.startswith("query")] == ["query db.a.test:", "query db:"]
    # every server silent: the first name and the name as is (measured: doubles the worst)
    assert predict(c, [SILENT], ["a"], "db").seconds == 2
    # every server refusing: the walk stops at once
    p = predict(c, [ServerState.port_unreachable()], ["a"], "db")
    assert p.outcome == "failed" and len([s for s in p.steps if s.startswith("query")]) == 1


def test_ndots_and_trailing_dot():
    c = cfg("nameserver 10.0.0.1\nsearch a.test\noptions ndots:2\n")
    p = predict(c, [NX], ["a"], "db.x")
    assert [s for s in p.steps if s.startswith("query")] == ["query db.x.a.test:", "query db.x:"]
    p = predict(c, [NX], ["a"], "db.x.")
    assert [s for s in p.steps if s.startswith("query")] == ["query db.x.:"]


def test_rotate_worst_average_and_each_start():
    c = cfg(THREE + "options rotate timeout:2\n")
    p = predict(c, [SILENT, UP, UP], S3, "x.example")
    assert p.seconds == pytest.approx(2.002, abs=0.01)
    assert p.average == pytest.approx((2.002 + 0.002 + 0.002) / 3, abs=0.01)
    assert [s.server for s in p.starts] == S3
    assert [None if s.seconds is None else round(s.seconds, 3) for s in p.starts] == [
        2.002, 0.002, 0.002]


def test_use_vc_tcp_rules():
    c = cfg(THREE + "options use-vc attempts:3\n")
    assert predict(c, [SILENT, UP, UP], S3, "x.example").seconds == pytest.approx(127.002, abs=0.01)
    # a SERVFAIL over TCP is taken as it is: no failover
    tcp_servfail = ServerState(None, tcp="accepted", tcp_replies={"A": SERVFAIL, "AAAA": SERVFAIL})
    p = predict(c, [tcp_servfail, UP, UP], S3, "x.example")
    assert p.outcome == "failed" and p.seconds == 0
    # one pass whatever `attempts` says
    p = predict(c, [ServerState.port_unreachable()] * 3, S3, "x.example")
    assert p.outcome == "failed" and p.steps.count("attempt 2") == 0
    hang = ServerState(TRUNCATED, tcp="accepted", tcp_replies={"A": None, "AAAA": None})
    p = predict(cfg(THREE), [hang, UP, UP], S3, "x.example")
    assert p.seconds is None and p.outcome == "hangs"


def test_truncation_keeps_tcp_for_the_next_servers():
    c = cfg("nameserver 10.0.0.1\nnameserver 10.0.0.2\n")
    truncating = ServerState(TRUNCATED, tcp="refused")
    udp_only = ServerState.answering(0.001)
    udp_only.tcp = "refused"
    p = predict(c, [truncating, udp_only], ["a", "b"], "x.example")
    assert p.outcome == "failed"


def test_what_ifs_refused_vs_blackholed():
    w = what_ifs(cfg(THREE), [UP, UP, UP], S3, "x.example")
    refused = w[0].refused.seconds
    assert refused is not None and refused < 0.01
    assert w[0].blackholed.seconds == pytest.approx(5.002, abs=0.01)
    assert w[1].blackholed.seconds == pytest.approx(0.002, abs=0.01)   # the first still answers


def test_no_aaaa_asks_a_alone():
    c = cfg("nameserver 10.0.0.1\noptions no-aaaa\n")
    p = predict(c, [ServerState.answering(0.001, AAAA=None)], ["a"], "x.example")
    assert p.families == ["IPv4"] and p.seconds == pytest.approx(0.001)
    assert p.text() == "0.001 s (answered, IPv4)"
