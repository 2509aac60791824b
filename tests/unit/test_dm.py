"""device-mapper kinds from the uuid prefix, and striping from the queue limits."""
import pytest

from inspector.discover.block import QueueLimits, dm_type_from_uuid
from inspector.discover.dm import kind_from_uuid, striping_from_limits
from inspector.model import Unknown


@pytest.mark.parametrize("uuid, kind, detail", [
    ("LVM-Hx3kQ7bN2mWq9Yt4Rz8Lp1Sd6Fg0Jc5VAq1Ws2Ed3Rf4Tg5Yh6Uj7Ik8Ol9Pz0Xc1Vb", "lvm", None),
    ("CRYPT-LUKS2-5b9e3c0e0c2f4f0e9a3d1f2b7c6a8e41-cryptdata", "crypt", "LUKS2"),
    ("CRYPT-LUKS1-0b3f9e1c2d4a4e5f8a9b0c1d2e3f4a5b-luks-home", "crypt", "LUKS1"),
    ("CRYPT-PLAIN-swapcrypt", "crypt", "PLAIN"),
    ("mpath-3600508b4000156d700012000000b0000", "mpath", None),
    ("part1-mpath-3600508b4000156d700012000000b0000", "part", "partition 1 of mpath"),
    ("part12-LVM-abc", "part", "partition 12 of lvm"),
    ("DMRAID-isw_cbdbbhgcab_Volume0", "dmraid", None),
    ("STRATIS-1-abc", "stratis", None),
    ("VDO-0f1e2d", "vdo", None),
    ("", "dm", None),
    (None, "dm", None),
    ("nodash", "dm", None),
])
def test_kind_from_uuid(uuid, kind, detail):
    assert kind_from_uuid(uuid) == (kind, detail)


def test_lsblk_type_rule_agrees_with_kinds():
    for uuid in ("LVM-x", "CRYPT-LUKS2-x", "mpath-x", "part3-mpath-x", "VDO-x"):
        assert dm_type_from_uuid(uuid) == kind_from_uuid(uuid)[0]


def limits(minimum, optimal):
    return QueueLimits(512, 4096, minimum, optimal)


def test_striping():
    s = striping_from_limits(limits(65536, 262144))
    assert s is not None
    assert (s.stripe_bytes, s.stripes, s.width_bytes) == (65536, 4, 262144)
    assert striping_from_limits(limits(512, 0)) is None            # linear LV
    assert striping_from_limits(limits(4096, 4096)) is None        # one stripe is not striping
    assert striping_from_limits(limits(65536, 100000)) is None     # not a multiple: not a stripe set
    assert striping_from_limits(limits(Unknown("x"), 131072)) is None
