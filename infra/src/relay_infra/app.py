"""The CDK app: composes every stack, tags every resource, and runs cdk-nag's AwsSolutions checks.

Entry point of ``cdk synth`` / ``cdk deploy`` (infra/cdk.json runs ``infra/app.py``, which calls :func:`main`).
Tests call :func:`build_app` with a :class:`RelayConfig` and read the stacks it returns.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from aws_cdk import App, Environment, Stack

from relay_infra.config import RelayConfig
from relay_infra.lambda_code import GATEWAY_BUNDLE, OPS_BUNDLE, functions_code
from relay_infra.nag import check_app
from relay_infra.stacks.agent import AgentStack
from relay_infra.stacks.gateway import GatewayStack
from relay_infra.stacks.observability import ObservabilityStack
from relay_infra.stacks.ops import OpsStack
from relay_infra.stacks.speech import SpeechDataStack, SpeechStack
from relay_infra.tags import tag_everything


@dataclass(frozen=True, slots=True)
class RelayStacks:
    """Every stack of one deployment, in deployment order."""

    speech_data: SpeechDataStack
    speech: SpeechStack
    agent: AgentStack
    gateway: GatewayStack
    observability: ObservabilityStack
    ops: OpsStack

    def all(self) -> list[Stack]:
        return [self.speech_data, self.speech, self.agent, self.gateway, self.observability, self.ops]


def build_stacks(app: App, config: RelayConfig, env: Environment | None = None) -> RelayStacks:
    """Add every stack of ``config``'s deployment to ``app`` (named ``KokoroRelay-<environment>-<Part>``)."""
    prefix = config.stack_prefix
    speech_data = SpeechDataStack(
        app, f"{prefix}-SpeechData", config=config, env=env, description="Kokoro Relay: TTS weights cache (S3)"
    )
    speech = SpeechStack(
        app,
        f"{prefix}-Speech",
        config=config,
        env=env,
        description="Kokoro Relay: Kokoro-82M on a SageMaker AI GPU endpoint",
    )
    speech.add_stack_dependency(speech_data, "the endpoint loads its weights from the weights-cache bucket")
    # SageMaker names are plain strings (no export to change when the model is replaced), so the order the
    # references used to imply is stated here.
    agent = AgentStack(
        app,
        f"{prefix}-Agent",
        config=config,
        endpoint_name=speech.endpoint_name,
        endpoint_arn=speech.endpoint_arn,
        access_logs=speech_data.access_logs,
        env=env,
        description="Kokoro Relay: the voice agent on Bedrock AgentCore Runtime and its conversation history",
    )
    agent.add_stack_dependency(speech, "the agent streams to the TTS endpoint")
    gateway = GatewayStack(
        app,
        f"{prefix}-Gateway",
        config=config,
        code=functions_code(config.lambda_bundling, GATEWAY_BUNDLE),
        runtime=agent.runtime,
        env=env,
        description="Kokoro Relay: WebSocket API, route functions, relay, tables, user pool",
    )
    observability = ObservabilityStack(
        app,
        f"{prefix}-Observability",
        config=config,
        endpoint_name=speech.endpoint_name,
        runtime=agent.runtime,
        gateway=gateway,
        env=env,
        description="Kokoro Relay: dashboard, alarms, alerts topic",
    )
    observability.add_stack_dependency(speech, "the dashboard charts the TTS endpoint")
    ops = OpsStack(
        app,
        f"{prefix}-Ops",
        config=config,
        code=functions_code(config.lambda_bundling, OPS_BUNDLE),
        alerts=observability.alerts,
        speech=speech,
        access_logs=speech_data.access_logs,
        agent=agent,
        gateway=gateway,
        env=env,
        description="Kokoro Relay: smoke test, dependency audit and cleanup workflows",
    )
    ops.add_stack_dependency(speech, "the workflows test and clean up the TTS endpoint")
    ops.add_stack_dependency(speech_data, "the cleanup workflow empties the weights-cache bucket")
    stacks = RelayStacks(speech_data, speech, agent, gateway, observability, ops)
    for stack in stacks.all():
        tag_everything(stack, config.tags)
    return stacks


def build_app(
    config: RelayConfig | None = None, *, app: App | None = None, env: Environment | None = None
) -> tuple[App, RelayStacks]:
    """The whole app with cdk-nag on. ``config`` defaults to the app's context (cdk.json / ``-c``)."""
    app = app or App()
    config = config or RelayConfig.from_context(app.node)
    stacks = build_stacks(app, config, env)
    check_app(app)
    return app, stacks


def main() -> None:
    """``cdk synth``'s entry point: account and region from the CLI's environment when it has them (synth
    needs neither: without them the stacks are environment-agnostic)."""
    account, region = os.environ.get("CDK_DEFAULT_ACCOUNT"), os.environ.get("CDK_DEFAULT_REGION")
    env = Environment(account=account, region=region) if account and region else None
    app, _ = build_app(env=env)
    app.synth()
