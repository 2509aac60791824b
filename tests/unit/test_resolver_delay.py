"""glibc failover timing (res_send.c) against the figures measured with glibc 2.36."""
from __future__ import annotations

import pytest

from inspector.discover.resolver_conf import parse_resolv_conf
from inspector.discover.resolver_delay import (
    all_servers_down,
    first_server_loss,
    server_wait,
    syn_timeout,
    visit_order,
)


def conf(n: int, options: str = "", search: str = "") -> str:
    servers = "".join(f"nameserver 10.0.0.{i + 1}\n" for i in range(n))
    return servers + (f"options {options}\n" if options else "") + \
        (f"search {search}\n" if search else "")


def test_server_waits_per_position():
    assert [server_wait(5, i, 3) for i in range(3)] == [5, 3, 6]
    assert [server_wait(5, i, 2) for i in range(2)] == [5, 5]
    assert [server_wait(3, i, 3) for i in range(3)] == [3, 2, 4]
    assert [server_wait(1, i, 3) for i in range(3)] == [1, 1, 1]    # 2/3 -> 0 -> at least 1
    assert server_wait(0, 0, 1) == 1 and server_wait(-1, 2, 3) == 1
    assert visit_order(3, 1) == [1, 2, 0]


@pytest.mark.parametrize("servers, options, measured", [
    (3, "timeout:3 attempts:1", 9.013),      # 3 silent: 3 + 2 + 4
    (3, "timeout:1 attempts:2", 6.014),      # 3 silent: (1 + 1 + 1) x 2
    (2, "timeout:2 attempts:2", 8.014),      # 2 silent: (2 + 2) x 2
])
def test_all_servers_down_matches_measurements(servers, options, measured):
    est = all_servers_down(parse_resolv_conf(conf(servers, options)), name="host")
    assert est.fails and est.seconds == pytest.approx(measured, abs=0.05)


def test_first_server_loss_matches_measurements():
    # silent,up = 5.011 s with defaults
    assert first_server_loss(parse_resolv_conf(conf(2))).seconds == pytest.approx(5.011, abs=0.05)
    # silent,silent,up = 8.016 s: the second server's wait is 10/3 = 3 s
    cfg = parse_resolv_conf(conf(3))
    two_dead = sum(server_wait(cfg.timeout, i, 3) for i in range(2))
    assert two_dead == pytest.approx(8.016, abs=0.05)


def test_rotate_only_some_lookups_pay():
    est = first_server_loss(parse_resolv_conf(conf(3, "rotate timeout:2")))
    assert est.seconds == 2 and est.average == pytest.approx(2 / 3)
    assert "rotate" in est.explanation


def test_single_server_and_search_list_double():
    est = first_server_loss(parse_resolv_conf(conf(1, "timeout:2")))
    assert est.fails and est.seconds == 4 and "only nameserver" in est.explanation
    with_search = all_servers_down(parse_resolv_conf(conf(2, "timeout:1", "a.example b.example")))
    assert with_search.seconds == 2 * 2 * 2          # attempts x (1 + 1) x (search, as is)
    assert all_servers_down(parse_resolv_conf(conf(2, "timeout:1", "a.example")),
                            name="fqdn.").seconds == 4


def test_use_vc_and_no_attempts():
    est = first_server_loss(parse_resolv_conf(conf(2, "use-vc")), tcp_syn_retries=6)
    assert est.seconds == 127 == syn_timeout(6) and "for ever" in est.explanation
    assert all_servers_down(parse_resolv_conf(conf(2, "use-vc"))).seconds == 254
    none = first_server_loss(parse_resolv_conf(conf(2, "attempts:0")))
    assert none.fails and none.seconds == 0 and "no query" in none.explanation
