"""The gateway functions' configuration: every environment variable they read, read once, in one place.

The CDK stack sets these variables; the local stack sets the same ones. Endpoints of AWS services are not
configured here: boto3's standard ``AWS_ENDPOINT_URL_DYNAMODB``, ``AWS_ENDPOINT_URL_LAMBDA`` and
``AWS_ENDPOINT_URL_BEDROCK_AGENTCORE`` redirect the clients with no code path of ours.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

from relay_core import limits

DEFAULT_QUALIFIER = "DEFAULT"
DEFAULT_TURNS_PER_MINUTE = 10
DEFAULT_RESUME_WINDOW_S = float(limits.RESUME_WINDOW_S)
DEFAULT_CONNECTION_TTL_S = 7200
DEFAULT_TEXT_COALESCE_MS = round(limits.TEXT_COALESCE_WINDOW_S * 1000)
DEFAULT_SERVICE_NAME = "kokoro-relay-gateway"
DEFAULT_METRICS_NAMESPACE = "KokoroRelay"
JWKS_PATH = "/.well-known/jwks.json"


class SettingsError(ValueError):
    """A required environment variable is missing or malformed (a deployment error, not a client's)."""


@dataclass(frozen=True, slots=True)
class GatewaySettings:
    """What every gateway function may need; each function reads only the fields it uses."""

    connections_table: str = ""
    turns_table: str = ""
    relay_function_name: str = ""
    agent_runtime_arn: str = ""
    agent_runtime_qualifier: str = DEFAULT_QUALIFIER
    jwt_issuer: str = ""
    jwt_audience: tuple[str, ...] = ()
    """Accepted audiences: Cognito app client ids (id tokens' ``aud``, access tokens' ``client_id``)."""
    jwks_url: str = ""
    turns_per_minute: int = DEFAULT_TURNS_PER_MINUTE
    resume_window_s: float = DEFAULT_RESUME_WINDOW_S
    connection_ttl_s: int = DEFAULT_CONNECTION_TTL_S
    text_coalesce_s: float = limits.TEXT_COALESCE_WINDOW_S
    """The relay sends at most one text message per this window (``TEXT_COALESCE_MS``; 0: one per agent delta)."""
    connections_endpoint_url: str | None = None
    """Overrides the ``https://{domainName}/{stage}`` @connections endpoint taken from each event."""
    service_name: str = DEFAULT_SERVICE_NAME
    metrics_namespace: str = DEFAULT_METRICS_NAMESPACE

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> GatewaySettings:
        """Settings from an environment mapping; missing optional variables take their documented defaults."""
        issuer = environ.get("JWT_ISSUER", "").rstrip("/")
        audiences = tuple(a.strip() for a in environ.get("JWT_AUDIENCE", "").split(",") if a.strip())
        return cls(
            connections_table=environ.get("CONNECTIONS_TABLE", ""),
            turns_table=environ.get("TURNS_TABLE", ""),
            relay_function_name=environ.get("RELAY_FUNCTION_NAME", ""),
            agent_runtime_arn=environ.get("AGENT_RUNTIME_ARN", ""),
            agent_runtime_qualifier=environ.get("AGENT_RUNTIME_QUALIFIER") or DEFAULT_QUALIFIER,
            jwt_issuer=issuer,
            jwt_audience=audiences,
            jwks_url=environ.get("JWKS_URL") or (f"{issuer}{JWKS_PATH}" if issuer else ""),
            turns_per_minute=_positive_int(environ, "TURNS_PER_MINUTE", DEFAULT_TURNS_PER_MINUTE),
            resume_window_s=float(_positive_int(environ, "RESUME_WINDOW_S", int(DEFAULT_RESUME_WINDOW_S))),
            connection_ttl_s=_positive_int(environ, "CONNECTION_TTL_S", DEFAULT_CONNECTION_TTL_S),
            text_coalesce_s=_int(environ, "TEXT_COALESCE_MS", DEFAULT_TEXT_COALESCE_MS, minimum=0) / 1000,
            connections_endpoint_url=environ.get("CONNECTIONS_ENDPOINT_URL") or None,
            service_name=environ.get("POWERTOOLS_SERVICE_NAME") or DEFAULT_SERVICE_NAME,
            metrics_namespace=environ.get("POWERTOOLS_METRICS_NAMESPACE") or DEFAULT_METRICS_NAMESPACE,
        )

    def require(self, *names: str) -> GatewaySettings:
        """These settings, after checking that the named fields are set; raises :class:`SettingsError` naming
        the environment variables to set."""
        missing = [name.upper() for name in names if not getattr(self, name)]
        if missing:
            raise SettingsError(f"set the environment variable(s) {', '.join(missing)} for this function")
        return self


def _positive_int(environ: Mapping[str, str], name: str, default: int) -> int:
    return _int(environ, name, default, minimum=1)


def _int(environ: Mapping[str, str], name: str, default: int, *, minimum: int) -> int:
    kind = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
    raw = environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise SettingsError(f"{name} must be {kind}; got {raw[:40]!r}") from exc
    if value < minimum:
        raise SettingsError(f"{name} must be {kind}; got {value}")
    return value


@cache
def load_settings() -> GatewaySettings:
    """The settings of this process, read from ``os.environ`` on first use (never at import)."""
    return GatewaySettings.from_env(os.environ)
