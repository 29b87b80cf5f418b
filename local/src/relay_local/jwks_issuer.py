"""A local stand-in for a Cognito user pool's token side: an RSA signing key, its JWKS document (served at
``{issuer}/.well-known/jwks.json``, where Cognito serves it), and dev tokens shaped like Cognito ID tokens, so
the real authorizer verifies them exactly as it verifies Cognito's.

The key is generated once and cached (``$KOKORO_RELAY_CACHE`` or ``~/.cache/kokoro-relay``, under
``local-jwt/``), so a token minted for one ``relay up`` keeps working after a restart.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

LOCAL_USER_POOL_ID = "us-east-1_LocalPool"
LOCAL_CLIENT_ID = "local-relay-client"
"""The app client id: the ``aud`` of every dev ID token (set ``JWT_AUDIENCE`` to it)."""
DEFAULT_TOKEN_TTL_S = 3600
JWKS_SUFFIX = "/.well-known/jwks.json"


def default_key_path() -> Path:
    cache = Path(os.environ.get("KOKORO_RELAY_CACHE") or Path.home() / ".cache" / "kokoro-relay")
    return cache / "local-jwt" / "signing-key.pem"


def _load_or_create_key(path: Path | None) -> rsa.RSAPrivateKey:
    if path is not None and path.is_file():
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
        if isinstance(key, rsa.RSAPrivateKey):
            return key
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(pem)
        tmp.chmod(0o600)
        tmp.replace(path)
    return key


class DevTokenIssuer:
    """Signs Cognito-shaped ID tokens for ``issuer`` (RS256, ``kid`` in the header, ``token_use: id``).

    ``issuer`` is set once the HTTP server knows its port (:meth:`set_base_url`): ``{base_url}/{pool id}``,
    mirroring ``https://cognito-idp.{region}.amazonaws.com/{pool id}``."""

    def __init__(self, *, key_path: Path | None = None, audience: str = LOCAL_CLIENT_ID) -> None:
        self._key = _load_or_create_key(key_path if key_path is not None else default_key_path())
        self.audience = audience
        public = self._key.public_key()
        numbers = public.public_numbers()
        self.kid = f"local-{numbers.n % 10**12:012d}"
        self.issuer = f"http://127.0.0.1/{LOCAL_USER_POOL_ID}"

    def set_base_url(self, base_url: str) -> None:
        self.issuer = f"{base_url}/{LOCAL_USER_POOL_ID}"

    @property
    def jwks_url(self) -> str:
        return self.issuer + JWKS_SUFFIX

    def jwks(self) -> dict[str, Any]:
        """The public JWKS document (``{"keys": [{kty, kid, use, alg, n, e}]}``)."""
        jwk: dict[str, Any] = json.loads(RSAAlgorithm.to_jwk(self._key.public_key()))
        jwk.update({"kid": self.kid, "use": "sig", "alg": "RS256"})
        return {"keys": [jwk]}

    def mint(self, user_id: str, *, ttl_s: int = DEFAULT_TOKEN_TTL_S, audience: str | None = None) -> str:
        """A signed ID token for ``user_id`` (``sub``), valid ``ttl_s`` seconds (negative: already expired)."""
        now = int(time.time())
        claims = {
            "sub": user_id,
            "cognito:username": user_id,
            "email": f"{user_id}@example.invalid",
            "iss": self.issuer,
            "aud": audience or self.audience,
            "token_use": "id",
            "auth_time": now,
            "iat": now if ttl_s > 0 else now + ttl_s - 60,
            "exp": now + ttl_s,
            "jti": str(uuid.uuid4()),
            "origin_jti": str(uuid.uuid4()),
            "event_id": str(uuid.uuid4()),
        }
        return jwt.encode(claims, self._key, algorithm="RS256", headers={"kid": self.kid})

    def routes(self) -> list[Route]:
        async def jwks(_: Request) -> Response:
            return JSONResponse(self.jwks())

        return [Route(f"/{LOCAL_USER_POOL_ID}{JWKS_SUFFIX}", jwks, methods=["GET"])]


__all__ = ["LOCAL_CLIENT_ID", "LOCAL_USER_POOL_ID", "DevTokenIssuer", "default_key_path"]
