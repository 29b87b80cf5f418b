"""GatewaySettings: every variable read once, documented defaults, clear errors."""

from __future__ import annotations

import pytest

from relay_core import limits
from relay_functions.gateway.settings import GatewaySettings, SettingsError


def test_defaults_and_derived_jwks_url() -> None:
    settings = GatewaySettings.from_env({"JWT_ISSUER": "https://cognito-idp.eu-west-1.amazonaws.com/pool/"})
    assert settings.jwks_url == "https://cognito-idp.eu-west-1.amazonaws.com/pool/.well-known/jwks.json"
    assert settings.jwt_issuer == "https://cognito-idp.eu-west-1.amazonaws.com/pool"
    assert settings.agent_runtime_qualifier == "DEFAULT"
    assert settings.turns_per_minute == 10
    assert settings.resume_window_s == limits.RESUME_WINDOW_S
    assert settings.connection_ttl_s == 7200
    assert settings.connections_endpoint_url is None


def test_every_variable_is_read() -> None:
    settings = GatewaySettings.from_env(
        {
            "CONNECTIONS_TABLE": "c",
            "TURNS_TABLE": "t",
            "RELAY_FUNCTION_NAME": "r",
            "AGENT_RUNTIME_ARN": "arn",
            "AGENT_RUNTIME_QUALIFIER": "prod",
            "JWT_ISSUER": "http://127.0.0.1:9/iss",
            "JWT_AUDIENCE": "web-client, mobile-client",
            "JWKS_URL": "http://127.0.0.1:9/keys",
            "TURNS_PER_MINUTE": "3",
            "RESUME_WINDOW_S": "45",
            "CONNECTION_TTL_S": "60",
            "CONNECTIONS_ENDPOINT_URL": "http://127.0.0.1:9",
            "POWERTOOLS_SERVICE_NAME": "svc",
            "POWERTOOLS_METRICS_NAMESPACE": "ns",
        }
    )
    assert settings == GatewaySettings(
        connections_table="c",
        turns_table="t",
        relay_function_name="r",
        agent_runtime_arn="arn",
        agent_runtime_qualifier="prod",
        jwt_issuer="http://127.0.0.1:9/iss",
        jwt_audience=("web-client", "mobile-client"),
        jwks_url="http://127.0.0.1:9/keys",
        turns_per_minute=3,
        resume_window_s=45.0,
        connection_ttl_s=60,
        connections_endpoint_url="http://127.0.0.1:9",
        service_name="svc",
        metrics_namespace="ns",
    )


@pytest.mark.parametrize("value", ["zero", "0", "-2"])
def test_a_bad_number_names_the_variable(value: str) -> None:
    with pytest.raises(SettingsError, match="TURNS_PER_MINUTE"):
        GatewaySettings.from_env({"TURNS_PER_MINUTE": value})


def test_require_names_the_missing_variables() -> None:
    with pytest.raises(SettingsError, match="CONNECTIONS_TABLE, RELAY_FUNCTION_NAME"):
        GatewaySettings.from_env({"TURNS_TABLE": "t"}).require(
            "connections_table", "turns_table", "relay_function_name"
        )
