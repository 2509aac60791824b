"""When sos ran, as a unix time: the header's "captured ..." of a sosreport.

sos writes local times without a zone (manifest.json start_time, the sos.log lines), so the
zone is needed too. Best first:
1. `date --utc` (sos's date plugin): exact.
2. The start time with the offset `timedatectl` printed then (systemd plugin: "Time zone:
   Europe/Paris (CET, +0100)").
3. The start time in the host's zone, named by etc/timezone or the etc/localtime link.
4. The start time with the UTC offset read off sos.log: its last line's local time against
   the file's modification time (kept by tar), when the two agree to a quarter-hour zone.
5. The start time read as UTC, and the header says so.
"""
from __future__ import annotations

import os
import re
import stat
from datetime import UTC, datetime, timedelta, timezone

from inspector.roots.host import HostRoot

_LOG_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)[,.](\d+)", re.M)


def collected_at(reader: HostRoot, manifest: dict | None, date_utc: str | None,
                 timedatectl: str | None = None) -> tuple[float, str]:
    """(unix time sos ran, note for the header: "" when exact); (0.0, reason) when unknown."""
    if date_utc:
        exact = _parse_date_utc(date_utc)
        if exact is not None:
            return exact, ""
    start = _manifest_start(manifest) or _log_first(reader)
    if start is None:
        return 0.0, "the time sos ran is not in this sosreport"
    offset = _timedatectl_offset(timedatectl or "")
    if offset is not None:
        return start.replace(tzinfo=timezone(offset)).timestamp(), ""
    zone = _named_zone(reader)
    if zone is not None:
        return start.replace(tzinfo=zone).timestamp(), ""
    offset = _offset_from_log(reader)
    if offset is not None:
        return start.replace(tzinfo=timezone(offset)).timestamp(), ""
    return start.replace(tzinfo=UTC).timestamp(), "time zone not in this sosreport: read as UTC"


def _parse_date_utc(text: str) -> float | None:
    line = text.strip().splitlines()[0] if text.strip() else ""
    for fmt in ("%a %b %d %H:%M:%S %Z %Y", "%a %d %b %Y %I:%M:%S %p %Z", "%a %d %b %Y %H:%M:%S %Z"):
        try:
            parsed = datetime.strptime(line, fmt)
        except ValueError:
            continue
        return parsed.replace(tzinfo=UTC).timestamp()
    return None


_TIMEDATECTL_ZONE = re.compile(r"Time zone:.*\(\S*,?\s*([+-])(\d\d)(\d\d)\)")


def _timedatectl_offset(text: str) -> timedelta | None:
    m = _TIMEDATECTL_ZONE.search(text)
    if not m:
        return None
    offset = timedelta(hours=int(m[2]), minutes=int(m[3]))
    return -offset if m[1] == "-" else offset


def _manifest_start(manifest: dict | None) -> datetime | None:
    value = manifest.get("start_time") if isinstance(manifest, dict) else None
    if not isinstance(value, str):
        return None
    for fmt in ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S"):
        try:
            return datetime.strptime(value, fmt)
        except ValueError:
            continue
    return None


def _log_stamps(reader: HostRoot) -> list[datetime]:
    text = reader.try_text("sos_logs/sos.log")
    if not isinstance(text, str):
        return []
    out = []
    for m in _LOG_STAMP.finditer(text):
        try:
            out.append(datetime.strptime(m[1], "%Y-%m-%d %H:%M:%S")
                       + timedelta(milliseconds=int(m[2][:3].ljust(3, "0"))))
        except ValueError:
            continue
    return out


def _log_first(reader: HostRoot) -> datetime | None:
    stamps = _log_stamps(reader)
    return stamps[0] if stamps else None


def _named_zone(reader: HostRoot):
    from zoneinfo import ZoneInfo
    names = []
    text = reader.try_line("etc/timezone")
    if isinstance(text, str) and text:
        names.append(text)
    target = reader.readlink("etc/localtime")
    if target and "zoneinfo/" in target:
        names.append(target.split("zoneinfo/", 1)[1])
    for name in names:
        try:
            return ZoneInfo(name)
        except (ValueError, OSError, KeyError):   # unknown name, or no tzdata here
            continue
    return None


def _offset_from_log(reader: HostRoot) -> timedelta | None:
    stamps = _log_stamps(reader)
    mtime = _mtime_inside(reader, "sos_logs/sos.log")
    if not stamps or mtime is None:
        return None
    local_as_utc = stamps[-1].replace(tzinfo=UTC).timestamp()
    quarters = round((local_as_utc - mtime) / 900)
    if abs(local_as_utc - mtime - quarters * 900) > 60 or abs(quarters) > 14 * 4:
        return None   # the file was copied without its times: no offset to read
    return timedelta(seconds=quarters * 900)


def _mtime_inside(reader: HostRoot, rel: str) -> float | None:
    """Modification time of a regular file reached without following any link."""
    path = reader.path
    try:
        for part in rel.split("/"):
            path = os.path.join(path, part)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                return None
    except OSError:
        return None
    return st.st_mtime if stat.S_ISREG(st.st_mode) else None

