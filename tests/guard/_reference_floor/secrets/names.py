"""Key names: whether a name says its value is a password, a secret or metadata."""

from __future__ import annotations

import functools
import re

from tests.guard._reference_floor.secrets.common import _A, _words

# ---------------------------------------------------------------------------
# Key names: classification
# ---------------------------------------------------------------------------

_SEG_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", _A)

# Name segments meaning "this value identifies, locates or describes something".
_NEG_SEGMENTS = _words(
    """
    id ids uuid guid hash hashed sha sha1 sha256 sha512 md5 digest checksum integrity etag
    version rev revision commit public pub url uri href src path file filename image icon
    name title class type kind sum crc fingerprint thumbprint cert certificate modulus
    nonce salt signature sig data content body payload blob message msg text label format
    pattern regex prefix suffix length len size count field header column placeholder
    description desc example sample test tests mock dummy fake ref arn store vault manager
    provider template env var variable endpoint location link list playlist key keys
    address addr host domain email user username login policy mode algorithm alg algo
    cipher encoding index idx ttl timeout expiry expires date time timestamp created
    updated chars charset alphabet
    """
)
# Last segments that turn a secret-ish name into metadata about the secret.
_NEG_LAST = _NEG_SEGMENTS - _words("key login user username sig signature data") | _words(
    """
        hint question prompt input form box button reset strength min max limit rotation
        validator validation required enabled enable flag bits source mount volume
        generator engine backend dir directory scope scopes params param option options
        config setting settings attr attribute property prop props error errors span
        match matches confirm confirmation changed change expired expiration lifetime
        usage types tokens secrets passwords counter cache callback handler fn func
        function method obj object struct request response req resp res result status
        state regexp re spec schema model table view widget component pane panel modal
        dialog page route router
        """
)
_DIGEST_WORDS = _words("sha sha1 sha256 sha512 md5 hash hashed digest checksum fingerprint")
# With the misspellings and abbreviations people type: pswd, paswd, passw, pasword
# (the keyword search reads "pass", "pw", "pswd" and "pasw").
_PW_WORDS = (
    "password", "passwd", "passphrase", "passcode", "passwort", "contrasena",
    "pswd", "paswd", "passw", "pasword", "passwrd",
)  # fmt: skip
_NOT_PW = _words(
    """
    bypass compass surpass overpass underpass trespass encompass impass lowpass highpass
    bandpass allpass multipass onepass firstpass subpass
    """
)
_STRONG_SUFFIXES = (
    "secret", "token", "apikey", "secretkey", "accesskey", "privatekey", "authkey",
    "credential", "credentials",
)  # fmt: skip
# Tokens that are protocol counters or idempotency ids, not credentials.
_NOT_SECRET_TOKEN = _words(
    """
    max min num n total input output completion prompt next page continuation
    cancellation csrf xsrf sync change client idempotency request task upload resume
    pagination retry dedup form curr current last first prev start end stop pad unk
    bos eos sep cls mask special lock action lifecycle product copy verification lease
    transaction batch job execution workflow operation work unit share update sequence
    starting forward backward export import
    """
)
_PAGING_WORDS = _words("next page continuation pagination sequence forward backward starting")
_VALUE_QUALIFIERS = _words(
    """
    value val str string plain plaintext clear cleartext raw secure enc encoded b64 base64
    hex prod production dev development stage staging local old new current tmp temp
    default db admin root user base v1 v2 v3 0 1 2 3 4 5 6 7 8 9 key secret token
    """
)
_KEY_STRONG_QUALIFIERS = _words(
    """
    api secret access private auth master encryption signing account shared app
    application service license client consumer session webhook hmac crypto aes jwt
    admin root bot deploy subscription integration management write read ingest
    """
)
# Qualifiers of "key" that name lookup keys, not credentials.
_KEY_LOOKUP_QUALIFIERS = _words(
    """
    idempotency cache sort partition primary foreign object row range hash dedup dedupe
    lookup index map dict group routing shard cursor state storage s3 bucket file i18n
    translation message event trace correlation unique natural composite sequence schema
    registry config setting cluster redis query search filter order column field entity
    component react list item node child parent element public pub ssh gpg pgp host known
    sorting data meta metadata label attr attribute property prop name dictionary local
    json yaml env var param arg option menu shortcut hot hotkey keyboard press pressed up
    down modifier secondary surrogate candidate blob kms cmk pk fk memo store
    """
)

# Name classes; the value test gets stricter as the name gets less specific.
_PW, _STRONG, _WEAK, _BARE_PW = 1, 2, 3, 4
_CLASS_KIND = {
    _PW: "password_assignment",
    _BARE_PW: "password_assignment",
    _STRONG: "secret_assignment",
    _WEAK: "high_entropy_token",
}
_PUBLIC_WORDS = _words("public pub publishable")
_SETTER_PREFIXES = _words("set with use")
_SETTER_TARGETS = _words("password passwd passphrase pwd secret token apikey")


def _is_setter(name: str) -> bool:
    """secret("..."), setPassword("..."), withToken("...")"""
    segs = _segments(name.rsplit(".", 1)[-1])
    if segs and segs[0] in _SETTER_PREFIXES:
        segs = segs[1:]
    return segs in (["api", "key"], ["client", "secret"]) or (
        len(segs) == 1 and segs[0] in _SETTER_TARGETS
    )


def _segments(name: str) -> list[str]:
    return [s.lower() for s in _SEG_RE.findall(name)]


@functools.lru_cache(maxsize=4096)
def _classify(name: str) -> int:
    segs = _segments(name)
    if not segs or segs[-1] in _NEG_LAST or not _DIGEST_WORDS.isdisjoint(segs):
        return 0
    if not _PUBLIC_WORDS.isdisjoint(segs):
        return 0
    cls = 0
    for i, s in enumerate(segs):
        prev = segs[i - 1] if i else ""
        # Words after the keyword must qualify the value ("password_secure"),
        # not name something else ("password_manager", "pass_through").
        tail_ok = _VALUE_QUALIFIERS.issuperset(segs[i + 1 :])
        if s.endswith(_PW_WORDS) or (s in ("pass", "pw", "pwd") and i == len(segs) - 1):
            if tail_ok:
                return _BARE_PW if len(segs) == 1 and s in ("pass", "pw", "pwd") else _PW
            continue
        if s.endswith("pass") and len(s) <= 8 and s not in _NOT_PW and i == len(segs) - 1:
            return _PW  # db_pass, f5pass
        if s.endswith(_STRONG_SUFFIXES):
            if tail_ok and not (
                s == "token"
                and (prev in _NOT_SECRET_TOKEN or not _PAGING_WORDS.isdisjoint(segs[:i]))
            ):
                cls = _STRONG
        elif s == "key":
            if prev in _KEY_STRONG_QUALIFIERS:
                cls = _STRONG
            elif prev not in _KEY_LOOKUP_QUALIFIERS and cls == 0:
                cls = _WEAK
        elif s == "authorization" and tail_ok:
            cls = _STRONG
        elif s in ("auth", "login", "cred", "creds", "bearer") and cls == 0:
            cls = _WEAK
    return cls
