"""The $connect authorizer over a real JWKS served on loopback: only a genuine, current token for our app client
gets an Allow policy; everything else is a 401 (Unauthorized) or a 403 (Deny policy)."""

from __future__ import annotations

import base64
import json
import time
from types import ModuleType
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from relay_functions.gateway import authorizer
from relay_functions.gateway.authorizer import UnauthorizedError, authorize
from relay_functions.gateway.deps import GatewayDeps, set_process_deps
from relay_functions.gateway.tokens import (
    ForbiddenTokenError,
    InvalidTokenError,
    MissingTokenError,
    TokenVerifier,
)


@pytest.fixture
def verifier(issuer: Any, gw: ModuleType) -> TokenVerifier:
    return TokenVerifier.for_jwks_url(issuer=gw.ISSUER, audiences=[gw.CLIENT_ID], jwks_url=issuer.jwks_url)


@pytest.fixture(scope="module")
def other_key() -> rsa.RSAPrivateKey:
    """A key the issuer never published."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def authorizer_event(gw: ModuleType, token: str | None) -> dict[str, Any]:
    event: dict[str, Any] = gw.load_event("authorizer_request.json")
    if token is None:
        event["queryStringParameters"] = None
        event["multiValueQueryStringParameters"] = None
    else:
        event["queryStringParameters"] = {"token": token}
    return event


def test_an_id_token_gets_an_allow_policy_for_the_method_arn(
    verifier: TokenVerifier, issuer: Any, gw: ModuleType
) -> None:
    event = authorizer_event(gw, issuer.token(sub="user-1"))
    result = authorize(event, verifier)
    assert result["principalId"] == "user-1"
    assert result["policyDocument"]["Statement"] == [
        {"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": event["methodArn"]}
    ]
    assert result["context"] == {"user_id": "user-1", "token_use": "id", "client_id": gw.CLIENT_ID}


def test_an_access_token_is_checked_by_client_id(verifier: TokenVerifier, issuer: Any, gw: ModuleType) -> None:
    token = issuer.token(token_use="access", aud=None, client_id=gw.CLIENT_ID, sub="user-2")
    assert verifier.verify(token).user_id == "user-2"
    wrong = issuer.token(token_use="access", aud=None, client_id="another-client")
    with pytest.raises(ForbiddenTokenError):
        verifier.verify(wrong)


def _alg_none_token() -> str:
    def part(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    now = int(time.time())
    claims: dict[str, Any] = {
        "sub": "x",
        "iss": "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_TestPool",
        "aud": "c",
    }
    claims.update({"token_use": "id", "iat": now, "exp": now + 600})
    return f"{part({'alg': 'none', 'typ': 'JWT', 'kid': 'test-key-1'})}.{part(claims)}."


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("missing", MissingTokenError),
        ("empty", MissingTokenError),
        ("malformed", InvalidTokenError),
        ("expired", InvalidTokenError),
        ("wrong_signature", InvalidTokenError),
        ("unknown_kid", InvalidTokenError),
        ("alg_none", InvalidTokenError),
        ("hs256_with_public_key", InvalidTokenError),
        ("no_token_use", InvalidTokenError),
        ("wrong_issuer", ForbiddenTokenError),
        ("wrong_audience", ForbiddenTokenError),
        ("wrong_token_use", ForbiddenTokenError),
    ],
)
def test_bad_tokens_are_refused(
    case: str,
    expected: type[Exception],
    verifier: TokenVerifier,
    issuer: Any,
    gw: ModuleType,
    other_key: rsa.RSAPrivateKey,
) -> None:
    now = int(time.time())
    tokens: dict[str, str | None] = {
        "missing": None,
        "empty": "",
        "malformed": "not-a-jwt",
        "expired": issuer.token(iat=now - 3600, exp=now - 60),
        "wrong_signature": issuer.token(key=other_key),
        "unknown_kid": issuer.token(kid="rotated-away"),
        "alg_none": _alg_none_token(),
        "hs256_with_public_key": jwt.encode(
            {"sub": "x", "iss": gw.ISSUER, "aud": gw.CLIENT_ID, "token_use": "id", "iat": now, "exp": now + 60},
            "a-shared-secret-that-is-long-enough-for-hs256",
            algorithm="HS256",
            headers={"kid": "test-key-1"},
        ),
        "no_token_use": issuer.token(token_use=None),
        "wrong_issuer": issuer.token(iss="https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Other"),
        "wrong_audience": issuer.token(aud="some-other-app"),
        "wrong_token_use": issuer.token(token_use="refresh"),
    }
    token = tokens[case]
    with pytest.raises(expected):
        verifier.verify(token)
    event = authorizer_event(gw, token)
    if expected is ForbiddenTokenError:
        result = authorize(event, verifier)
        assert [s["Effect"] for s in result["policyDocument"]["Statement"]] == ["Deny"]
        assert "context" not in result
    else:
        with pytest.raises(UnauthorizedError, match=r"^Unauthorized$"):
            authorize(event, verifier)


def test_unreachable_jwks_refuses_with_401(gw: ModuleType, other_key: rsa.RSAPrivateKey) -> None:
    verifier = TokenVerifier.for_jwks_url(
        issuer=gw.ISSUER, audiences=[gw.CLIENT_ID], jwks_url="http://127.0.0.1:9/.well-known/jwks.json"
    )
    token = jwt.encode({"sub": "x"}, other_key, algorithm="RS256", headers={"kid": "k"})
    with pytest.raises(UnauthorizedError):
        authorize(authorizer_event(gw, token), verifier)


def test_the_handler_answers_with_the_policy(
    issuer: Any, gw: ModuleType, lambda_context: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = gw.make_settings(jwks_url=issuer.jwks_url)
    set_process_deps(GatewayDeps(settings=settings))
    try:
        token = issuer.token(sub="user-3")
        result = authorizer.handler(authorizer_event(gw, token), lambda_context)
        assert result["context"]["user_id"] == "user-3"
        with pytest.raises(UnauthorizedError):
            authorizer.handler(authorizer_event(gw, "garbage"), lambda_context)
    finally:
        set_process_deps(None)
    logs = capsys.readouterr().out
    assert token not in logs
    assert "ConnectionsRefused" in logs
