"""RelayConfig: context keys, their coercion, and the checks that stop a bad deployment at synth."""

from __future__ import annotations

import pytest

from relay_infra.config import ConfigError, ContextValues, LambdaBundling, RelayConfig


def test_defaults_are_the_documented_deployment() -> None:
    config = RelayConfig()
    assert config.tts_instance_type == "ml.g5.xlarge"
    assert (config.tts_min_instances, config.tts_max_instances) == (1, 4)
    assert config.lambda_bundling is LambdaBundling.FULL
    assert config.stack_prefix == "KokoroRelay-dev"
    assert config.tags["Project"] == "kokoro-relay"


def test_context_values_override_defaults_and_are_coerced() -> None:
    context = ContextValues(
        {
            "relay:ttsInstanceType": "ml.g6.xlarge",
            "relay:ttsMaxInstances": "8",
            "relay:apiGatewayCloudwatchRole": "false",
            "relay:lambdaBundling": "sources",
            "relay:alarmEmail": "ops@example.com",
            "relay:extraTags": {"CostCenter": 42},
        }
    )
    config = RelayConfig.from_context(context)
    assert config.tts_instance_type == "ml.g6.xlarge"
    assert config.tts_max_instances == 8
    assert config.api_gateway_cloudwatch_role is False
    assert config.lambda_bundling is LambdaBundling.SOURCES
    assert config.alarm_email == "ops@example.com"
    assert config.tags["CostCenter"] == "42"


def test_cdk_json_and_command_line_context_overlay() -> None:
    context = ContextValues.from_cdk_json(
        {"context": {"relay:environment": "dev", "relay:voice": "jf_alpha"}},
        ["-c", "relay:environment=prod", "--context=relay:voice=jm_kumo", "--other"],
    )
    config = RelayConfig.from_context(context)
    assert (config.environment, config.voice) == ("prod", "jm_kumo")
    assert config.name_prefix == "kokoro-relay-prod"


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"relay:ttsMinInstances": 5, "relay:ttsMaxInstances": 2}, "relay:ttsMaxInstances"),
        ({"relay:ttsMaxInstances": "many"}, "relay:ttsMaxInstances"),
        ({"relay:ttsInstanceType": "g5.xlarge"}, "relay:ttsInstanceType"),
        ({"relay:weightsPrefix": "/weights"}, "relay:weightsPrefix"),
        ({"relay:relayTimeoutS": 3600}, "relay:relayTimeoutS"),
        ({"relay:logRetentionDays": 31}, "relay:logRetentionDays"),
        ({"relay:lambdaBundling": "docker"}, "relay:lambdaBundling"),
        ({"relay:environment": "Prod"}, "relay:environment"),
        ({"relay:environment": "prod_eu"}, "relay:environment"),
        ({"relay:project": "Kokoro"}, "relay:project"),
        ({"relay:environment": "a-very-long-environment-name"}, "relay:environment"),
        ({"relay:ttsInferenceAmiVersion": "al2-ami-sagemaker-inference-gpu-9"}, "relay:ttsInferenceAmiVersion"),
        ({"relay:ttsInferenceAmiVersion": "al2-ami-sagemaker-inference-neuron-2"}, "relay:ttsInferenceAmiVersion"),
        ({"relay:ttsInstanceType": "ml.m5.xlarge"}, "relay:ttsInstanceType"),
    ],
)
def test_invalid_context_is_refused_naming_the_key(values: dict[str, object], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        RelayConfig.from_context(ContextValues(values))


PAIRS = [("kokoro-relay", "dev"), ("kokoro-relay", "a-b"), ("a", "b"), ("a-b", "c"), ("a", "b-c"), ("acme", "dev")]
"""(project, environment) pairs whose plain ``<project>-<environment>`` joins collide."""


def test_the_project_separates_stack_export_and_runtime_names() -> None:
    from relay_infra.constructs.voice_agent_runtime import RUNTIME_NAME_PATTERN, runtime_name  # noqa: PLC0415
    from relay_infra.stacks.speech import weights_bucket_exports  # noqa: PLC0415

    configs = [RelayConfig(project=p, environment=e) for p, e in PAIRS]
    assert len({c.stack_prefix for c in configs}) == len(PAIRS)
    assert len({weights_bucket_exports(c) for c in configs}) == len(PAIRS)
    names = [runtime_name(c.project, c.environment) for c in configs]
    assert len(set(names)) == len(PAIRS)
    assert all(RUNTIME_NAME_PATTERN.match(name) for name in names)
    # the default project keeps the names a first deployment got
    assert (configs[0].stack_prefix, names[0]) == ("KokoroRelay-dev", "kokoro_relay_dev")
    assert configs[-1].stack_prefix == "KokoroRelay-acme--dev"
    assert names[-1] == "relay_acme__dev"


def test_the_relay_reserved_concurrency_defaults_to_the_fleet_s_sessions() -> None:
    assert RelayConfig().relay_concurrency == 4 * 24
    assert RelayConfig(tts_max_instances=8, tts_sessions_per_instance=10).relay_concurrency == 80
    context = ContextValues({"relay:relayReservedConcurrency": "40"})
    assert RelayConfig.from_context(context).relay_concurrency == 40
    assert RelayConfig.from_context(ContextValues({"relay:relayReservedConcurrency": ""})).relay_concurrency == 96
    with pytest.raises(ConfigError, match="at least 1"):
        RelayConfig(relay_reserved_concurrency=0)
