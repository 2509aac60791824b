"""glibc's own locale data, compiled on demand (localedef into a private directory, used through
LOCPATH: nothing is installed), for the date lines `date` prints in each locale.

- compile_locales(names, dest): localedef of each NAME's dates into dest/NAME.UTF-8, in parallel:
  glibc's own LC_TIME of NAME (its source, verbatim) and POSIX's and C's other categories.
- date_lines(locale, tz, timestamps, locpath, args): what `LC_ALL=locale TZ=tz date -d @T ARGS`
  prints, one `date -f` run for all timestamps.
- `python tests/locale_data.py > inspector/record/locale_dates.py` regenerates Inspector's table of
  each locale's date format and names (test_ioping_dates checks the table still equals glibc's).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

# The locales whose `date` output Inspector reads: the common server locales, and a few with
# other scripts, 12-hour clocks, era years and numeric months.
LOCALES = ["en_US", "en_GB", "en_AU", "en_CA", "en_IN", "de_DE", "fr_FR", "es_ES", "it_IT",
           "pt_BR", "pt_PT", "nl_NL", "sv_SE", "da_DK", "nb_NO", "fi_FI", "pl_PL", "cs_CZ",
           "sk_SK", "hu_HU", "ro_RO", "hr_HR", "bg_BG", "ru_RU", "uk_UA", "el_GR", "tr_TR",
           "he_IL", "ar_SA", "ja_JP", "ko_KR", "zh_CN", "zh_TW", "th_TH", "vi_VN", "id_ID"]
KEYWORDS = ("date_fmt", "d_t_fmt", "d_fmt", "t_fmt", "t_fmt_ampm", "abday", "day", "abmon",
            "mon", "ab_alt_mon", "alt_mon", "am_pm")


# what the tests generate logs in (a quick subset of LOCALES: localedef takes ~1 s each)
TEST_LOCALES = ["ja_JP", "de_DE", "fr_FR", "zh_CN", "ko_KR", "en_US", "fi_FI", "ru_RU",
                "cs_CZ", "hu_HU", "el_GR", "th_TH", "uk_UA", "id_ID"]


@pytest.fixture(scope="session")
def glibc_locales(request, tmp_path_factory) -> Path:
    """A LOCPATH with TEST_LOCALES' dates compiled by this glibc's localedef (the `locales`
    package's sources), kept in pytest's cache between runs (in a session temp dir under
    `-p no:cacheprovider`)."""
    if not shutil.which("localedef") or not Path("/usr/share/i18n/locales/ja_JP").exists():
        pytest.fail("glibc's locale sources are needed (Debian: apt-get install locales)")
    libc = subprocess.run(["ldd", "--version"], capture_output=True, text=True).stdout
    key = re.sub(r"\W+", "_", libc.splitlines()[0])[-40:]
    cache = getattr(request.config, "cache", None)
    base = Path(cache.mkdir("glibc-locales")) if cache else tmp_path_factory.mktemp("glibc-locales")
    dest = base / f"{key}-dates"
    compile_locales(TEST_LOCALES, dest)
    return dest


SOURCES = Path("/usr/share/i18n/locales")
# a locale's categories but LC_TIME, in a source compiled for its dates: POSIX's where POSIX
# has the category, C's (which copies nothing) where it has not
POSIX_CATEGORIES = ("LC_CTYPE", "LC_COLLATE", "LC_MONETARY", "LC_NUMERIC", "LC_MESSAGES")
C_CATEGORIES = ("LC_PAPER", "LC_NAME", "LC_ADDRESS", "LC_TELEPHONE", "LC_MEASUREMENT",
                "LC_IDENTIFICATION")
SOURCE_SYNTAX = "comment_char %\nescape_char /\n"


def _section(text: str, category: str) -> str | None:
    found = re.search(rf"^{category}\n.*?^END {category}\n", text, re.DOTALL | re.MULTILINE)
    return found.group(0) if found else None


def dates_source(name: str) -> str | None:
    """A locale source holding NAME's own LC_TIME, verbatim, and POSIX's and C's other
    categories: `date` and `locale -k` of LC_TIME read only LC_TIME and the charset, and its
    compiled LC_TIME is byte for byte the whole locale's (compared for de_DE, en_US, fi_FI,
    ja_JP and th_TH), for 0.4 s of CPU where the whole locale's collation and character classes
    took 1.1-1.7 s. None where NAME's LC_TIME copies another's or its syntax differs: compiled
    whole."""
    text = (SOURCES / name).read_text(encoding="utf-8")
    own = _section(text, "LC_TIME")
    syntax = "".join(line + "\n" for line in text.splitlines()
                     if line.startswith(("comment_char", "escape_char")))
    if own is None or syntax != SOURCE_SYNTAX or re.search(r"^\s*copy\b", own, re.MULTILINE):
        return None
    c_text = (SOURCES / "C").read_text(encoding="utf-8")
    others = [f'{category}\ncopy "POSIX"\nEND {category}\n' for category in POSIX_CATEGORIES]
    for category in C_CATEGORIES:
        section = _section(c_text, category)
        if section is None or "copy" in section:
            return None
        others.append(section)
    return SOURCE_SYNTAX + own + "".join(others)


def compile_locales(names: list[str], dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)

    def one(name: str) -> None:
        final = dest / f"{name}.UTF-8"
        if final.exists():
            return
        # built aside and renamed into place: test workers share the cache, and one must never
        # read a locale another is half way through writing
        work = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=dest))
        try:
            source = dates_source(name)
            if source is not None:
                (work / "source").write_text(source, encoding="utf-8")
            proc = subprocess.run(["localedef", "-i", name if source is None else str(work / "source"),
                                   "-f", "UTF-8", str(work / "out")],
                                  capture_output=True, text=True)
            if not (work / "out").exists():
                raise RuntimeError(f"localedef {name}: {proc.stderr.strip()[-300:]}")
            try:
                os.rename(work / "out", final)
            except OSError:
                if not final.exists():      # else another worker built it first
                    raise
        finally:
            shutil.rmtree(work, ignore_errors=True)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        list(pool.map(one, names))


def _env(locale: str, locpath: Path | None, tz: str | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LC_")}
    env["LC_ALL"] = "C" if locale == "C" else f"{locale}.UTF-8"
    if locpath is not None:
        env["LOCPATH"] = str(locpath)
    if tz is not None:
        env["TZ"] = tz
    return env


def date_lines(locale: str, tz: str, timestamps: list[int], locpath: Path | None,
               args: tuple[str, ...] = ()) -> list[str]:
    proc = subprocess.run(["date", "-f", "-", *args],
                          input="".join(f"@{t}\n" for t in timestamps),
                          capture_output=True, text=True, check=True,
                          env=_env(locale, locpath, tz))
    lines = proc.stdout.splitlines()
    assert len(lines) == len(timestamps), proc.stderr
    return lines


def lc_time(locale: str, locpath: Path) -> dict:
    proc = subprocess.run(["locale", "-k", *KEYWORDS], capture_output=True, text=True,
                          check=True, env=_env(locale, locpath))
    out: dict = {}
    for line in proc.stdout.splitlines():
        key, _, value = line.partition("=")
        value = value.strip('"')
        out[key] = value.split(";") if key in ("abday", "day", "abmon", "mon", "ab_alt_mon",
                                               "alt_mon", "am_pm") else value
    return out


def expand(fmt: str, data: dict) -> str:
    """date_fmt with %c %x %X %r %T %R %D %F spelled out, as strftime would."""
    parts = {"%c": data["d_t_fmt"], "%x": data["d_fmt"], "%X": data["t_fmt"],
             "%r": data["t_fmt_ampm"] or "%I:%M:%S %p", "%T": "%H:%M:%S", "%R": "%H:%M",
             "%D": "%m/%d/%y", "%F": "%Y-%m-%d"}
    for _ in range(3):
        for code, text in parts.items():
            fmt = fmt.replace(code, text)
    return fmt


def era_offset(locale: str, locpath: Path) -> int:
    """Years the locale's %Ey is ahead of the Gregorian year (Thai: 543)."""
    proc = subprocess.run(["date", "-u", "-d", "2015-06-01", "+%Ey"], capture_output=True,
                          text=True, check=True, env=_env(locale, locpath))
    return int(proc.stdout.strip()) - 2015


def table(locpath: Path) -> dict:
    out = {}
    for name in LOCALES:
        data = lc_time(name, locpath)
        fmt = expand(data["date_fmt"], data)
        entry: dict[str, str | int | list[str]] = {"fmt": fmt, **{k: [v.strip() for v in data[k]] for k in
                                ("abday", "day", "abmon", "mon", "ab_alt_mon", "alt_mon",
                                 "am_pm")}}
        if "%E" in fmt:
            entry["era_offset"] = era_offset(name, locpath)
        out[name] = entry
    return out


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        compile_locales(LOCALES, Path(tmp))
        data = table(Path(tmp))
    libc = subprocess.run(["ldd", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    sys.stdout.write(
        '"""Each locale\'s `date` format and names, from glibc\'s locale data: what a cron job\'s\n'
        "bare `date` line looks like on a host in that locale (inspector.record.log_dates reads them).\n\n"
        f"Generated by `python tests/locale_data.py > inspector/record/locale_dates.py` ({libc});\n"
        'do not edit by hand."""\n\n'
        "LOCALES: dict[str, dict] = {\n")
    for name, entry in data.items():
        sys.stdout.write(f"    {name!r}: {{\n")
        for key, value in entry.items():
            sys.stdout.write(f"        {key!r}: {value!r},\n")
        sys.stdout.write("    },\n")
    sys.stdout.write("}\n")


if __name__ == "__main__":
    main()
