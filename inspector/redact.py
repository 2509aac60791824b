"""Secrets out of what a capture records: the kernel command line can carry credentials
(rd.iscsi.password=, an installer's inst.ks=http://user:pw@host/, an init's --api-token X).

A parameter is redacted when a word of its key (split at `.`, `_`, `-`) names a secret: password,
passwd, passphrase, pass, pwd, *pw, secret, token, *key, keys, apikey, credential(s), cred(s),
*auth, psk, cookie, privkey. Words that only contain one are kept: `iommu.passthrough`,
`spec_store_bypass_disable`, `vconsole.keymap`, `usbcore.authorized_default` are settings an
operator needs to read. The value becomes `<redacted>`; the key stays, so a reader sees that a
secret was there and where.
"""
from __future__ import annotations

import re

REDACTED = "<redacted>"

_SECRET_WORD = re.compile(
    r".*(?:passw(?:or)?d|passphrase|secret|token|credentials?|privkey|key|auth|pw)"
    r"|pass|pwd|keys|creds?|psk|cookie", re.IGNORECASE)
# one parameter as the kernel splits them: quotes protect spaces (lib/cmdline.c next_arg)
_PARAM = re.compile(r'(?:[^\s"]|"[^"]*"?)+')
_USERINFO = re.compile(r'(?<=://)[^/\s@"]*:[^/\s@"]*@')


def secret_key(key: str) -> bool:
    return any(_SECRET_WORD.fullmatch(word) for word in re.split(r"[._\-]+", key) if word)


def redact_cmdline(text: str) -> tuple[str, list[str]]:
    """`text` with secret values replaced, and what was redacted (keys, flags, URLs)."""
    redacted: list[str] = []
    out: list[str] = []
    last = 0
    secret_flag = ""           # `--password VALUE`: the flag whose value comes next
    for match in _PARAM.finditer(text):
        token = match.group(0)
        plain = token.replace('"', "")
        key, eq, value = plain.partition("=")
        inner, inner_eq, _ = value.partition("=")      # systemd.setenv=DB_PASSWORD=...
        replacement = token
        if secret_flag and not plain.startswith("-"):
            replacement = REDACTED
            redacted.append(secret_flag)
        elif eq and secret_key(key):
            replacement = f"{key}={REDACTED}"
            redacted.append(key)
        elif inner_eq and secret_key(inner):
            replacement = f"{key}={inner}={REDACTED}"
            redacted.append(f"{key}={inner}")
        else:
            replacement, count = _USERINFO.subn(f"{REDACTED}@", token)
            if count:
                redacted.append(f"{key} (user:password@ in a URL)" if eq else "user:password@")
        secret_flag = plain if (not eq and plain.startswith("-")
                                and secret_key(plain.lstrip("-"))) else ""
        out.append(text[last:match.start()])
        out.append(replacement)
        last = match.end()
    out.append(text[last:])
    return "".join(out), redacted
