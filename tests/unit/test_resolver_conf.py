"""resolv.conf parsed with glibc's rules, and property tests: any input gives a config."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.discover.resolver_conf import (
    ResolverConfig,
    atoi,
    parse_nameserver,
    parse_resolv_conf,
    search_names,
    timeout_rounds,
)


def test_defaults_and_three_servers_used():
    cfg = parse_resolv_conf("nameserver 10.0.0.1\nnameserver 10.0.0.2\nnameserver 10.0.0.3\n"
                            "nameserver 10.0.0.4\nnameserver fe80::1%eth0\n")
    assert cfg.used_nameservers == ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    assert cfg.ignored_nameservers == ["10.0.0.4", "fe80::1%eth0"]
    assert (cfg.timeout, cfg.attempts, cfg.ndots, cfg.rotate) == (5, 2, 1, False)
    assert cfg.search == [] and cfg.search_source is None


def test_no_nameserver_means_localhost():
    cfg = parse_resolv_conf("# empty\n")
    assert cfg.nameservers == ["127.0.0.1"] and cfg.nameserver_defaulted


def test_nameserver_forms_glibc_accepts_and_rejects():
    assert parse_nameserver("10.1") == "10.0.0.1"                 # inet_aton short form
    assert parse_nameserver("0x7f.1") == "127.0.0.1"
    assert parse_nameserver("2001:DB8::0:53") == "2001:db8::53"
    assert parse_nameserver("1.2.3.4:53") is None
    assert parse_nameserver("1.2.3.4#x") is None
    assert parse_nameserver("dns.example") is None
    assert parse_nameserver("") is None
    cfg = parse_resolv_conf("nameserver 1.2.3.4 # trailing comment\nnameserver\tbogus\n"
                            " nameserver 9.9.9.9\nnameserver\n#nameserver 8.8.8.8\n"
                            "nameservers 7.7.7.7\n")
    assert cfg.nameservers == ["1.2.3.4"]
    assert cfg.invalid_nameservers == ["bogus"]


def test_options_caps_prefixes_and_atoi():
    cfg = parse_resolv_conf("options timeout:60 attempts:9 ndots:20 rotatex single-request "
                            "single-request-reopen use-vc no-aaaa trust-ad edns0 no-tld-query "
                            "no-reload\n")
    assert (cfg.timeout, cfg.attempts, cfg.ndots) == (30, 5, 15)
    assert cfg.rotate and cfg.single_request and cfg.single_request_reopen and cfg.use_vc
    assert cfg.no_aaaa and cfg.trust_ad and cfg.edns0 and cfg.no_tld_query and cfg.no_reload
    cfg = parse_resolv_conf("options timeout:0 attempts:0 ndots:0\n")
    assert (cfg.timeout, cfg.attempts, cfg.ndots, cfg.effective_timeout) == (0, 0, 0, 1)
    cfg = parse_resolv_conf("options timeout:2x attempts:  ndots:-1 timeout=3 debug\n")
    assert (cfg.timeout, cfg.attempts, cfg.ndots) == (2, 0, 15)   # atoi; 4-bit ndots field
    assert cfg.unknown_options == ["timeout=3", "debug"]
    assert atoi(" 42abc") == 42 and atoi("-7") == -7 and atoi("x") == 0
    assert atoi("99999999999999999999") == -1                      # strtol saturates, int wraps
    # "options" must be followed by a blank: "optionsrotate" is not an options line
    assert parse_resolv_conf("optionsrotate\n").rotate is False


def test_search_and_domain_last_wins():
    cfg = parse_resolv_conf("search a.example b.example\ndomain c.example d.example\n")
    assert cfg.search == ["c.example"] and cfg.search_source == "domain"
    cfg = parse_resolv_conf("domain c.example\nsearch  a.example\tb.example  \n")
    assert cfg.search == ["a.example", "b.example"] and cfg.search_source == "search"
    cfg = parse_resolv_conf("search a.example\nsearch\n")          # empty line is ignored
    assert cfg.search == ["a.example"]


def test_environment_overrides():
    text = "search a.example\noptions timeout:2 rotate\n"
    cfg = parse_resolv_conf(text, {"LOCALDOMAIN": "x.example y.example",
                                   "RES_OPTIONS": "timeout:7 attempts:1"})
    assert cfg.search == ["x.example", "y.example"] and cfg.search_source == "LOCALDOMAIN"
    assert (cfg.timeout, cfg.attempts, cfg.rotate) == (7, 1, True)
    assert cfg.options_from_env == ["timeout:7", "attempts:1"]
    assert parse_resolv_conf(text, {"LOCALDOMAIN": None}).search == ["a.example"]


def test_hostname_domain_is_default_search():
    assert parse_resolv_conf("", hostname="web1.site.example").search == ["site.example"]
    assert parse_resolv_conf("", hostname="web1").search == []
    assert parse_resolv_conf("search a\n", hostname="web1.site.example").search == ["a"]


def test_search_names_and_timeout_rounds():
    cfg = parse_resolv_conf("search a.example b.example\n")
    assert search_names("host", cfg) == ["host.a.example", "host.b.example", "host"]
    assert search_names("www.example.com", cfg)[0] == "www.example.com"
    assert search_names("fqdn.example.", cfg) == ["fqdn.example."]
    assert timeout_rounds("host", cfg) == 2            # first search domain, then as is
    assert timeout_rounds("fqdn.example.", cfg) == 1
    assert timeout_rounds("host", parse_resolv_conf("")) == 1
    no_tld = parse_resolv_conf("search a.example\noptions no-tld-query\n")
    assert search_names("host", no_tld) == ["host.a.example"]
    assert timeout_rounds("host", no_tld) == 1
    ndots = parse_resolv_conf("search a.example\noptions ndots:5\n")
    assert search_names("a.b.c", ndots) == ["a.b.c.a.example", "a.b.c"]


def test_nul_and_crlf_lines():
    cfg = parse_resolv_conf("nameserver 1.1.1.1\0garbage\r\nnameserver 2.2.2.2\r\n")
    assert cfg.nameservers == ["1.1.1.1"]              # "2.2.2.2\r" is not an address for glibc
    assert cfg.invalid_nameservers == ["2.2.2.2\r"]


LINE = st.one_of(
    st.text(max_size=60),
    st.builds(lambda k, v: f"{k}{v}", st.sampled_from(["nameserver ", "search ", "domain ",
                                                       "options ", "sortlist ", "#", ";"]),
              st.text(alphabet="0123456789abcdef.:%- \t\0\r:timeoutattemptsndotsrotate",
                      max_size=40)))


@settings(max_examples=150, deadline=None)
@given(st.lists(LINE, max_size=12), st.integers(min_value=0, max_value=400),
       st.one_of(st.none(), st.text(max_size=30)), st.one_of(st.none(), st.text(max_size=30)))
def test_any_or_truncated_input_gives_a_config(lines, cut, res_options, localdomain):
    text = "\n".join(lines)
    for candidate in (text, text[:cut]):
        cfg = parse_resolv_conf(candidate, {"RES_OPTIONS": res_options,
                                            "LOCALDOMAIN": localdomain}, hostname="h.example")
        assert isinstance(cfg, ResolverConfig)
        assert 1 <= len(cfg.used_nameservers) <= 3
        assert cfg.timeout <= 30 and cfg.attempts <= 5 and 0 <= cfg.ndots <= 15
        assert cfg.used_nameservers + cfg.ignored_nameservers == cfg.nameservers
        search_names("host", cfg)
        assert timeout_rounds("host", cfg) in (1, 2)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes(data):
    cfg = parse_resolv_conf(data.decode("utf-8", "replace"))
    assert cfg.nameservers
