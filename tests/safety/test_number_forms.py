"""A number on the command line is ASCII digits: Python's int() and float() also take Unicode
digits ('１', '٣') and '1_000', which no operator means and strtol() refuses. Every numeric
option, every size and a memcached target's port refuse them in one line (exit 2), and a
`--probe memcached:H:P:EXTRA` is refused before anything runs."""
from __future__ import annotations

import time

import pytest

from conftest import run_bin, run_cli
from inspector.cli import build_parser
from test_numeric_arguments import OPTIONS

NOT_ASCII_NUMBERS = ["１", "٣", "１s", "٣ms", "1_000", "1_0s", "٠.5", "２e1"]


def _ids(option) -> str:
    return " ".join(option[0]) + " " + option[1]


@pytest.mark.parametrize("option", OPTIONS, ids=_ids)
def test_unicode_digits_and_underscores_are_not_numbers(option):
    before, name, after, _, _, _ = option
    for value in NOT_ASCII_NUMBERS:
        res = run_cli(*before, name, value, *after)
        text = res.out if before == ["check"] else res.err
        assert res.status == (3 if before == ["check"] else 2), (value, res.status, text)
        assert text.strip().count("\n") == 0 and name in text, text


SIZE_ARGVS = [
    ["record", "--max-size", "{}M"],
    ["probe", "io", "-s", "{}k", "/tmp"],
    ["probe", "io", "-S", "{}m", "/tmp"],
    ["probe", "io", "-j", "{}", "/tmp"],
    ["probe", "memcached", "--key-size", "{}", "127.0.0.1"],
    ["probe", "memcached", "--value-size", "1-{}", "127.0.0.1"],
    ["probe", "memcached", "127.0.0.1:{}", "-e", "1"],
]


@pytest.mark.parametrize("argv", SIZE_ARGVS, ids=lambda a: " ".join(a[:3]))
def test_sizes_jobs_and_ports_take_ascii_digits_only(argv):
    # every form through every option; the real binary takes one form per option (a
    # different one from option to option), the others run in-process: the parsing is the same
    digits_forms = ["٤", "４", "1_1"]
    by_binary = digits_forms[SIZE_ARGVS.index(argv) % len(digits_forms)]
    for digits in digits_forms:
        given = [a.format(digits) for a in argv]
        if digits == by_binary:
            res = run_bin(*given, timeout=30)
            status, out, err = res.returncode, res.stdout, res.stderr
        else:
            done = run_cli(*given)
            status, out, err = done.status, done.out, done.err
        assert status == 2, (digits, status, out, err)
        assert err.strip().count("\n") == 0 and "Traceback" not in err
    # the same forms in ASCII digits still parse (a refusal of everything would fail here)
    ascii_argv = [a.format("4") for a in argv]
    build_parser(ascii_argv).parse_args(ascii_argv)


@pytest.mark.parametrize("spec", ["memcached:H:P:EXTRA", "memcached:127.0.0.1:11211:x",
                                  "memcached:127.0.0.1:١١٢١١", "memcached:[::1]:1_1211"])
def test_a_malformed_memcached_spec_is_refused_before_any_run(spec, tmp_path):
    out = tmp_path / "s.json"
    started = time.monotonic()
    res = run_bin("snapshot", "-o", str(out), "--probe", spec, timeout=60)
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert res.stderr.count("\n") == 1 and spec in res.stderr, res.stderr
    assert "address" in res.stderr or "port" in res.stderr, res.stderr
    assert not out.exists()
    assert time.monotonic() - started < 20      # refused at parse time, not after collecting


def test_real_addresses_still_parse():
    from inspector.probes.request import memcached_address, parse_spec
    assert memcached_address("127.0.0.1:11212") == ("127.0.0.1", 11212)
    assert memcached_address("[::1]:11212") == ("::1", 11212)
    assert memcached_address("::1") == ("::1", 11211)
    assert memcached_address("fe80::1%lo") == ("fe80::1%lo", 11211)
    assert parse_spec("memcached:localhost").target == "localhost"
