"""Parsers of what sos kept: command file names, uname -a, date, ip link and ethtool output."""
from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.captures.sos.clock import _parse_date_utc, _timedatectl_offset
from inspector.captures.sos.commands import mangle
from inspector.captures.sos.translate import parse_environment, parse_udev_db, parse_uname_a
from inspector.discover.dmsetup_text import parse_info_columns, parse_tree
from inspector.discover.ethtool_text import (
    LegacyFormat,
    duplex,
    feature_rows,
    key_values,
    speed_mbps,
)
from inspector.discover.ip_link import parse_ip_link
from inspector.discover.net_offloads import ethtool_offloads


def test_mangle_names_files_as_sos_does():
    # names from a sos 4.0 run on Debian 12
    assert mangle("ethtool -k eth0") == "ethtool_-k_eth0"
    assert mangle("blkid -c /dev/null") == "blkid_-c_.dev.null"
    assert mangle("ls -lanR /sys/block") == "ls_-lanR_.sys.block"
    assert mangle("lsmem -a -o RANGE,SIZE,STATE") == "lsmem_-a_-o_RANGE_SIZE_STATE"
    assert mangle("/usr/sbin/smartctl -a /dev/sda") == "smartctl_-a_.dev.sda"
    assert mangle("ethtool -k eth0.100") == "ethtool_-k_eth0.100"


def test_uname_a_of_debian_and_rhel():
    assert parse_uname_a("Linux vm 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 "
                         "(2024-02-01) x86_64 GNU/Linux\n") == {
        "sysname": "Linux", "nodename": "vm", "release": "6.1.0-18-amd64",
        "version": "#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)", "machine": "x86_64"}
    rhel = parse_uname_a("Linux db1 4.18.0-305.el8.x86_64 #1 SMP Thu Apr 29 08:54:30 EDT 2021 "
                         "x86_64 x86_64 x86_64 GNU/Linux")
    assert rhel is not None and rhel["machine"] == "x86_64" and rhel["version"].endswith("EDT 2021")
    assert parse_uname_a("") is None and parse_uname_a("uname: not found") is None


def test_date_utc_forms():
    expected = datetime(2026, 11, 25, 11, 28, 55, tzinfo=UTC).timestamp()
    assert _parse_date_utc("Wed Nov 25 11:28:55 UTC 2026\n") == expected
    assert _parse_date_utc("Wed 25 Nov 2026 11:28:55 AM UTC") == expected
    assert _parse_date_utc("date: command not found") is None


def test_ethtool_settings_words():
    settings_ = key_values("Settings for eth0:\n\tSpeed: 25000Mb/s\n\tDuplex: Full\n")
    assert speed_mbps(settings_["Speed"]) == 25000 and duplex(settings_["Duplex"]) == "full"
    assert speed_mbps("Unknown!") == -1 and duplex("Unknown! (255)") == "unknown"
    assert speed_mbps("fast") is None and duplex(None) is None


def test_ethtool_k_with_requested_states_reads_back_the_same_lines():
    text = ("Features for eth0:\nrx-checksumming: on\ntx-checksumming: off\n"
            "\ttx-checksum-ipv4: off [requested on]\n\ttx-checksum-ip-generic: off [fixed]\n"
            "generic-receive-offload: on\nlarge-receive-offload: off [fixed]\n"
            "rx-vlan-filter: on [fixed]\nhsr-fwd-offload: off [fixed]\n")
    rows = feature_rows(text)
    assert rows is not None, "ethtool -k output not read"
    lines = [o.ethtool_line() for o in ethtool_offloads(rows)]
    # the legacy groups this output lacks print as ethtool prints them for a kernel without
    # their features: only the ones listed here are compared
    assert [line for line in lines if line.split(":")[0].strip() in text] == text.splitlines()[1:]


def test_ethtool_k_of_old_ethtool_is_refused_with_the_reason():
    text = "Offload parameters for eth0:\nrx-checksumming: on\ntx-checksumming: on\n"
    try:
        feature_rows(text)
    except LegacyFormat as exc:
        assert "tx-checksumming" in str(exc)
    else:
        raise AssertionError("legacy format accepted")
    assert feature_rows("Cannot get device feature settings: No such device\n") is None


def test_ip_link_one_line_form_and_masters():
    text = ("3: br0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP mode "
            "DEFAULT group default qlen 1000\\    link/ether aa:bb:cc:00:00:01 brd "
            "ff:ff:ff:ff:ff:ff\n"
            "4: veth1@if5: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue master br0 "
            "state UP mode DEFAULT group default qlen 1000\\    link/ether aa:bb:cc:00:00:02 "
            "brd ff:ff:ff:ff:ff:ff link-netnsid 0\n")
    links = parse_ip_link(text)
    assert set(links) == {"br0", "veth1"}
    assert links["veth1"].attrs["master"] == "br0" and links["veth1"].sysfs("mtu") == "1500"
    assert links["br0"].sysfs("carrier") == "1" and links["br0"].sysfs("flags") == "0x1003"


def test_ip_link_details_kind_and_parent():
    text = ("5: bond0: <BROADCAST,MULTICAST,MASTER,UP,LOWER_UP> mtu 9000 qdisc noqueue state UP "
            "mode DEFAULT group default qlen 1000\n    link/ether 52:54:00:aa:bb:cc brd "
            "ff:ff:ff:ff:ff:ff promiscuity 0 minmtu 68 maxmtu 65535 \n    bond mode 802.3ad "
            "miimon 100 updelay 0\n    addrgenmode eui64 numtxqueues 16 numrxqueues 16 "
            "gso_max_size 65536 gso_max_segs 65535 parentbus pci parentdev 0000:3b:00.0\n")
    bond = parse_ip_link(text)["bond0"]
    assert bond.kind == "bond" and bond.devtype == "bond"
    assert bond.details["numrxqueues"] == "16" and bond.details["parentbus"] == "pci"


def test_environment_file():
    assert parse_environment("LC_ALL=C\nPATH=/usr/bin:/bin\nnot a pair\n=x\n") == {
        "LC_ALL": "C", "PATH": "/usr/bin:/bin"}


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_parsers_never_raise_on_arbitrary_text(text):
    parse_ip_link(text)
    key_values(text)
    parse_uname_a(text)
    parse_environment(text)
    parse_udev_db(text)
    parse_info_columns(text)
    parse_tree(text)
    _parse_date_utc(text)
    _timedatectl_offset(text)
    try:
        rows = feature_rows(text)
    except LegacyFormat:
        rows = None
    if rows is not None:
        ethtool_offloads(rows)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([
    "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN",
    "    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00", "    RX:  bytes packets",
    "    3193 29 0", "2: eth0@: <> mtu", "    link/ether", "    bridge_slave state forwarding",
    "    vlan protocol 802.1Q id 100", "x: y: <z>", "    addrgenmode eui64 numtxqueues",
    "\\", "", "3: e: <UP> mtu 1500 master br0 state UP qlen"]), max_size=12))
def test_ip_link_parser_on_shuffled_real_lines(lines):
    for link in parse_ip_link("\n".join(lines)).values():
        for attr in ("mtu", "tx_queue_len", "operstate", "address", "ifindex", "flags",
                     "carrier", "type"):
            value = link.sysfs(attr)
            assert value is None or isinstance(value, str)


UDEV_DB = """P: /devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda
N: sda
L: 0
S: disk/by-id/ata-ST1000DM010-2EP102_Z9A1B2C3
E: DEVPATH=/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda
E: DEVNAME=/dev/sda
E: DEVTYPE=disk
E: MAJOR=8
E: MINOR=0
E: SUBSYSTEM=block
E: ID_MODEL=ST1000DM010-2EP102
E: ID_SERIAL_SHORT=Z9A1B2C3
E: DEVLINKS=/dev/disk/by-id/ata-ST1000DM010-2EP102_Z9A1B2C3

P: /devices/virtual/block/dm-0
N: dm-0
E: DEVNAME=/dev/dm-0
E: SUBSYSTEM=block
E: DM_NAME=vg0-root
E: DM_UUID=LVM-abc

P: /devices/virtual/net/eth0
E: INTERFACE=eth0
E: SUBSYSTEM=net
E: ID_NET_NAME_PATH=enp0s3
"""


def test_udev_db_records_of_block_devices():
    db = parse_udev_db(UDEV_DB)
    assert set(db) == {"sda", "dm-0"}
    assert db["sda"] == {"DEVLINKS": "/dev/disk/by-id/ata-ST1000DM010-2EP102_Z9A1B2C3",
                         "DEVTYPE": "disk", "ID_MODEL": "ST1000DM010-2EP102",
                         "ID_SERIAL_SHORT": "Z9A1B2C3"}
    assert db["dm-0"] == {"DM_NAME": "vg0-root", "DM_UUID": "LVM-abc"}


def test_dmsetup_info_columns():
    text = ("Name              Maj Min Stat Open Targ Event  UUID\n"
            "vg0-root          253   0 L--w    1    1      0 LVM-Hq5fJ0x9ZsE3bXwY1uPq2\n"
            "luks-3f2a         253   2 L-sw    0    1      0 CRYPT-LUKS2-3f2a0c-luks-3f2a\n"
            "bare              253   7 L--r    0    1      0\n")
    info = parse_info_columns(text)
    uuid = info["dm-0"].uuid
    assert info["dm-0"].name == "vg0-root" and uuid is not None and uuid.startswith("LVM-")
    assert info["dm-2"].suspended and not info["dm-0"].suspended
    assert info["dm-7"].uuid is None
    assert parse_info_columns("No devices found\n") == {}


def test_dmsetup_tree_unicode_and_ascii():
    unicode_tree = ("vg0-data (253:3)\n \u2514\u2500luks-x (253:2)\n    \u251c\u2500 (8:3)\n"
                    "    \u2514\u2500 (8:4)\nvg0-root (253:0)\n \u2514\u2500 (8:2)\n")
    assert parse_tree(unicode_tree) == {"253:3": ["253:2"], "253:2": ["8:3", "8:4"],
                                        "253:0": ["8:2"]}
    assert parse_tree("mpatha (253:1)\n |- (8:16)\n `- (8:32)\n") == {"253:1": ["8:16", "8:32"]}
    assert parse_tree("No devices found\n") == {}


def test_timedatectl_zone_offset():
    from datetime import timedelta
    text = ("               Local time: Wed 2026-11-25 12:20:22 CET\n"
            "           Universal time: Wed 2026-11-25 11:20:22 UTC\n"
            "                Time zone: Europe/Paris (CET, +0100)\n")
    assert _timedatectl_offset(text) == timedelta(hours=1)
    assert _timedatectl_offset("Time zone: America/St_Johns (NST, -0330)") == -timedelta(hours=3, minutes=30)
    assert _timedatectl_offset("Time zone: n/a") is None


def test_missing_json_command_names_the_text_output_sos_kept(tmp_path):
    from inspector.captures.sos.commands import CommandIndex
    from inspector.roots.host import HostRoot
    (tmp_path / "sos_commands" / "ata").mkdir(parents=True)
    (tmp_path / "sos_commands" / "ata" / "smartctl_-a_.dev.sda").write_text("SMART overall: PASSED\n")
    (tmp_path / "sos_commands" / "nvme").mkdir()
    (tmp_path / "sos_commands" / "nvme" / "nvme_smart-log_.dev.nvme0n1").write_text("temperature\n")
    index = CommandIndex(HostRoot(str(tmp_path)), None)
    assert index.kept_instead("smartctl --json -a /dev/sda") == "smartctl -a /dev/sda, as text"
    assert index.kept_instead("nvme smart-log /dev/nvme0n1 -o json") == \
        "nvme smart-log /dev/nvme0n1, as text"
    assert index.kept_instead("smartctl --json -a /dev/sdb") is None
    assert index.kept_instead("ethtool -i eth1") is None
