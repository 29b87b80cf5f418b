"""Optional SigV4 checks of a bidirectional-stream request and of each request event's chunk signature.

An independent stdlib implementation of AWS Signature Version 4 as SageMaker applies it, so a local run catches
what AWS would reject: a request signed for the wrong region or service, with an unknown key or a wrong secret,
outside the 15-minute clock window, or an event stream whose chain of ``:chunk-signature`` values breaks
(each event is signed over the previous event's signature, seeded by the request's).

Only the checks are here (sans-I/O): :func:`verify_request` for the request headers, :class:`EventSignatureChain`
for the events. Failures raise :class:`SignatureRejected`, carrying the error type SageMaker answers with.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import parse_qsl, quote

ALGORITHM: Final = "AWS4-HMAC-SHA256"
EVENT_ALGORITHM: Final = "AWS4-HMAC-SHA256-PAYLOAD"
SERVICE: Final = "sagemaker"
TIMESTAMP_FORMAT: Final = "%Y%m%dT%H%M%SZ"
MAX_CLOCK_SKEW: Final = datetime.timedelta(minutes=15)
DEFAULT_ACCESS_KEY_ID: Final = "AKIDLOCALSAGEMAKER00"
DEFAULT_SECRET_ACCESS_KEY: Final = "local-sagemaker-front-end-dummy-secret"  # noqa: S105 - dummy, local only


@dataclass(frozen=True, slots=True)
class LocalCredentials:
    """The dummy key pair the front end accepts, and the region requests must be signed for."""

    access_key_id: str = DEFAULT_ACCESS_KEY_ID
    secret_access_key: str = DEFAULT_SECRET_ACCESS_KEY
    region: str = "us-east-1"


class SignatureRejected(Exception):  # noqa: N818 - named for what happened, like SageMaker's own errors
    """A signature check failed; ``error_type`` is SageMaker's (``x-amzn-errortype``), the message says why."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.message = message


@dataclass(frozen=True, slots=True)
class VerifiedRequest:
    """A request whose signature verified: the seed of its event chain and its signing date and scope."""

    seed_signature: str
    signing_key: bytes
    region: str


def _hmac(key: bytes, message: str | bytes) -> bytes:
    data = message.encode("utf-8") if isinstance(message, str) else message
    return hmac.new(key, data, hashlib.sha256).digest()


def signing_key(secret_access_key: str, day: str, region: str, service: str = SERVICE) -> bytes:
    """SigV4's derived key: HMAC chain over the day (``YYYYMMDD``), region, service and ``aws4_request``."""
    key = _hmac(f"AWS4{secret_access_key}".encode(), day)
    key = _hmac(key, region)
    key = _hmac(key, service)
    return _hmac(key, "aws4_request")


def _parse_authorization(value: str) -> dict[str, str]:
    algorithm, _, rest = value.partition(" ")
    if algorithm != ALGORITHM:
        raise SignatureRejected("IncompleteSignatureException", f"the Authorization header must use {ALGORITHM}")
    fields: dict[str, str] = {}
    for item in rest.split(","):
        name, sep, field_value = item.strip().partition("=")
        if sep:
            fields[name] = field_value
    for required in ("Credential", "SignedHeaders", "Signature"):
        if required not in fields:
            raise SignatureRejected("IncompleteSignatureException", f"the Authorization header lacks {required}=")
    return fields


def _canonical_query(query: str) -> str:
    parsed = parse_qsl(query, keep_blank_values=True)
    pairs = sorted((quote(name, safe="-_.~"), quote(value, safe="-_.~")) for name, value in parsed)
    return "&".join(f"{name}={value}" for name, value in pairs)


def verify_request(
    *,
    method: str,
    path: str,
    headers: Mapping[str, str],
    credentials: LocalCredentials,
    now: datetime.datetime | None = None,
) -> VerifiedRequest:
    """Check the SigV4 ``Authorization`` of a request (``headers``: lower-case names; ``host`` or ``:authority``).

    Raises :class:`SignatureRejected` naming what to fix; returns the chain seed for the request's events."""
    authorization = headers.get("authorization")
    if authorization is None:
        raise SignatureRejected("MissingAuthenticationTokenException", "the request is not signed (no Authorization)")
    fields = _parse_authorization(authorization)
    key_id, _, scope = fields["Credential"].partition("/")
    day, region, service, terminator = ([*scope.split("/"), "", "", "", ""])[:4]
    if key_id != credentials.access_key_id:
        raise SignatureRejected(
            "UnrecognizedClientException",
            f"the access key {key_id!r} is not the front end's local key; sign with {credentials.access_key_id!r}",
        )
    if service != SERVICE or terminator != "aws4_request":
        raise SignatureRejected(
            "InvalidSignatureException", f"the credential scope must name service {SERVICE!r}, not {service!r}"
        )
    if region != credentials.region:
        raise SignatureRejected(
            "InvalidSignatureException",
            f"the request is signed for region {region!r}; this endpoint is in {credentials.region!r}",
        )
    amz_date = headers.get("x-amz-date", "")
    try:
        signed_at = datetime.datetime.strptime(amz_date, TIMESTAMP_FORMAT).replace(tzinfo=datetime.UTC)
    except ValueError as exc:
        raise SignatureRejected("IncompleteSignatureException", f"X-Amz-Date {amz_date!r} is not valid") from exc
    current = now or datetime.datetime.now(datetime.UTC)
    if abs(current - signed_at) > MAX_CLOCK_SKEW or not amz_date.startswith(day):
        raise SignatureRejected("InvalidSignatureException", f"Signature expired: {amz_date} is not within 15 minutes")
    with_host = dict(headers)
    if "host" not in with_host and ":authority" in headers:
        with_host["host"] = headers[":authority"]
    signed_names = fields["SignedHeaders"].split(";")
    missing = [name for name in signed_names if name not in with_host]
    if missing:
        raise SignatureRejected("InvalidSignatureException", f"signed headers are missing: {', '.join(missing)}")
    route, _, query = path.partition("?")
    canonical_headers = "".join(f"{name}:{' '.join(with_host[name].split())}\n" for name in signed_names)
    canonical_request = "\n".join(
        [
            method.upper(),
            quote(route, safe="/"),
            _canonical_query(query),
            canonical_headers,
            fields["SignedHeaders"],
            headers.get("x-amz-content-sha256", hashlib.sha256(b"").hexdigest()),
        ]
    )
    string_to_sign = "\n".join(
        [ALGORITHM, amz_date, scope, hashlib.sha256(canonical_request.encode("utf-8")).hexdigest()]
    )
    key = signing_key(credentials.secret_access_key, day, region)
    expected = hmac.new(key, string_to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, fields["Signature"]):
        raise SignatureRejected(
            "InvalidSignatureException",
            "The request signature we calculated does not match the signature you provided; check the secret key "
            "and the signing method",
        )
    return VerifiedRequest(seed_signature=expected, signing_key=key, region=region)


def encoded_date_header(date: datetime.datetime) -> bytes:
    """The ``:date`` header as the event stream encodes it (type 8: milliseconds since the epoch, int64)."""
    name = b":date"
    millis = int(date.timestamp() * 1000)
    return bytes([len(name)]) + name + bytes([8]) + struct.pack("!q", millis)


class EventSignatureChain:
    """Verifies the ``:chunk-signature`` of each request event in order, starting from the request signature."""

    def __init__(self, request: VerifiedRequest, secret_access_key: str) -> None:
        self._prior = request.seed_signature
        self._region = request.region
        self._secret = secret_access_key
        self.verified = 0

    def verify(self, date: datetime.datetime | None, signature: bytes | None, payload: bytes) -> None:
        """Check one envelope (its ``:date``, ``:chunk-signature`` and payload); raises SignatureRejected."""
        if date is None or signature is None:
            raise SignatureRejected(
                "InvalidSignatureException", f"event {self.verified} lacks :date or :chunk-signature"
            )
        timestamp = date.astimezone(datetime.UTC).strftime(TIMESTAMP_FORMAT)
        scope = f"{timestamp[:8]}/{self._region}/{SERVICE}/aws4_request"
        string_to_sign = "\n".join(
            [
                EVENT_ALGORITHM,
                timestamp,
                scope,
                self._prior,
                hashlib.sha256(encoded_date_header(date)).hexdigest(),
                hashlib.sha256(payload).hexdigest(),
            ]
        )
        key = signing_key(self._secret, timestamp[:8], self._region)
        expected = _hmac(key, string_to_sign)
        if not hmac.compare_digest(expected, signature):
            raise SignatureRejected(
                "InvalidSignatureException",
                f"the chunk signature of event {self.verified} does not match (events must be signed in order, "
                "each over the previous signature)",
            )
        self._prior = expected.hex()
        self.verified += 1


__all__ = [
    "DEFAULT_ACCESS_KEY_ID",
    "DEFAULT_SECRET_ACCESS_KEY",
    "EventSignatureChain",
    "LocalCredentials",
    "SignatureRejected",
    "VerifiedRequest",
    "encoded_date_header",
    "signing_key",
    "verify_request",
]
