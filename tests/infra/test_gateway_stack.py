"""Gateway stack: routes and authorizer, stage throttling, tables, functions and their narrow grants."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk.assertions import Match
from tests.infra.iam_statements import actions_of, as_list, granting, rendered, statements_of_handler

from relay_functions import manifest

if TYPE_CHECKING:
    from tests.infra.conftest import SynthesizedApp

HANDLERS = tuple(entry.name for entry in manifest.FUNCTIONS)


def test_routes_select_on_action_and_only_connect_is_authorized(relay_app: SynthesizedApp) -> None:
    template = relay_app.assertions("Gateway")
    template.has_resource_properties(
        "AWS::ApiGatewayV2::Api",
        {"ProtocolType": "WEBSOCKET", "RouteSelectionExpression": "$request.body.action"},
    )
    routes = {
        r["Properties"]["RouteKey"]: r["Properties"] for r in relay_app.resources("Gateway", "AWS::ApiGatewayV2::Route")
    }
    assert set(routes) == {"$connect", "$disconnect", "$default", "sendMessage", "cancel", "resume", "newConversation"}
    assert routes["$connect"]["AuthorizationType"] == "CUSTOM"
    assert all(routes[key].get("AuthorizationType", "NONE") == "NONE" for key in routes if key != "$connect")
    template.has_resource_properties(
        "AWS::ApiGatewayV2::Authorizer",
        {"AuthorizerType": "REQUEST", "IdentitySource": ["route.request.querystring.token"]},
    )


def test_every_message_route_is_two_way_as_the_local_gateway_is(relay_app: SynthesizedApp) -> None:
    """The local gateway sends a handler's body back on every message route (docs/local-stack.md); AWS does that
    only for routes with a route response, so each message route has one and the lifecycle routes have none."""
    template = relay_app.template("Gateway")
    route_keys = {
        logical_id: r["Properties"]["RouteKey"]
        for logical_id, r in template["Resources"].items()
        if r["Type"] == "AWS::ApiGatewayV2::Route"
    }
    two_way = {
        route_keys[r["Properties"]["RouteId"]["Ref"]]
        for r in relay_app.resources("Gateway", "AWS::ApiGatewayV2::RouteResponse")
        if r["Properties"]["RouteResponseKey"] == "$default"
    }
    assert two_way == set(route_keys.values()) - {"$connect", "$disconnect"}


def test_the_api_is_named_per_environment(relay_app: SynthesizedApp) -> None:
    (api,) = relay_app.resources("Gateway", "AWS::ApiGatewayV2::Api")
    assert api["Properties"]["Name"] == "kokoro-relay-dev-websocket"


def test_stage_is_throttled_and_logged(relay_app: SynthesizedApp) -> None:
    relay_app.assertions("Gateway").has_resource_properties(
        "AWS::ApiGatewayV2::Stage",
        {
            "StageName": "live",
            "AutoDeploy": True,
            "DefaultRouteSettings": Match.object_like({"ThrottlingRateLimit": 100, "ThrottlingBurstLimit": 200}),
            "AccessLogSettings": Match.object_like({"DestinationArn": Match.any_value()}),
        },
    )


def test_tables_have_ttl_pitr_and_encryption(relay_app: SynthesizedApp) -> None:
    tables = relay_app.resources("Gateway", "AWS::DynamoDB::Table")
    assert len(tables) == 2
    for table in tables:
        props = table["Properties"]
        assert props["KeySchema"] == [{"AttributeName": "pk", "KeyType": "HASH"}]
        assert props["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
        assert props["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
        assert props["SSESpecification"]["SSEEnabled"] is True


def test_every_handler_is_an_arm64_python_function_with_powertools(relay_app: SynthesizedApp) -> None:
    functions = {
        f["Properties"]["Handler"]: f["Properties"] for f in relay_app.resources("Gateway", "AWS::Lambda::Function")
    }
    assert set(functions) == {f"relay_functions.gateway.{name}.handler" for name in HANDLERS}
    for props in functions.values():
        assert props["Runtime"] == "python3.12"
        assert props["Architectures"] == ["arm64"]
        assert props["TracingConfig"] == {"Mode": "Active"}
        env = props["Environment"]["Variables"]
        assert env["POWERTOOLS_METRICS_NAMESPACE"] == "KokoroRelay"
    relay = functions["relay_functions.gateway.relay.handler"]
    assert relay["Timeout"] == 900
    assert (
        "RELAY_FUNCTION_NAME" in functions["relay_functions.gateway.send_message.handler"]["Environment"]["Variables"]
    )


def test_relay_is_invoked_asynchronously_without_retries(relay_app: SynthesizedApp) -> None:
    relay_app.assertions("Gateway").has_resource_properties(
        "AWS::Lambda::EventInvokeConfig", {"MaximumRetryAttempts": 0, "Qualifier": "$LATEST"}
    )


def test_a_relay_invocation_lambda_gives_up_on_goes_to_relay_failed(relay_app: SynthesizedApp) -> None:
    """Throttled past the event's age (or failed), a turn is handed to relay_failed, which ends it for the client;
    the relay's reserved concurrency is the fleet's TTS sessions (ttsMaxInstances x ttsSessionsPerInstance)."""
    template = relay_app.template("Gateway")
    functions = {
        r["Properties"]["Handler"]: (logical_id, r["Properties"])
        for logical_id, r in template["Resources"].items()
        if r["Type"] == "AWS::Lambda::Function" and "Handler" in r["Properties"]
    }
    failed_id, _ = functions["relay_functions.gateway.relay_failed.handler"]
    relay_id, relay = functions["relay_functions.gateway.relay.handler"]
    (config,) = relay_app.resources("Gateway", "AWS::Lambda::EventInvokeConfig")
    assert config["Properties"]["FunctionName"] == {"Ref": relay_id}
    assert config["Properties"]["MaximumEventAgeInSeconds"] == 60
    assert config["Properties"]["DestinationConfig"]["OnFailure"]["Destination"] == {"Fn::GetAtt": [failed_id, "Arn"]}
    assert relay["ReservedConcurrentExecutions"] == 4 * 24


def test_grants_are_scoped_to_this_api_runtime_and_relay(relay_app: SynthesizedApp) -> None:
    template = relay_app.template("Gateway")
    manage = granting(template, "execute-api:ManageConnections")
    assert manage
    for statement in manage:
        assert "/live/POST/@connections/*" in rendered(statement["Resource"])

    by_handler = {name: statements_of_handler(template, f"relay_functions.gateway.{name}.handler") for name in HANDLERS}
    holders = {
        name for name, found in by_handler.items() if "bedrock-agentcore:InvokeAgentRuntime" in actions_of(found)
    }
    assert holders == {"relay"}  # a late barge-in reaches the agent through the relay, never from a route
    for name in holders:
        (invoke_agent,) = [
            s for s in by_handler[name] if "bedrock-agentcore:InvokeAgentRuntime" in as_list(s["Action"])
        ]
        assert "*" not in rendered(invoke_agent["Resource"])

    holders = {name for name, found in by_handler.items() if "lambda:InvokeFunction" in actions_of(found)}
    # $default serves a valid action as its route would; the relay's role delivers its failed invocations to
    # relay_failed (the on-failure destination) and may invoke nothing else
    assert holders == {"send_message", "default", "cancel", "relay"}  # cancel: queues a late barge-in
    (deliver,) = [s for s in by_handler["relay"] if "lambda:InvokeFunction" in as_list(s["Action"])]
    assert all("RelayFailed" in rendered(r) for r in as_list(deliver["Resource"]))
    (invoke,) = [s for s in by_handler["send_message"] if "lambda:InvokeFunction" in as_list(s["Action"])]
    assert len(as_list(invoke["Resource"])) == 2  # the relay and its versions, nothing else
    assert all("Fn::GetAtt" in rendered(r) for r in as_list(invoke["Resource"]))

    assert not actions_of(by_handler["authorizer"]) - {
        "logs:CreateLogStream",
        "logs:PutLogEvents",
        "xray:PutTraceSegments",
        "xray:PutTelemetryRecords",
    }
    assert "execute-api:ManageConnections" not in actions_of(by_handler["connect"])


def test_user_pool_and_outputs(relay_app: SynthesizedApp) -> None:
    template = relay_app.assertions("Gateway")
    template.has_resource_properties(
        "AWS::Cognito::UserPool",
        {"AdminCreateUserConfig": {"AllowAdminCreateUserOnly": True}, "MfaConfiguration": "OPTIONAL"},
    )
    template.has_resource_properties("AWS::Cognito::UserPoolClient", {"GenerateSecret": False})
    outputs = relay_app.template("Gateway")["Outputs"]
    assert {"WebSocketUrl", "UserPoolId", "UserPoolClientId"} <= set(outputs)
    assert "wss://" in rendered(outputs["WebSocketUrl"]["Value"])


def test_app_clients_have_oauth_off(relay_app: SynthesizedApp) -> None:
    """Sign-in is Cognito's API (SRP, USER_PASSWORD_AUTH), never the hosted UI: no OAuth grant, scope or callback
    (CDK's default would allow code and implicit grants redirecting to https://example.com)."""
    clients = relay_app.resources("Gateway", "AWS::Cognito::UserPoolClient")
    assert len(clients) == 2
    for client in clients:
        props = client["Properties"]
        assert props.get("AllowedOAuthFlowsUserPoolClient") is False
        for key in ("AllowedOAuthFlows", "AllowedOAuthScopes", "CallbackURLs", "LogoutURLs", "DefaultRedirectURI"):
            assert not props.get(key), key
        assert "example.com" not in rendered(props)


def test_destroying_one_environment_leaves_the_account_level_logging_role(relay_app: SynthesizedApp) -> None:
    """API Gateway's CloudWatch role is one per account and region: every environment logs through it."""
    template = relay_app.template("Gateway")
    (account,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::ApiGateway::Account"]
    role_id = account["Properties"]["CloudWatchRoleArn"]["Fn::GetAtt"][0]
    assert account["DeletionPolicy"] == "Retain"
    assert template["Resources"][role_id]["DeletionPolicy"] == "Retain"
    assert "RoleName" not in template["Resources"][role_id]["Properties"]


OPTIONAL_SETTINGS = {
    "AGENT_RUNTIME_QUALIFIER",
    "JWKS_URL",
    "TURNS_PER_MINUTE",
    "RESUME_WINDOW_S",
    "CONNECTION_TTL_S",
    "TEXT_COALESCE_MS",
    "CONNECTIONS_ENDPOINT_URL",
    "POWERTOOLS_SERVICE_NAME",
    "POWERTOOLS_METRICS_NAMESPACE",
}
"""Settings with a default in relay_functions.gateway.settings (the endpoint URLs come from the event and issuer)."""


def test_each_function_gets_exactly_the_settings_its_manifest_entry_reads(relay_app: SynthesizedApp) -> None:
    functions = {
        f["Properties"]["Handler"]: f["Properties"] for f in relay_app.resources("Gateway", "AWS::Lambda::Function")
    }
    for entry in manifest.FUNCTIONS:
        given = set(functions[entry.handler]["Environment"]["Variables"])
        powertools = {name for name in given if name.startswith("POWERTOOLS_")}  # RelayFunction's, for Powertools
        assert given - powertools <= set(entry.settings), entry.name
        assert set(entry.settings) - OPTIONAL_SETTINGS <= given, entry.name


def test_each_function_is_granted_every_aws_call_its_manifest_entry_makes(relay_app: SynthesizedApp) -> None:
    template = relay_app.template("Gateway")
    for entry in manifest.FUNCTIONS:
        granted = actions_of(statements_of_handler(template, entry.handler))
        assert set(entry.aws_calls) <= granted, f"{entry.name} lacks {set(entry.aws_calls) - granted}"


def test_routes_are_the_manifests(relay_app: SynthesizedApp) -> None:
    routes = {r["Properties"]["RouteKey"] for r in relay_app.resources("Gateway", "AWS::ApiGatewayV2::Route")}
    assert routes == set(manifest.routes())
