"""Verifying the JWT a client presents on ``$connect`` (Cognito id or access tokens, or the local dev issuer's).

A token is accepted only if its RS256 signature verifies against a key from the issuer's JWKS (fetched by
PyJWT's :class:`jwt.PyJWKClient`, cached), its ``iss`` is the configured issuer, it has not expired, its
``token_use`` is ``id`` or ``access``, and it was issued to one of our app clients (``aud`` for id tokens,
``client_id`` for access tokens). Anything else raises a :class:`TokenRejectedError` subclass whose
``status`` is the HTTP status API Gateway answers (401: no usable credentials; 403: valid credentials for
something else). Tokens are never logged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jwt

ALGORITHMS = ("RS256",)
"""Cognito signs with RS256; no other algorithm (and never ``none``) is accepted."""
JWKS_CACHE_S = 300.0
JWKS_TIMEOUT_S = 5.0
LEEWAY_S = 5
"""Clock skew tolerated on ``exp``/``iat``/``nbf``."""
TOKEN_USE_ID = "id"  # noqa: S105 - a claim value, not a secret
TOKEN_USE_ACCESS = "access"  # noqa: S105


class TokenRejectedError(Exception):
    """The token does not admit a connection. ``status`` is 401 (unauthenticated) or 403 (forbidden)."""

    status = 401

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class MissingTokenError(TokenRejectedError):
    """No token: connect with ``?token=<JWT>`` in the query string."""


class InvalidTokenError(TokenRejectedError):
    """Malformed, unsigned, wrongly signed, expired or not yet valid."""


class ForbiddenTokenError(TokenRejectedError):
    """A genuine token that is not meant for this API (issuer, audience or ``token_use``)."""

    status = 403


@dataclass(frozen=True, slots=True)
class Identity:
    """Who a verified token names."""

    user_id: str
    """The ``sub`` claim: stable for the user across tokens and devices."""
    token_use: str
    client_id: str


class TokenVerifier:
    """Verifies tokens of one issuer for a set of app clients. Thread-safe; keep one per process."""

    def __init__(self, *, issuer: str, audiences: Sequence[str], jwks_client: jwt.PyJWKClient) -> None:
        if not issuer or not audiences:
            raise ValueError("a TokenVerifier needs an issuer and at least one audience (JWT_ISSUER, JWT_AUDIENCE)")
        self._issuer = issuer
        self._audiences = frozenset(audiences)
        self._jwks = jwks_client

    @classmethod
    def for_jwks_url(cls, *, issuer: str, audiences: Sequence[str], jwks_url: str) -> TokenVerifier:
        """A verifier fetching signing keys from ``jwks_url`` (cached for :data:`JWKS_CACHE_S`)."""
        client = jwt.PyJWKClient(
            jwks_url, cache_keys=True, cache_jwk_set=True, lifespan=JWKS_CACHE_S, timeout=JWKS_TIMEOUT_S
        )
        return cls(issuer=issuer, audiences=audiences, jwks_client=client)

    def verify(self, token: str | None) -> Identity:
        """The identity a token proves; raises a :class:`TokenRejectedError` subclass otherwise."""
        if not token:
            raise MissingTokenError("no token: connect with ?token=<JWT> in the query string")
        claims = self._verified_claims(token)
        if claims.get("iss") != self._issuer:
            raise ForbiddenTokenError("the token comes from another issuer")
        token_use = claims.get("token_use")
        if token_use == TOKEN_USE_ID:
            audience = claims.get("aud")
            client_ids = {audience} if isinstance(audience, str) else set(audience or ())
        elif token_use == TOKEN_USE_ACCESS:
            client_ids = {claims.get("client_id")}
        else:
            raise ForbiddenTokenError("token_use must be 'id' or 'access'")
        allowed = client_ids & self._audiences
        if not allowed:
            raise ForbiddenTokenError("the token was issued to another app client")
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            raise InvalidTokenError("the token names no subject ('sub')")
        return Identity(user_id=subject, token_use=str(token_use), client_id=str(sorted(allowed)[0]))

    def _verified_claims(self, token: str) -> dict[str, Any]:
        try:
            key = self._jwks.get_signing_key_from_jwt(token)
        except jwt.PyJWKClientConnectionError as exc:
            raise InvalidTokenError(f"the signing keys could not be fetched ({type(exc).__name__})") from exc
        except jwt.PyJWTError as exc:
            raise InvalidTokenError("the token is malformed or signed by an unknown key") from exc
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key=key,
                algorithms=list(ALGORITHMS),
                leeway=LEEWAY_S,
                options={"require": ["exp", "iat", "sub", "iss", "token_use"], "verify_aud": False},
            )
        except jwt.ExpiredSignatureError as exc:
            raise InvalidTokenError("the token has expired: sign in again") from exc
        except jwt.PyJWTError as exc:
            raise InvalidTokenError(f"the token is not valid ({type(exc).__name__})") from exc
        return claims


__all__ = [
    "ALGORITHMS",
    "ForbiddenTokenError",
    "Identity",
    "InvalidTokenError",
    "MissingTokenError",
    "TokenRejectedError",
    "TokenVerifier",
]
