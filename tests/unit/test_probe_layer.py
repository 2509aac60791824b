"""The probe layer (probes/base, request, driver, *_run): one request gives one probe wherever it
starts (the `probe` command, `--probe SPEC`, the TUI's form); its samples and summary survive a
JSON round trip (a run streamed from another process); the driver's deadline and stop()."""
from __future__ import annotations

import json
import os
import re
import threading
import time

import pytest

from conftest import fixture_root
from dns_responders import Responder
from inspector.cli import build_parser
from inspector.health.dns import LEGACY_CODES, canonical_code, probe_rules
from inspector.probes.base import (
    DnsInterval,
    Interval,
    ProbeError,
    ProbeKind,
    ProbeResult,
    RunStatus,
    RunSummary,
)
from inspector.probes.dns.run import DnsRun, DnsRunConfig, parse_dns_target, resolve
from inspector.probes.driver import ProbeDriver
from inspector.probes.memcached.run import McRunConfig
from inspector.probes.request import ProbeRequest, config_for, open_probe, parse_spec
from inspector.roots.host import HostRoot
from inspector.tui.probes.runs import form_request
from slowness import slack


def cli_config(*argv: str):
    """The config the `probe` command builds from these arguments."""
    from inspector.commands import probe_dns, probe_io, probe_memcached
    args = build_parser(list(argv)).parse_args(list(argv))
    module = {"io": probe_io, "memcached": probe_memcached, "dns": probe_dns}[argv[1]]
    return module.config_from_args(args)


def result_of(probe) -> ProbeResult:
    assert probe.result is not None, "the run left no result"
    return probe.result


def dns_round(interval: Interval) -> DnsInterval:
    assert interval.dns is not None, interval
    return interval.dns


def test_the_same_io_request_is_the_same_config_everywhere(tmp_path):
    spec = config_for(parse_spec(f"io:{tmp_path}", duration=3))
    form = config_for(form_request("io", str(tmp_path), "3", "1", False))
    cli = cli_config("probe", "io", str(tmp_path), "-w", "3")
    assert spec == form == cli
    assert cli.engine_config().deadline == 3 and cli.jobs == 1 and cli.direct


def test_the_same_memcached_request_is_the_same_config_everywhere():
    spec = config_for(parse_spec("memcached:[::1]:11311", duration=3))
    form = config_for(form_request("memcached", "[::1]:11311", "3", "4", False))
    cli = cli_config("probe", "memcached", "[::1]:11311", "-c", "4", "--duration", "3",
                     "-t", "get", "--read-only")
    assert spec == form == cli
    assert isinstance(spec, McRunConfig)
    load = cli.load()
    # a request without write stores nothing: gets of keys the server does not hold
    assert (load.host, load.port, load.test, load.preload) == ("::1", 11311, "get", False)
    assert load.deadline_s == spec.load().deadline_s == 33.0
    # with write: a set test, the same from the form and the CLI
    assert config_for(form_request("memcached", "cache:11311", "3", "4", True)) == cli_config(
        "probe", "memcached", "cache:11311", "-c", "4", "--duration", "3")


def test_the_same_dns_request_resolves_the_same_everywhere(tmp_path):
    # the host's resolver: `--probe dns` and `probe dns` for the same time
    spec = config_for(parse_spec("dns", duration=3))
    cli = cli_config("probe", "dns", "--count", "3", "--interval", "1", "--deadline", "3")
    assert spec == cli
    # a resolv.conf: the TUI's form and `probe dns --resolv-conf`
    conf = tmp_path / "resolv.conf"
    conf.write_text("nameserver 127.0.0.1\noptions no-aaaa\n")
    form = config_for(form_request("dns", str(conf), "3", "1", False))
    cli = cli_config("probe", "dns", "--resolv-conf", str(conf), "--count", "3",
                     "--interval", "1", "--deadline", "3")
    assert form == cli
    assert isinstance(form, DnsRunConfig)
    root = HostRoot(str(fixture_root("dns-four-servers")))
    settings, _ = resolve(form, root)
    # the drift this layer ended: the TUI asked A+AAAA for '.', ignoring no-aaaa
    assert settings.name == "." and settings.rdtypes == ["NS"]
    settings, _ = resolve(DnsRunConfig(name="example.com", resolv_conf=str(conf)), root)
    assert settings.rdtypes == ["A"]            # options no-aaaa honoured everywhere


def test_dns_settings_follow_the_root_search_list_and_stub():
    search = HostRoot(str(fixture_root("dns-search")))
    config = config_for(parse_spec("dns", duration=2))
    assert isinstance(config, DnsRunConfig)
    settings, _ = resolve(config, search)
    assert settings.name == "a.example" and settings.rdtypes == ["A", "AAAA"]
    stub = HostRoot(str(fixture_root("dns-resolved-stub")))
    settings, notes = resolve(DnsRunConfig(), stub)
    assert settings.resolver_kind == "systemd-resolved"
    assert any("systemd-resolved stub" in n for n in notes)


def test_one_parser_per_target_kind(tmp_path):
    assert parse_dns_target("") == (None, [])
    assert parse_dns_target("127.0.0.1, [::1]:5353 10.0.0.1:53") == (
        None, ["127.0.0.1", "[::1]:5353", "10.0.0.1:53"])
    conf = tmp_path / "resolv.conf"
    conf.write_text("nameserver 10.0.0.1\n")
    assert parse_dns_target(str(conf)) == (str(conf), [])
    for bad in (str(tmp_path), str(tmp_path / "missing"), "not-an-address"):
        with pytest.raises(ProbeError) as err:
            parse_dns_target(bad)
        assert err.value.target and bad in str(err.value)
    for bad in ("memcached:[::1", "memcached:host:0", "nfs:/x"):
        with pytest.raises(ProbeError) as err:
            parse_spec(bad)
        assert str(err.value).startswith(f"--probe {bad}: ")
    request = parse_spec("dns:example.com")
    assert (request.kind, request.target, request.name) == (ProbeKind.DNS, "", "example.com")


def test_io_run_intervals_and_summary_survive_a_json_round_trip(tmp_path):
    target = tmp_path / "data.bin"
    target.write_bytes(os.urandom(1 << 20))
    probe = open_probe(parse_spec(f"io:{target}", duration=0.6))
    intervals: list[Interval] = []
    ProbeDriver(probe, intervals.append).run()
    summary = result_of(probe).summary()
    assert summary.status == RunStatus.COMPLETED and summary.requests > 0 and intervals
    assert intervals[-1].ops_total == sum(i.ops for i in intervals)
    for interval in intervals:
        assert Interval.from_json(json.loads(json.dumps(interval.to_json()))) == interval
    back = RunSummary.from_json(json.loads(json.dumps(summary.to_json())))
    assert back == summary and back.figures() == summary.figures()
    p99_ns = summary.latency.p("p99")
    assert p99_ns is not None and back.figures()["p99_us"] == p99_ns / 1000


def test_dns_rounds_are_intervals_and_failures_are_errors():
    ok, refusing = Responder("127.0.0.1", 0, "ok"), Responder("127.0.0.1", 0, "refused")
    try:
        probe = open_probe(ProbeRequest(ProbeKind.DNS, f"{ok.server},{refusing.server}", 2,
                                        name="probe.test"))
        intervals: list[Interval] = []
        ProbeDriver(probe, intervals.append).run()
    finally:
        ok.close()
        refusing.close()
    assert [dns_round(i).round for i in intervals] == [0, 1]
    assert all(i.ops == 2 and i.errors == 1 for i in intervals)
    assert intervals[-1].errors_total == 2
    assert list(dns_round(intervals[0]).per_server_ms) == [ok.server, refusing.server]
    summary = result_of(probe).summary()
    assert summary.requests == 4 and summary.ops_per_s > 0 and summary.latency.count == 2
    assert summary.error == f"{refusing.server} rcode-refused"
    assert RunSummary.from_json(json.loads(json.dumps(summary.to_json()))) == summary
    for interval in intervals:
        assert Interval.from_json(json.loads(json.dumps(interval.to_json()))) == interval
    # its findings come from health/dns.py, in the resolver's vocabulary
    codes = {f.code for f in probe_rules(result_of(probe).detail)}
    assert "dns.server_error" in codes and codes <= documented_codes()


@pytest.mark.serial
def test_the_drivers_deadline_stops_a_run_waiting_on_a_silent_server():
    silent = Responder("127.0.0.1", 0, "silent")
    try:
        probe = DnsRun(DnsRunConfig(name="probe.test", servers=[silent.server], timeout=5,
                                    deadline=0.5))
        start = time.monotonic()
        driver = ProbeDriver(probe).run()
        took = time.monotonic() - start
    finally:
        silent.close()
    assert driver.expired and took < 1.5, took
    assert probe.result is not None
    summary = probe.result.summary()
    assert summary.status == RunStatus.STOPPED and summary.dns is not None
    assert summary.dns.servers[silent.server].kind == "timeout"


def test_stop_from_another_thread_keeps_the_partial_figures(tmp_path):
    target = tmp_path / "data.bin"
    target.write_bytes(os.urandom(1 << 20))
    probe = open_probe(parse_spec(f"io:{target}", duration=30))

    def stop_once_measured(interval) -> None:
        """The stop comes from another thread once requests are timed (a fixed 0.5 s came
        before the first one on a loaded machine)."""
        if interval.ops_total and not driver.stopped:
            threading.Thread(target=driver.stop).start()
            stop_sent.append(time.monotonic())
    stop_sent: list[float] = []
    driver = ProbeDriver(probe, on_interval=stop_once_measured)
    driver.run()
    assert stop_sent and time.monotonic() - stop_sent[0] < slack(2.5)
    summary = result_of(probe).summary()
    assert summary.status == RunStatus.STOPPED and summary.requests > 0


def documented_codes() -> set[str]:
    import inspector.health.dns as rules
    return {line.split()[1] for line in rules.__doc__.splitlines() if line.startswith("- dns.")}


def test_one_vocabulary_of_dns_codes():
    # the probe's codes before they were the resolver's: read as today's
    assert canonical_code("dns.single_server") == "dns.single_nameserver"
    assert canonical_code("dns.use_vc") == "dns.use_vc_no_timeout"
    assert canonical_code("dns.server_down") == "dns.server_down"
    assert set(LEGACY_CODES.values()) <= documented_codes()
    assert not set(LEGACY_CODES) & documented_codes()


# --- limits, outcome, kinds ------------------------------------------------------------------
def test_one_set_of_limits_for_the_form_and_the_command_line():
    """ProbeRequest.validate() holds the limits; the form's request and --probe refuse the
    same values with the same words, and the `probe` commands' options use the same bounds."""
    from inspector.commands.probe_io import JOBS
    from inspector.commands.probe_memcached import CONNECTIONS
    from inspector.probes.base import MAX_CONNECTIONS, MAX_IO_JOBS
    from inspector.probes.request import check_target
    assert (JOBS.maximum, CONNECTIONS.maximum) == (MAX_IO_JOBS, MAX_CONNECTIONS)
    for kind, target, seconds, count, says in (
            ("io", "/tmp", "0", "1", "seconds must be within 0..86400"),
            ("io", "/tmp", "86401", "1", "seconds must be within 0..86400"),
            ("io", "/tmp", "3", "257", "workers must be within 1..256"),
            ("memcached", "127.0.0.1:1", "3", str(MAX_CONNECTIONS + 1),
             f"connections must be within 1..{MAX_CONNECTIONS}"),
            ("memcached", "/dev/loop3", "3", "4", "not a memcached address"),
            ("io", "", "3", "1", "the IO latency probe needs a target")):
        request = form_request(kind, target, seconds, count, False)
        with pytest.raises(ProbeError, match=re.escape(says)):
            request.validate()
        refused = check_target(request)
        assert refused is not None and says in refused
    with pytest.raises(ProbeError, match="must be numbers"):
        form_request("memcached", "127.0.0.1:1", "3", "many", False)
    with pytest.raises(ProbeError, match=r"^--probe memcached:/x: .*not a memcached address"):
        parse_spec("memcached:/x")
    with pytest.raises(ProbeError, match="does not write"):
        ProbeRequest(ProbeKind.DNS, "", 3, write=True).validate()


def test_a_run_is_filed_under_its_request_whatever_became_of_it(monkeypatch):
    """`dns:example.com` measured, timed out, never started: one history target (the record
    once filed a timed-out run under '' and a measured one under the name it looked up)."""
    from dataclasses import replace

    from inspector.commands.record import probe_row
    from inspector.probes import forked_runs
    from inspector.probes.outcome import ProbeOutcome, run_probe
    ok = Responder("127.0.0.1", 0, "ok")
    try:
        request = parse_spec("dns:example.com", duration=1)
        measured = run_probe(replace(request, target=ok.server))
    finally:
        ok.close()
    assert measured.error is None and measured.summary is not None, measured.error
    assert measured.summary.requests > 0

    def hangs(request, signals=()):
        time.sleep(30)
    monkeypatch.setattr(forked_runs, "run_probe", hangs)
    monkeypatch.setattr(forked_runs, "GRACE_S", 0.3)
    timed_out = forked_runs.run_probe_forked(request, 0.2)
    assert timed_out.error is not None and "timed out" in timed_out.error
    assert timed_out.summary is None
    never = ProbeOutcome(request, error="not run: the command was stopped by SIGTERM")
    for outcome in (measured, timed_out, never):
        doc = json.loads(json.dumps(outcome.to_json()))
        assert (outcome.target, doc["target"], doc["spec"]) == ("example.com", "example.com",
                                                                 "dns:example.com")
        assert probe_row(outcome, 0.0, None).target == "example.com"
    assert [o.to_json()["status"] for o in (measured, timed_out)] == ["completed", "failed"]
    assert parse_spec("dns").filed_under == "" and probe_row(
        ProbeOutcome(parse_spec("dns")), 0.0, None).target == "-"


def test_every_kind_is_in_the_table_and_the_run_modules_do_not_know_the_request():
    """One table of kinds (probes.request.KINDS); the TYPE_CHECKING cycles request <-> runs
    and io.child <-> io.latency are gone."""
    import ast
    from pathlib import Path

    from inspector.probes.request import KINDS
    assert set(KINDS) == set(ProbeKind)
    probes = Path(__file__).resolve().parents[2] / "probes"

    def imports(path: Path) -> set[str]:
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module)
        return found
    for run in ("io/run.py", "memcached/run.py", "dns/run.py"):
        assert "inspector.probes.request" not in imports(probes / run), run
    assert "inspector.probes.io.child" not in imports(probes / "io/latency.py")


def test_inspector_help_names_the_tuis_probe_option():
    """`inspector --probe A --probe B` opens the TUI with those runs: the top-level help says
    so (it listed only the commands, issue 26)."""
    text = " ".join(build_parser().format_help().split())
    assert "--probe SPEC [--probe SPEC]... [--probe-seconds DURATION]" in text
    assert "memcached:HOST[:PORT]" in text
