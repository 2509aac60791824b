"""`inspector report` as a user meets it: bad input refused in one line, a host that could not
be looked at never reported as healthy, and the text readable in an 80-column SSH window."""
import io
import re
import tarfile

import pytest

from conftest import fixture_root, run_bin, run_cli


@pytest.mark.parametrize("value, complaint", [
    ("-1", "must be greater than 0"), ("0", "must be greater than 0"),
    ("nan", "must be a finite number"), ("soon", "is not a number")])
def test_report_timeout_must_be_a_positive_number(value, complaint):
    res = run_cli("report", "--timeout", value)
    assert res.status == 2 and complaint in res.err


def test_a_directory_that_is_not_a_root_is_refused(tmp_path):
    (tmp_path / "notes").mkdir()
    res = run_cli("report", "--root", str(tmp_path))
    assert res.status == 2
    assert res.err.strip().count("\n") == 0 and "not a host root or capture" in res.err


def test_a_partial_root_is_accepted_and_says_what_is_missing(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "resolv.conf").write_text("nameserver 192.0.2.1\n")
    doc = run_cli("report", "--root", str(tmp_path), "--json").json()
    virt = doc["sections"]["virt"]
    hardware = next(layer for layer in virt["layers"] if layer["kind"] == "hardware")
    # nothing to read about the machine: bare metal is a guess, not a certainty
    assert hardware["confidence"] == "low"
    assert doc["sections"]["dns"]["config"]["nameservers"] == ["192.0.2.1"]


@pytest.mark.parametrize("content, complaint", [
    (b"\x00garbage" * 300, "not gzip, bzip2, xz or tar data"),
    (None, "corrupt or truncated capture")])
def test_a_bad_capture_is_one_line(tmp_path, content, complaint):
    path = tmp_path / "capture.tar.gz"
    if content is None:  # a real capture cut short, as an interrupted scp leaves it
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            tar.add(fixture_root("flash-mixed"), arcname=".")
        content = buf.getvalue()[: len(buf.getvalue()) // 2]
    path.write_bytes(content)
    res = run_bin("report", "--root", str(path))
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and complaint in res.stderr, res.stderr
    assert "Traceback" not in res.stderr


def test_a_capture_of_something_else_is_refused(tmp_path):
    path = tmp_path / "photos.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("holiday.jpg")
        data = b"jpeg"
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    res = run_cli("report", "--root", str(path))
    assert res.status == 2 and "not a host root or capture" in res.err


def test_sections_that_were_not_collected_are_findings_not_silence():
    doc = run_cli("report", "--root", str(fixture_root("flash-mixed")), "--json",
                  "--timeout", "0.000001").json()
    missing = [name for name, section in doc["sections"].items() if set(section) == {"unknown"}]
    assert missing, "a one-microsecond budget must time out at least one collector"
    codes = {f["code"] for f in doc["findings"] if f["level"] == "unknown"}
    assert {f"{name}.not_collected" for name in missing} <= codes
    text = run_cli("report", "--root", str(fixture_root("flash-mixed")), "--timeout",
                   "0.000001").out
    assert "No findings" not in text


def test_report_fits_80_columns_without_cutting_verdicts():
    res = run_bin("report", "--root", str(fixture_root("flash-mixed")), env={"COLUMNS": "80"})
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "…" not in res.stdout  # nothing cut with an ellipsis: long values fold instead
    # the second header line says what the host is and how it is
    assert re.search(r"kernel \S+ \S+ · .* · findings \d+ crit", lines[1]), lines[1]


def test_report_header_names_a_dom0_role():
    res = run_bin("report", "--root", str(fixture_root("virt-13-xen-dom0")), "--section", "virt")
    assert "hardware; host role: xen-host" in res.stdout.splitlines()[1]
    assert "hardware: hardware" not in res.stdout


def test_report_does_not_import_the_probes():
    """Startup over a slow link: `inspector report` loads only its own command module."""
    import subprocess
    import sys
    code = ("import sys, io, contextlib\n"
            "from inspector.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    main(['report', '--section', 'cpu', '--json'])\n"
            "print(sorted(m for m in sys.modules if m.startswith(('inspector.probes', "
            "'inspector.commands.probe', 'inspector.tui', 'textual'))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert out.strip() == "[]", out


def test_a_bug_of_ours_is_a_failure_not_a_verdict(monkeypatch):
    """An unexpected exception exits 2 with one line (3 and an UNKNOWN line for check): exit 1
    would read as "regressions" to diff and WARNING to Nagios."""
    import inspector.commands.check as check_cmd
    import inspector.commands.diff as diff_cmd

    def broken(args):
        raise KeyError("schema|field")
    monkeypatch.setattr(diff_cmd, "run", broken)
    monkeypatch.setattr(check_cmd, "run", broken)
    res = run_cli("diff", "a.json", "b.json")
    assert res.status == 2 and res.out == ""
    assert res.err.strip().splitlines() == [
        "inspector: internal error: KeyError: 'schema|field' (INSPECTOR_DEBUG=1 shows the traceback)"]
    res = run_cli("check")
    assert res.status == 3
    assert res.out == "INSPECTOR UNKNOWN - internal error: KeyError: 'schema/field'\n"
    monkeypatch.setenv("INSPECTOR_DEBUG", "1")
    with pytest.raises(KeyError):
        run_cli("diff", "a.json", "b.json")


def test_capture_header_says_when_and_a_partial_report_says_what_it_checked(tmp_path):
    out = tmp_path / "c.tar.gz"
    assert run_bin("capture", "-o", str(out)).returncode == 0
    res = run_bin("report", "--root", str(out), "--section", "cpu")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert re.search(r"source: .*c\.tar\.gz · captured \d{4}-\d\d-\d\d \d\d:\d\d UTC "
                     r"\((just now|\d+ min ago)\)", res.stdout), lines[:4]
    if "No findings" in res.stdout:   # this machine's CPU may have findings of its own
        assert "No findings in the sections read (CPU and power); the others were not checked." \
            in res.stdout
        assert "nothing wrong detected" not in res.stdout
    plain = run_bin("report", "--root", str(fixture_root("virt-02-kvm-qemu")))
    assert "capture time not recorded" in plain.stdout


def test_a_section_lost_at_capture_time_is_not_collected_on_replay(tmp_path, monkeypatch):
    """The storage collector hung while capturing: the replay must say storage was not
    collected (as the live report did), not show the files read before the hang as the
    whole story."""
    import inspector.report.collect as collect
    from inspector.captures.capture import open_root
    from inspector.commands.capture import capture_live
    from inspector.model import Unknown
    real = collect.collect_section

    def storage_hangs(root, name, timeout):
        if name == "storage":
            return Unknown("timed out after 15 s"), 15.0
        return real(root, name, timeout)
    monkeypatch.setattr(collect, "collect_section", storage_hangs)
    info = capture_live(str(tmp_path / "c.tar.gz"))
    assert info["incomplete"] == {"storage": "timed out after 15 s"}
    monkeypatch.undo()
    replay = collect.build_report(open_root(str(tmp_path / "c.tar.gz")))
    storage = replay.sections["storage"]
    assert isinstance(storage, Unknown)
    assert storage.reason == "not collected when captured: timed out after 15 s"
    lost = [f for f in replay.findings if f.code == "storage.not_collected"]
    assert len(lost) == 1 and "D state" in lost[0].advice
    assert not isinstance(replay.sections["net"], Unknown)    # the rest replays as it was
