"""`inspector report` as an operator reads it at 80 columns: no figure cut, no line past
the terminal, a finding always says what to do."""
from __future__ import annotations

import io

from rich.cells import cell_len
from rich.console import Console

from conftest import fixture_root
from inspector.render.report import render_report
from inspector.report.collect import build_report
from inspector.roots.host import HostRoot


def report_text(root: str, width: int = 80, sections: list[str] | None = None) -> str:
    report = build_report(HostRoot(str(fixture_root(root))), sections)
    buf = io.StringIO()
    render_report(report, Console(file=buf, width=width, color_system=None))
    return buf.getvalue()


def test_nic_table_keeps_queue_length_and_carrier_at_80_columns():
    text = report_text("net-errors", sections=["net"])
    table = text.split("╭─ Network")[1].split("counters and offloads")[0]
    rows = {cells[0]: cells for cells in
            ([c.strip() for c in line.split("│")[1:-1]] for line in table.splitlines()
             if line.count("│") >= 8)}
    assert "…" not in table
    assert rows["eno1"][3:5] == ["1500", "1000"], rows["eno1"]
    assert rows["eno2"][6].startswith("down, no") and "carrier" in table
    assert max(cell_len(line) for line in text.splitlines()) <= 80


def _details_of(text: str, name: str) -> str:
    table = text.split("╭─ Storage")[1].split("health")[0]
    rows = [[c.strip() for c in line.split("│")[1].split()] for line in table.splitlines()
            if line.startswith("│ ")]
    return " ".join(next(r for r in rows if r and r[0] == name)[1:])


def test_virtual_and_optical_disks_are_not_called_hdd_or_ssd():
    # vda's rotational 1 is virtio's default, xvda's 0 Xen's, sr0 is a DVD-ROM: none a medium
    guest = report_text("kvm-virtio-guest", sections=["storage"])
    assert "hdd" not in _details_of(guest, "vda") and "hdd" not in _details_of(guest, "sr0")
    assert "virtio mq-deadline" in _details_of(guest, "vda")
    assert "ssd" not in _details_of(report_text("xen-pv-guest", sections=["storage"]), "xvda")
    physical = report_text("storage-md-check", sections=["storage"])
    assert "ata hdd mq-deadline" in _details_of(physical, "sdb")
    assert "ata ssd mq-deadline" in _details_of(physical, "sda")


def test_header_does_not_claim_bare_metal_when_no_virt_evidence_was_read():
    # storage-md-check holds no cpuid, DMI or /proc: "hardware" there is a guess
    assert "· hardware? ·" in report_text("storage-md-check").splitlines()[1]
    assert "· hardware ·" in report_text("virt-01-baremetal-dell").splitlines()[1]


def test_cpufreq_policies_keep_every_value_at_80_columns():
    server = report_text("cpu-powersave-server", sections=["cpu"]).split("╭─ CPU and power")[1]
    assert "…" not in server
    flat = " ".join(line.strip("│ ") for line in server.splitlines())
    assert "16 policies, CPUs 0-15: acpi-cpufreq powersave" in flat
    assert "limits 1000-2500 MHz (hw 1000-2500)" in flat
    laptop = report_text("cpu-pstate-laptop", sections=["cpu"]).split("╭─ CPU and power")[1]
    assert "…" not in laptop and "EPP balance_power" in laptop


def test_virt_evidence_keeps_whole_container_ids():
    text = report_text("virt-30-kubernetes-on-ec2", sections=["virt"])
    joined = "".join(line.strip("│").strip() for line in text.splitlines())
    assert "…" not in text
    assert ("pod8a1c3a2e-1b2c-4d5e-8f90-a1b2c3d4e5f6/"
            "4f66ad9a4f5b0d1c2a7c3e8b9d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e") in joined


def test_findings_fold_long_evidence_instead_of_cutting_it():
    from inspector.model import Finding, Level
    from inspector.render.findings import render_findings
    uuid = "LVM-" + "Xq3v9T2kLmN8pQ4rS7uW1yZ5aB6cD0eF" * 2
    finding = Finding(Level.WARN, "dm-3", "dm device is suspended", [f"dm/uuid: {uuid}"],
                      f"dmsetup resume {uuid}")
    buf = io.StringIO()
    Console(file=buf, width=80, color_system=None).print(render_findings([finding]))
    text = buf.getvalue()
    joined = "".join(line.split("│")[-1].strip() for line in text.splitlines())
    assert "…" not in text
    assert f"dm/uuid:{uuid}" in joined and f"dmsetup resume{uuid}" in joined


def test_md_block_says_unknown_instead_of_printing_nothing():
    text = report_text("live-md-busy-member", sections=["storage"])
    flat = " ".join(line.strip("│ ") for line in text.splitlines())
    assert "metadata ?" in flat and "members: ? (no dev-* entries" in flat
    assert "metadata 1.2" in report_text("storage-md-check", sections=["storage"])
