"""Date lines as cron jobs write them into logs, read back into unix time and UTC offset.

`date` with no format prints the host locale's date_fmt: `Sun Feb 15 08:00:01 JST 2015` in C,
`2015年  2月 15日 日曜日 08:00:01 JST` in ja_JP.UTF-8, `So 15. Feb 08:00:01 JST 2015` in de_DE,
`Sun Feb 15 08:00:01 AM JST 2015` in en_US (glibc 2.29+) ... Each locale's format and names come
from glibc's locale data (inspector.record.locale_dates, generated); the C format, `date -R`,
`date -Is` / `--rfc-3339` (ISO 8601), `date +%s` (unix time) and `date '+%F %T %Z'` are read
too. A leading `#` or `##` (and blanks) is not part of the date.

Time zones: a numeric offset is exact; an abbreviation maps to its offset when it has one
meaning (JST, KST, UTC/GMT, CET/CEST, EET/EEST, BST, EST/EDT, CDT, MST/MDT, PST/PDT ...). An
ambiguous one (CST: China or US Central; IST: India, Ireland or Israel; AST) or an unknown one
is refused (DateError, saying how to name it) unless ZoneRules says what it means
(`--tz CST=+08:00`, `--tz CST=Asia/Shanghai`); a bare `--tz ZONE` is the zone of dates that
carry none (`date +%s`, `date '+%F %T'`), which otherwise read as UTC with a note.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import cache, lru_cache

from inspector.record.locale_dates import LOCALES

# Abbreviations with one meaning where servers run (tzdata's spellings).
ZONE_OFFSETS_MIN = {
    "UTC": 0, "UT": 0, "GMT": 0, "Z": 0, "WET": 0, "WEST": 60, "BST": 60, "IDT": 180,
    "CET": 60, "CEST": 120, "MET": 60, "MEST": 120, "EET": 120, "EEST": 180, "MSK": 180,
    "SAST": 120, "CAT": 120, "EAT": 180, "WAT": 60, "PKT": 300, "WIB": 420, "WITA": 480,
    "WIT": 540, "HKT": 480, "PHT": 480, "AWST": 480, "JST": 540, "KST": 540, "ACST": 570,
    "ACDT": 630, "AEST": 600, "AEDT": 660, "ChST": 600, "NZST": 720, "NZDT": 780,
    "HST": -600, "AKST": -540, "AKDT": -480, "PST": -480, "PDT": -420, "MST": -420,
    "MDT": -360, "CDT": -300, "EST": -300, "EDT": -240, "ADT": -180, "NST": -210,
    "NDT": -150, "SST": -660,
}
AMBIGUOUS = {
    "CST": "China +08:00, US Central -06:00 or Cuba -05:00",
    "IST": "India +05:30, Ireland +01:00 or Israel +02:00",
    "AST": "Atlantic -04:00 or Arabia +03:00",
}
_EXAMPLE_ZONE = {"CST": "Asia/Shanghai", "IST": "Asia/Kolkata", "AST": "America/Halifax"}
_NUMERIC = re.compile(r"^([+-])(\d{2}):?(\d{2})?$")
_EPOCH = re.compile(r"^@?(\d{9,11}(?:\.\d+)?)$")
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")


class DateError(ValueError):
    """A line that is a date but cannot be placed in time; the message says what to do."""


@dataclass(frozen=True)
class LogDate:
    timestamp: float
    tz_offset_s: int                 # the clock it was written on: local = timestamp + offset
    form: str                        # what read it: a locale ("C", "ja_JP"), iso-8601, epoch
    zone: str | None = None          # the zone as written
    note: str | None = None          # a caveat, e.g. no zone in the line


@dataclass
class ZoneRules:
    """What the operator says zones mean (`--tz`): ABBR -> "+HH:MM" or an IANA name; `default`
    is the zone of dates written without one."""
    meanings: dict[str, str] = field(default_factory=dict)
    default: str | None = None

    @classmethod
    def parse(cls, options: list[str]) -> ZoneRules:
        """`--tz ABBR=+HH:MM`, `--tz ABBR=Area/City`, `--tz Area/City` or `--tz +HH:MM`;
        ValueError with a one-line reason."""
        rules = cls()
        for option in options:
            abbr, sep, value = option.partition("=")
            if sep:
                abbr = abbr.strip()
                if not re.fullmatch(r"[A-Za-z]{1,6}", abbr):
                    raise ValueError(f"--tz {option}: {abbr!r} is not a zone abbreviation")
                _check_zone(value.strip(), option)
                rules.meanings[abbr.upper()] = value.strip()
            else:
                _check_zone(option.strip(), option)
                rules.default = option.strip()
        return rules


def _check_zone(value: str, option: str) -> None:
    if _numeric_offset(value) is not None:
        return
    try:
        _zoneinfo(value)
    except (KeyError, ValueError):
        raise ValueError(f"--tz {option}: {value!r} is neither an offset (+HH:MM) nor a time "
                         "zone name (Area/City)") from None


@lru_cache(maxsize=64)
def _zoneinfo(name: str):
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise KeyError(name) from exc


def _numeric_offset(text: str) -> int | None:
    m = _NUMERIC.match(text)
    if not m or int(m.group(2)) > 14 or int(m.group(3) or 0) >= 60:   # UTC-12 .. UTC+14
        return None
    minutes = int(m.group(2)) * 60 + int(m.group(3) or 0)
    return (-1 if m.group(1) == "-" else 1) * minutes * 60


def _zone_offset(value: str, local: datetime, abbr: str | None = None) -> int:
    """Seconds east of UTC of `value` (+HH:MM or an IANA zone) at the local time `local`; for
    a zone name, the side of a DST change whose abbreviation is `abbr`."""
    numeric = _numeric_offset(value)
    if numeric is not None:
        return numeric
    zone = _zoneinfo(value)
    candidates = [local.replace(tzinfo=zone, fold=fold) for fold in (0, 1)]
    chosen = next((c for c in candidates if abbr and c.tzname() == abbr), candidates[0])
    return _offset_s(chosen)


def resolve_zone(zone: str, local: datetime, rules: ZoneRules) -> int:
    """The UTC offset (seconds) a zone as written in a date line means; DateError if it is
    ambiguous or unknown and `rules` do not say."""
    key = zone.upper() if zone.isascii() else zone
    if key in rules.meanings:
        return _zone_offset(rules.meanings[key], local, zone)
    numeric = _numeric_offset(zone)
    if numeric is not None:
        return numeric
    if key in AMBIGUOUS:
        example = _EXAMPLE_ZONE[key]
        raise DateError(f"time zone {zone} is ambiguous ({AMBIGUOUS[key]}): say which with "
                        f"--tz {zone}=+HH:MM or --tz {zone}=AREA/CITY (e.g. {example})")
    if zone in ZONE_OFFSETS_MIN or key in ZONE_OFFSETS_MIN:
        return ZONE_OFFSETS_MIN.get(zone, ZONE_OFFSETS_MIN.get(key, 0)) * 60
    raise DateError(f"unknown time zone {zone!r}: say what it means with --tz {zone}=+HH:MM "
                    f"or --tz {zone}=AREA/CITY")


def _strip_marks(text: str) -> str:
    return text.strip().lstrip("#").strip()


def parse_date_line(text: str, rules: ZoneRules | None = None) -> LogDate | None:
    """The date a log line holds, None when it is no date line. DateError: a date whose zone
    cannot be told (the message says how to name it)."""
    rules = rules or ZoneRules()
    line = _strip_marks(text)
    if not line or len(line) > 120:
        return None
    if m := _EPOCH.match(line):           # date +%s: the instant is exact, the clock is not
        ts = float(m.group(1))
        if rules.default:
            return LogDate(ts, _default_offset(rules.default, ts), "epoch")
        return LogDate(ts, 0, "epoch")        # its hours count in UTC unless --tz says
    if _ISO.match(line):
        return _iso(line, rules)
    patterns = _patterns()
    for form in (_last_form[0], *patterns):
        pattern, entry = patterns[form]
        m = pattern.fullmatch(line)
        if m:
            _last_form[0] = form        # a log keeps one format: tried first next time
            return _from_match(m, form, entry, rules)
    return None


def _offset_s(aware: datetime) -> int:
    """The UTC offset of a datetime that has a zone, in seconds."""
    offset = aware.utcoffset()
    assert offset is not None
    return int(offset.total_seconds())


def _default_offset(zone: str, ts: float) -> int:
    numeric = _numeric_offset(zone)
    if numeric is not None:
        return numeric
    return _offset_s(datetime.fromtimestamp(ts, _zoneinfo(zone)))


def _iso(line: str, rules: ZoneRules) -> LogDate | None:
    head, _, zone = line.partition(" ") if line.count(" ") >= 2 else (line, "", "")
    if zone and re.fullmatch(r"[A-Za-z]{1,6}|[+-]\d{2}(?::?\d{2})?", zone.split()[-1]):
        # date '+%F %T %Z': "2015-02-15 08:00:01 JST"
        date_part, zone = line.rsplit(" ", 1)
        try:
            local = datetime.fromisoformat(date_part)
        except ValueError:
            return None
        if local.tzinfo is None:
            offset = resolve_zone(zone, local, rules)
            return _dated(local, offset, "iso-8601", zone)
    try:
        dt = datetime.fromisoformat(line.replace(",", ".", 1) if "," in line else line)
    except ValueError:
        return None
    if dt.tzinfo is not None:
        return LogDate(dt.timestamp(), _offset_s(dt), "iso-8601",
                       dt.strftime("%z"))
    return _zoneless(dt, "iso-8601", rules)


def _zoneless(local: datetime, form: str, rules: ZoneRules) -> LogDate:
    if rules.default:
        return _dated(local, _zone_offset(rules.default, local), form, None)
    return _dated(local, 0, form, None, "no time zone in the date: read as UTC (--tz ZONE "
                                       "says which)")


def _dated(local: datetime, offset: int, form: str, zone: str | None,
           note: str | None = None) -> LogDate:
    aware = local.replace(tzinfo=timezone(timedelta(seconds=offset)))
    return LogDate(aware.timestamp(), offset, form, zone, note)


# --------------------------------------------------------------------------- locale formats
_C = {"fmt": "%a %b %e %H:%M:%S %Z %Y",
      "abday": ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"],
      "day": ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"],
      "abmon": ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov",
                "Dec"],
      "mon": ["January", "February", "March", "April", "May", "June", "July", "August",
              "September", "October", "November", "December"],
      "am_pm": ["AM", "PM"]}
# the C locale's date, `date -R` (RFC 5322) and the same without the weekday
EXTRA_FORMS = {"C": _C, "rfc-5322": {**_C, "fmt": "%a, %d %b %Y %H:%M:%S %z"},
               "C-no-weekday": {**_C, "fmt": "%b %e %H:%M:%S %Z %Y"}}


@lru_cache(maxsize=1)
def _patterns() -> dict[str, tuple[re.Pattern, dict]]:
    forms = {**EXTRA_FORMS, **LOCALES}
    return {name: (_compile(entry), entry) for name, entry in forms.items()}


_last_form = ["C"]


def _names(*lists: list[str]) -> str:
    names = sorted({n.strip() for names in lists for n in names if n.strip()}, key=len,
                   reverse=True)
    return "(?:" + "|".join(re.escape(n) for n in names) + ")" if names else ""


def _compile(entry: dict) -> re.Pattern:
    fmt, out, i = entry["fmt"], [], 0
    months = {"b": ("abmon", "ab_alt_mon"), "h": ("abmon", "ab_alt_mon"),
              "B": ("mon", "alt_mon")}
    while i < len(fmt):
        c = fmt[i]
        if c == "%" and i + 1 < len(fmt):
            j = i + 1
            while j < len(fmt) - 1 and fmt[j] in "-_0^#":
                j += 1
            era = fmt[j] == "E"
            while j < len(fmt) - 1 and fmt[j] in "EO":
                j += 1
            conv = fmt[j]
            if conv in "aA":
                names = _names(entry["abday" if conv == "a" else "day"])
                out.append(names + "?" if names else "")
            elif conv in months:
                out.append(f"(?P<month_name>{_names(*(entry.get(k, []) for k in months[conv]))})")
            elif conv in "de":
                out.append(r"\s*(?P<day>\d{1,2})")
            elif conv == "m":
                out.append(r"\s*(?P<month>\d{1,2})")
            elif conv == "Y":
                out.append(r"(?P<era_year>\d{1,4})" if era else r"(?P<year>\d{4})")
            elif conv == "y":
                out.append(r"(?P<era_year>\d{1,4})" if era else r"(?P<year2>\d{2})")
            elif conv in "Hk":
                out.append(r"\s*(?P<hour>\d{1,2})")
            elif conv in "Il":
                out.append(r"\s*(?P<hour12>\d{1,2})")
            elif conv == "M":
                out.append(r"(?P<minute>\d{2})")
            elif conv == "S":
                out.append(r"(?P<second>\d{2})")
            elif conv in "pP":
                out.append(f"(?P<ampm>{_names(entry.get('am_pm', []))})")
            elif conv == "Z":
                out.append(r"(?P<zone>[A-Za-z]{1,6}|[+-]\d{2}(?::?\d{2})?)")
            elif conv == "z":
                out.append(r"(?P<offset>[+-]\d{2}:?\d{2})")
            elif conv == "%":
                out.append("%")
            else:
                out.append(r"\S*")
            i = j + 1
        elif c.isspace():
            while i < len(fmt) and fmt[i].isspace():
                i += 1
            out.append(r"\s*")
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out), re.IGNORECASE)


@cache
def _month_numbers(form: str) -> dict[str, int]:
    entry = {**EXTRA_FORMS, **LOCALES}[form]
    out: dict[str, int] = {}
    for key in ("abmon", "ab_alt_mon", "mon", "alt_mon"):
        for i, name in enumerate(entry.get(key, [])):
            out.setdefault(name.strip().casefold(), i + 1)
    return out


def _from_match(m: re.Match, form: str, entry: dict, rules: ZoneRules) -> LogDate | None:
    g = m.groupdict()
    if g.get("month_name"):
        month = _month_numbers(form).get(g["month_name"].casefold())
    else:
        month = int(g["month"]) if g.get("month") else None
    if g.get("year"):
        year = int(g["year"])
    elif g.get("era_year"):
        year = int(g["era_year"]) - entry.get("era_offset", 0)
    elif g.get("year2"):
        year = 2000 + int(g["year2"])
    else:
        return None
    hour: int | None
    if g.get("hour12") is not None:
        am_pm = [x.strip().casefold() for x in entry.get("am_pm", [])]
        if not all(am_pm) or len(am_pm) != 2:
            raise DateError(f"a 12-hour clock without AM/PM ({form}'s date format): the hour "
                            "cannot be told; log `LC_ALL=C date` or `date -Is` instead")
        hour = int(g["hour12"]) % 12
        if g.get("ampm") and len(am_pm) == 2 and g["ampm"].casefold() == am_pm[1]:
            hour += 12
    else:
        hour = int(g["hour"]) if g.get("hour") is not None else None
    if month is None or hour is None or g.get("day") is None:
        return None
    try:
        local = datetime(year, month, int(g["day"]), hour, int(g["minute"]), int(g["second"]))
    except (ValueError, TypeError):
        return None
    if g.get("offset"):
        offset = _numeric_offset(g["offset"])
        return _dated(local, offset or 0, form, g["offset"])
    if g.get("zone"):
        return _dated(local, resolve_zone(g["zone"], local, rules), form, g["zone"])
    return _zoneless(local, form, rules)
