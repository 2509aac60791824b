"""ethtool -k presentation of raw feature bits: legacy groups, suffixes, ordering."""
from inspector.discover.net_offloads import (
    LEGACY_FLAGS,
    Offload,
    ethtool_offloads,
    find_offload,
    pattern_match,
)
from inspector.model import Unknown


def row(name, available=True, requested=None, active=True, never_changed=False):
    return {"name": name, "available": available,
            "requested": active if requested is None else requested, "active": active,
            "never_changed": never_changed}


def lines(rows):
    return [o.ethtool_line() for o in ethtool_offloads(rows)]


def test_pattern_match_like_ethtool():
    assert pattern_match("tx-tcp-segmentation", "tx-tcp*-segmentation")
    assert pattern_match("tx-tcp6-segmentation", "tx-tcp*-segmentation")
    assert pattern_match("tx-tcp-mangleid-segmentation", "tx-tcp*-segmentation")
    assert not pattern_match("tx-udp-segmentation", "tx-tcp*-segmentation")
    assert pattern_match("tx-checksum-ipv4", "tx-checksum-*")
    assert not pattern_match("tx-checksumming", "tx-checksum-*")
    assert pattern_match("tx-scatter-gather", "tx-scatter-gather*")
    assert pattern_match("tx-scatter-gather-fraglist", "tx-scatter-gather*")
    assert pattern_match("rx-gro", "rx-gro") and not pattern_match("rx-gro-hw", "rx-gro")


def test_group_header_children_and_single_match_rename():
    rows = [row("tx-scatter-gather"), row("tx-checksum-ipv4", available=False, active=False),
            row("tx-checksum-ip-generic"), row("tx-generic-segmentation"),
            row("rx-gro", active=False, requested=True), row("tx-tcp-segmentation"),
            row("tx-tcp6-segmentation", active=False), row("rx-checksum", available=False),
            row("highdma", available=False), row("tx-nocache-copy", active=False),
            row("vlan-challenged", active=False, never_changed=True)]
    out = lines(rows)
    assert out[0] == "rx-checksumming: on [fixed]"        # one match: legacy name, own suffix
    assert out[1:4] == ["tx-checksumming: on", "\ttx-checksum-ipv4: off [fixed]",
                        "\ttx-checksum-ip-generic: on"]
    assert out[4] == "scatter-gather: on"                   # single kernel match: renamed
    assert out[5:8] == ["tcp-segmentation-offload: on", "\ttx-tcp-segmentation: on",
                        "\ttx-tcp6-segmentation: off"]
    assert out[8] == "generic-segmentation-offload: on"
    assert out[9] == "generic-receive-offload: off [requested on]"
    # legacy flags with no kernel feature at all still print, as "off"
    assert "large-receive-offload: off" in out and "receive-hashing: off" in out
    # the rest in kernel order, never_changed counts as fixed
    assert out[-3:] == ["highdma: on [fixed]", "tx-nocache-copy: off",
                        "vlan-challenged: off [fixed]"]
    # 11 rows + 2 group headers + 5 legacy flags no row matches (lro, vlans, ntuple, rxhash)
    assert len(out) == len(rows) + 2 + (len(LEGACY_FLAGS) - 6)


def test_requested_off_and_unnamed_bits_skipped():
    out = lines([row("", active=True), row("rx-lro", active=True, requested=False),
                 row("loopback", active=False)])
    assert "large-receive-offload: on [requested off]" in out
    assert not any(line.startswith(": ") for line in out)
    assert out[-1] == "loopback: off"


def test_find_offload_by_legacy_or_kernel_name():
    offloads = ethtool_offloads([row("tx-generic-segmentation", active=False),
                                 row("tx-tcp-segmentation"), row("tx-tcp6-segmentation")])
    gso = find_offload(offloads, "generic-segmentation-offload")
    assert gso is not None and gso.on is False
    assert find_offload(offloads, "tx-generic-segmentation") == gso
    assert gso.name == "generic-segmentation-offload"
    tso = find_offload(offloads, "tcp-segmentation-offload")
    assert tso is not None and tso.fixed is None  # a header
    tso6 = find_offload(offloads, "tx-tcp6-segmentation")
    assert tso6 is not None and tso6.group == "tcp-segmentation-offload"
    assert find_offload(Unknown("x"), "rx-gro") is None
    assert find_offload(offloads, "nope") is None


def test_offload_line_format():
    assert Offload("rx-gro-hw", True, True, None).ethtool_line() == "rx-gro-hw: on [fixed]"
    assert Offload("x", False, False, True, group="g").ethtool_line() == "\tx: off [requested on]"
