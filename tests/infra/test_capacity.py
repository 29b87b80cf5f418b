"""The capacity model behind docs/capacity.md: its arithmetic, its binding quota, and the doc being its output."""

from __future__ import annotations

import math
import re
from dataclasses import replace

import pytest

from relay_infra.capacity import CapacityInputs, audio_messages_per_audio_s, demand, main, render
from relay_infra.config import RelayConfig
from relay_infra.paths import REPO_ROOT

SIMPLE = CapacityInputs(gpu_audio_s_per_s=10.0, target_utilization=0.5, turn_duty=0.5, quota_instances=100)


def test_instances_cover_the_sessions_in_flight_at_the_target_utilization() -> None:
    # 10 audio s/s at 0.5 utilization = 5 sessions per instance; 100 talkers x 0.5 duty = 50 sessions.
    result = demand(100, SIMPLE)
    assert result.sessions_per_instance == 5
    assert result.instances == 10
    assert demand(101, SIMPLE).instances == 11  # 50.5 sessions need an 11th instance
    assert demand(1, SIMPLE).instances == 1


def test_costs_scale_with_instances_and_talkers() -> None:
    small, large = demand(100, SIMPLE), demand(1_000, SIMPLE)
    assert small.cost_per_h["SageMaker"] == pytest.approx(10 * SIMPLE.instance_price_per_h)
    assert large.cost_per_h["AgentCore"] == pytest.approx(10 * small.cost_per_h["AgentCore"])
    assert large.total_cost_per_h == pytest.approx(sum(large.cost_per_h.values()))


def test_dynamodb_costs_one_read_per_poll_of_each_running_relay() -> None:
    """Each relay in flight reads its turn record every POLL_INTERVAL_S: 100 talkers at duty 0.5 = 50 relays,
    5 reads/s each = 900,000 reads an hour."""
    from relay_functions.gateway.turn_relay import POLL_INTERVAL_S  # noqa: PLC0415

    assert CapacityInputs().relay_poll_interval_s == POLL_INTERVAL_S
    cost = demand(100, SIMPLE).cost_per_h["DynamoDB"]
    assert cost == pytest.approx(50 / POLL_INTERVAL_S * 3_600 / 1e6 * SIMPLE.dynamodb_price_per_million_reads)
    assert "| cost/h DynamoDB |" in render()


def test_audio_messages_fit_the_frame_quota() -> None:
    # 48,000 PCM bytes per second in base64 messages of at most 32 KB: a little over two messages per second.
    assert 1.9 < audio_messages_per_audio_s() < 2.1


def test_binding_quota_follows_the_inputs() -> None:
    assert demand(1_000, CapacityInputs()).binding_quota(CapacityInputs()) == "SageMaker ml.g5.xlarge instances"
    raised = replace(CapacityInputs(), quota_instances=1_000)
    assert demand(10_000, raised).binding_quota(raised) == "AgentCore concurrent sessions"


def test_invalid_talkers_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        demand(0)


def test_autoscaling_default_is_the_model_target() -> None:
    inputs = CapacityInputs()
    assert RelayConfig().tts_sessions_per_instance == math.floor(inputs.gpu_audio_s_per_s * inputs.target_utilization)


def test_docs_capacity_tables_are_the_script_output() -> None:
    text = (REPO_ROOT / "docs" / "capacity.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- capacity:begin -->\n(.*?)<!-- capacity:end -->", text, re.DOTALL)
    assert match, "docs/capacity.md must hold the generated tables between capacity:begin/end markers"
    assert match.group(1) == render(), "regenerate with: uv run python -m relay_infra.capacity"


def test_cli_takes_every_input_as_a_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--gpu-audio-s-per-s", "80", "--talkers", "100"]) == 0
    out = capsys.readouterr().out
    assert "**48 concurrent TTS sessions**" in out
    assert "| ml.g5.xlarge instances | 2 |" in out  # 50 sessions in flight over 48 per instance
