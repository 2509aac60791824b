"""Every numeric option of every command: a 20-digit number, nan, inf, a negative, 1e400, a
5000-digit number, a zero where none makes sense is one line and a usage status, never an
internal error (`check --timeout 99999999999999999999` printed a traceback: an OverflowError
from a 1e20 s wait). Durations read the same everywhere: 250ms, 5s, 5m, 1h, 30d."""
from __future__ import annotations

import pytest

from conftest import run_cli
from inspector.cli import build_parser

# (argv before the option, option, argv after it, attribute, zero allowed, duration maximum)
OPTIONS = [
    (["report"], "--timeout", [], "timeout", False, 3600),
    (["export", "--json"], "--timeout", [], "timeout", False, 3600),
    (["snapshot"], "--timeout", [], "timeout", False, 3600),
    (["snapshot"], "--probe-seconds", [], "probe_seconds", False, 3600),
    (["capture"], "--timeout", [], "timeout", False, 3600),
    (["check"], "--timeout", [], "timeout", False, 3600),
    (["record"], "--every", [], "every", False, 7 * 86400),
    (["record"], "--retention", [], "retention", False, 3650 * 86400),
    (["record"], "--probe-seconds", [], "probe_seconds", False, 3600),
    (["record"], "--count", [], "count", True, None),
    (["top"], "--interval", [], "interval", False, 86400),
    (["top"], "--count", [], "count", True, None),
    (["tui"], "--refresh", [], "refresh", False, 86400),
    (["tui"], "--live-interval", [], "live_interval", False, 3600),
    (["probe", "io"], "-c", ["/tmp"], "count", False, None),
    (["probe", "io"], "-w", ["/tmp"], "deadline", False, 86400),
    (["probe", "io"], "-i", ["/tmp"], "interval", True, 3600),
    (["probe", "memcached"], "-c", ["127.0.0.1"], "concurrency", False, None),
    (["probe", "memcached"], "-e", ["127.0.0.1"], "execute_number", False, None),
    (["probe", "memcached"], "--duration", ["127.0.0.1"], "duration", False, 86400),
    (["probe", "memcached"], "--deadline", ["127.0.0.1"], "deadline", False, 86400),
    (["probe", "memcached"], "--timeout", ["127.0.0.1"], "timeout", False, 3600),
    (["probe", "memcached"], "--connect-timeout", ["127.0.0.1"], "connect_timeout", False, 3600),
    (["probe", "memcached"], "--step-seconds", ["127.0.0.1"], "step_seconds", False, 3600),
    (["probe", "memcached"], "--rate", ["127.0.0.1"], "rate", False, None),
    (["probe", "memcached"], "--ratio", ["127.0.0.1"], "ratio", True, None),
    (["probe", "memcached"], "--workers", ["127.0.0.1"], "workers", False, None),
    (["probe", "memcached"], "--key-count", ["127.0.0.1"], "key_count", False, None),
    (["probe", "memcached"], "--max-connections", ["127.0.0.1"], "max_connections", False, None),
    (["probe", "memcached"], "--start-connections", ["127.0.0.1"], "start_connections", False,
     None),
    (["probe", "dns"], "--count", [], "count", False, None),
    (["probe", "dns"], "--interval", [], "interval", True, 3600),
    (["probe", "dns"], "--timeout", [], "timeout", False, 300),
    (["probe", "dns"], "--tcp-timeout", [], "tcp_timeout", False, 300),
]
BAD = ["99999999999999999999", "nan", "inf", "-inf", "-1", "1e400", "9" * 5000, "soon", ""]


def _ids(option) -> str:
    return " ".join(option[0]) + " " + option[1]


@pytest.mark.parametrize("option", OPTIONS, ids=_ids)
def test_bad_numbers_are_one_line_usage_errors(option):
    before, name, after, _, zero_ok, _ = option
    for value in BAD + ([] if zero_ok else ["0"]):
        res = run_cli(*before, name, value, *after)
        if before == ["check"]:           # Nagios: UNKNOWN (3) on stdout
            assert res.status == 3 and res.out.startswith("INSPECTOR UNKNOWN - "), res.out
            text = res.out
        else:
            assert res.status == 2, (value[:30], res.status, res.err)
            text = res.err
        assert text.strip().count("\n") == 0 and len(text) < 300, text
        assert name in text and "internal error" not in text and "Traceback" not in text, text


@pytest.mark.parametrize("option", [o for o in OPTIONS if o[5]], ids=_ids)
def test_durations_read_the_same_everywhere(option):
    before, name, after, attribute, _, maximum = option
    forms = {"250ms": 0.25, "5s": 5.0, "5m": 300.0, "1h": 3600.0, "30d": 30 * 86400.0,
             "1.5": 1.5, " 2 s ": 2.0}
    for text, seconds in forms.items():
        argv = [*before, name, text, *after]
        if seconds > maximum:
            assert run_cli(*argv).status in (1, 2, 3)
            continue
        args = build_parser(argv).parse_args(argv)
        assert getattr(args, attribute) == pytest.approx(seconds), (text, argv)


def test_bounds_are_in_the_help():
    help_text = " ".join(run_cli("record", "--help").out.split())
    assert "at most 1w" in help_text and "at most 3650d" in help_text and "250ms" in help_text
    assert "at most 1h" in run_cli("check", "--help").out
    assert "1 to 10000" in " ".join(run_cli("probe", "dns", "--help").out.split())
