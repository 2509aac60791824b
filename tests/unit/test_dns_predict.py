"""glibc lookup prediction from server states: rotate, attempts, search list, use-vc, TCP."""
import pytest

from inspector.discover.resolver_conf import parse_resolv_conf
from inspector.probes.dns_predict import ServerState, predict, what_ifs

UP = ServerState("answered", 0.002)
SILENT = ServerState("timeout")
NX = ServerState("answered", 0.002, rcode="NXDOMAIN")


def cfg(text):
    return parse_resolv_conf(text)


S3 = ["a", "b", "c"]
THREE = "nameserver 10.0.0.1\nnameserver 10.0.0.2\nnameserver 10.0.0.3\n"


def test_research_timings():
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


def test_search_list_doubles_the_worst_case_and_nxdomain_walks_it():
    c = cfg(THREE + "search corp.example\noptions timeout:1 attempts:1\n")
    assert predict(c, [SILENT] * 3, S3, "db1").seconds == 2 * 3          # db1.corp.example, then db1
    p = predict(c, [NX, UP, UP], S3, "db1")
    assert p.outcome == "nxdomain" and p.seconds == pytest.approx(0.004)  # both names answered NXDOMAIN


def test_rotate_worst_and_average():
    c = cfg(THREE + "options rotate timeout:2\n")
    p = predict(c, [SILENT, UP, UP], S3, "x.example")
    assert p.seconds == pytest.approx(2.002, abs=0.01)
    assert p.average == pytest.approx((2.002 + 0.002 + 0.002) / 3, abs=0.01)


def test_use_vc_and_tcp_hang():
    c = cfg(THREE + "options use-vc\n")
    assert predict(c, [SILENT, UP, UP], S3, "x.example").seconds == pytest.approx(127.002, abs=0.01)
    hang = ServerState("truncated", 0.001, tcp_kind="silent-after-accept")
    p = predict(cfg(THREE), [hang, UP, UP], S3, "x.example")
    assert p.seconds is None and p.outcome == "hangs"


def test_what_ifs_refused_vs_blackholed():
    w = what_ifs(cfg(THREE), [UP, UP, UP], S3, "x.example")
    assert w[0].refused.seconds < 0.01 and w[0].blackholed.seconds == pytest.approx(5.002, abs=0.01)
    assert w[1].blackholed.seconds == pytest.approx(0.002, abs=0.01)   # the first still answers
