"""Text on stdout and stderr in whatever charset the locale gives them.

Python encodes stdout in the locale's charset and raises UnicodeEncodeError for a character the
charset lacks: under ja_JP.eucJP or de_DE.ISO-8859-1 one "·" or "…" ended a command after part
of its output went out (and so under C with PYTHONUTF8=0: ASCII). Every command prints in any
locale instead, with "?" for what the charset cannot encode. Bytes that came in undecodable
(a file name, under Python's surrogateescape) still go out as the bytes they were. JSON is
unaffected: it is written as ASCII with \\u escapes. stderr never raised (backslashreplace),
but the TUI draws through it, where "\\u256d" for one box corner took six cells and broke
every line: one "?" takes one."""
from __future__ import annotations

import codecs
import io
import sys

ERRORS = "inspector-replace"


def _replace(exc: UnicodeError) -> tuple[bytes, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    out = bytearray()
    for char in exc.object[exc.start:exc.end]:
        code = ord(char)
        out += bytes([code - 0xDC00]) if 0xDC80 <= code <= 0xDCFF else b"?"
    return bytes(out), exc.end


codecs.register_error(ERRORS, _replace)


def replace_unencodable() -> None:
    """stdout and stderr write what their charset lacks as "?" instead of raising."""
    for stream in (sys.stdout, sys.stderr):
        # a stream replaced by a caller (a StringIO in tests, a pager) is left as it is
        if isinstance(stream, io.TextIOWrapper) and \
                stream.errors in ("strict", "surrogateescape", "backslashreplace"):
            stream.reconfigure(errors=ERRORS)
