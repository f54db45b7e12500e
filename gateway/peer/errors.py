"""The Reef protocol's exception tree.

    ReefgateError
    └── PeerError               a Reef value was refused; ``code`` and ``str(e)`` as the reference
        ├── InvalidInput        a caller's input to a sign/format/parse function (reference: Error)
        ├── AuditCryptoError    an encrypted audit field did not decrypt
        └── EnvelopeError       seal()/open() refusals, one class per reference error code
            ├── MalformedError      malformed
            ├── TooLargeError       too_large
            ├── BadSignatureError   bad_signature
            ├── NotPinnedError      not_pinned
            ├── WrongRecipientError wrong_recipient
            ├── ExpiredError        expired
            └── ReplayedError       replayed

Class names are the reference's JS error names, so a vector's ``error.name``
compares directly with ``type(exc).__name__``. Messages are the reference's
exact strings; by default a refusal's message is its code.
"""

from __future__ import annotations

from typing import ClassVar

from gateway.errors import ReefgateError


class PeerError(ReefgateError):
    code: ClassVar[str] = "peer_error"

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or self.code)
        self.message = message or self.code


class InvalidInput(PeerError, ValueError):
    code = "invalid_input"


class AuditCryptoError(PeerError):
    code = "audit_decrypt"


class EnvelopeError(PeerError):
    pass


class MalformedError(EnvelopeError):
    code = "malformed"


class TooLargeError(EnvelopeError):
    code = "too_large"


class BadSignatureError(EnvelopeError):
    code = "bad_signature"


class NotPinnedError(EnvelopeError):
    code = "not_pinned"


class WrongRecipientError(EnvelopeError):
    code = "wrong_recipient"


class ExpiredError(EnvelopeError):
    code = "expired"


class ReplayedError(EnvelopeError):
    code = "replayed"
