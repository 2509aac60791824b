"""Secrets out of what a capture records: the kernel command line can carry credentials
(rd.iscsi.password=, an installer's inst.ks=http://user:pw@host/, an init's --api-token X).

A parameter is redacted by rule, not by a list of known names: when a word of its key (split at
`.`, `_`, `-`) names a secret: *password, *passwd, *passphrase, *passcode, *secret, *token,
*credential(s), *privkey, *otp (totp, hotp), *jwt, psk, cookie, bearer anywhere; *key, keys,
*auth, *pw, *pwd, *pass, cred(s), pin, pincode as the last word (rootpw=, luks.key=, pin=).
Words that only contain one are kept: `iommu.passthrough`, `libnvdimm.key_revalidate`,
`spec_store_bypass_disable`, `vconsole.keymap`, `usbcore.authorized_default`,
`kvm.mmu_lock_spinners` are settings an operator needs to read. A URL's userinfo is redacted
wherever it stands (`scheme://user:pw@`), and so is the `scheme:user:pw@host` form dracut's
netroot=iscsi: and nfs: take. The value becomes `<redacted>`; the key stays, so a reader sees
that a secret was there and where.
"""
from __future__ import annotations

import re

REDACTED = "<redacted>"

# Words that name a secret wherever they stand in a key (ip.secret, api_token_v2)...
_SECRET_WORD = re.compile(
    r".*(?:passw(?:or)?d|passphrase|passcode|secret|token|credentials?|privkey|otp|jwt)"
    r"|psk|cookie|bearer", re.IGNORECASE)
# ... and words that do only as the last one: luks.key and pin=1234 hold one,
# libnvdimm.key_revalidate and a pin_policy are settings about one
_SECRET_LAST_WORD = re.compile(
    r".*(?:key|auth|pwd?)|(?!.*bypass$).*pass|keys|creds?|pin|pincode", re.IGNORECASE)
# one parameter as the kernel splits them: quotes protect spaces (lib/cmdline.c next_arg)
_PARAM = re.compile(r'(?:[^\s"]|"[^"]*"?)+')
_USERINFO = re.compile(r'(?<=://)[^/\s@"]*:[^/\s@"]*@')
# scheme:user:password@host without the slashes (nfs:, iscsi:user:pw[:ruser:rpw]@); the scheme
# and the userinfo hold no ',' or '(' so that mtdparts=chip:256k(boot),64k@0x40000 is no URL
_SCHEME_USERINFO = re.compile(r'((?:^|(?<==))[a-z][a-z0-9+.\-]*:)[^/@\s:,()"=]*:[^/@\s,()"=]*@',
                              re.IGNORECASE)


def secret_key(key: str) -> bool:
    words = [word for word in re.split(r"[._\-]+", key) if word]
    return bool(words) and (any(_SECRET_WORD.fullmatch(word) for word in words)
                            or _SECRET_LAST_WORD.fullmatch(words[-1]) is not None)


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
            if not count:
                replacement, count = _SCHEME_USERINFO.subn(rf"\1{REDACTED}@", token)
            if count:
                redacted.append(f"{key} (user:password@ in a URL)" if eq else "user:password@")
        secret_flag = plain if (not eq and plain.startswith("-")
                                and secret_key(plain.lstrip("-"))) else ""
        out.append(text[last:match.start()])
        out.append(replacement)
        last = match.end()
    out.append(text[last:])
    return "".join(out), redacted
