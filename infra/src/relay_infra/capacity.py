"""Capacity model: how many instances, Lambda concurrency, API Gateway traffic, AgentCore sessions and dollars
per hour N concurrent talkers need, and which quota binds first (docs/capacity.md is generated from it).

``python -m relay_infra.capacity [--gpu-audio-s-per-s 40 ...]`` prints the tables; every figure is an input
(:class:`CapacityInputs`), so a measured GPU throughput (``bash bench/gpu.sh``) replaces the estimate with one
flag. The model, per talker:

- a talker is *speaking-active* (a turn in flight: the agent writing and Kokoro speaking) ``turn_duty`` of the
  time; a turn in flight holds one TTS session, one relay Lambda invocation and one message stream;
- a TTS session needs Kokoro to produce audio at least in real time (1 audio second per second);
- an instance is filled to ``target_utilization`` of its throughput, so queues (and time to first audio) stay
  short: ``sessions_per_instance = floor(audio_s_per_s × target_utilization)`` is the autoscaling target;
- a running relay reads its turn record once every ``relay_poll_interval_s`` (one strongly consistent GetItem of
  a small item: one DynamoDB read request unit; ``relay_functions.gateway.turn_relay.POLL_INTERVAL_S``);
- every connected talker holds one AgentCore runtime session (a session lives on between turns until its idle
  timeout), one WebSocket connection, and sends one client message per turn.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, fields, replace

PCM_BYTES_PER_AUDIO_S = 24_000 * 2
"""s16le mono 24 kHz (relay_core.audio)."""
FRAME_BYTES = 32 * 1024
"""API Gateway WebSocket frame quota (relay_core.limits.APIGW_FRAME_BYTES)."""
JSON_OVERHEAD_BYTES = 160
"""An audio_chunk message's fields around its base64 data (type, turn_id, seq, request_id)."""


@dataclass(frozen=True, slots=True)
class CapacityInputs:
    """Every figure the model uses; defaults are the documented assumptions of docs/capacity.md."""

    gpu_audio_s_per_s: float = 40.0
    """Audio seconds one ml.g5.xlarge (A10G) produces per second across concurrent sessions. NOT MEASURED here
    (no GPU lent to this task): an estimate, to be replaced by ``bash bench/gpu.sh``'s figure."""
    cpu_audio_s_per_s: float = 3.3
    """Measured: the 2-core development machine, int8 ONNX, 4-16 sessions (docs/benchmarks.md section 2)."""
    target_utilization: float = 0.6
    turn_duty: float = 0.5
    """Share of a connected talker's time with a turn in flight (the agent speaking; the rest is the user
    talking or thinking)."""
    turn_interval_s: float = 20.0
    """Seconds between two turns of one talker (one sendMessage each)."""
    text_messages_per_audio_s: float = 3.0
    """text_delta messages per second of speech (about one per word)."""
    relay_memory_gb: float = 0.5
    instance_price_per_h: float = 1.408
    """ml.g5.xlarge real-time inference, us-east-1, on demand (AWS price list; check your region)."""
    lambda_price_per_gb_s: float = 0.0000133334
    """arm64 Lambda duration price."""
    relay_poll_interval_s: float = 0.2
    """A running relay polls its turn record (cancel, barge-in) this often: one strongly consistent read each."""
    dynamodb_price_per_million_reads: float = 0.125
    """On-demand read request units, us-east-1 (a strongly consistent read of up to 4 KB is one unit)."""
    apigw_price_per_million_messages: float = 1.00
    apigw_price_per_million_connection_minutes: float = 0.25
    agentcore_vcpu_price_per_h: float = 0.0895
    agentcore_gb_price_per_h: float = 0.00945
    agentcore_active_vcpu: float = 1.0
    agentcore_memory_gb: float = 2.0
    agentcore_cpu_active_share: float = 0.2
    """AgentCore bills CPU only while the agent computes (not while it waits on the model or Kokoro)."""
    quota_instances: int = 2
    """SageMaker 'ml.g5.xlarge for endpoint usage' default in a fresh account (often 0-2: check Service Quotas)."""
    quota_lambda_concurrency: int = 1_000
    quota_agentcore_sessions: int = 1_000
    """AgentCore Runtime concurrent sessions per account (assumed default; check Service Quotas)."""
    quota_apigw_requests_per_s: int = 10_000
    """Account-level API Gateway throttle per region (client messages and @connections posts)."""
    quota_apigw_new_connections_per_s: int = 500
    connection_lifetime_s: float = 7_200.0
    """API Gateway closes a WebSocket after 2 h: every talker reconnects at least that often."""


@dataclass(frozen=True, slots=True)
class Demand:
    """What ``talkers`` concurrent talkers need under :class:`CapacityInputs`."""

    talkers: int
    sessions_per_instance: int
    instances: int
    relay_concurrency: float
    agentcore_sessions: int
    apigw_messages_per_s: float
    apigw_new_connections_per_s: float
    cost_per_h: dict[str, float]

    @property
    def total_cost_per_h(self) -> float:
        return sum(self.cost_per_h.values())

    def quota_use(self, inputs: CapacityInputs) -> dict[str, float]:
        """Each quota's share in use (1.0 = at the quota)."""
        return {
            "SageMaker ml.g5.xlarge instances": self.instances / inputs.quota_instances,
            "Lambda concurrent executions": self.relay_concurrency / inputs.quota_lambda_concurrency,
            "AgentCore concurrent sessions": self.agentcore_sessions / inputs.quota_agentcore_sessions,
            "API Gateway requests/s (account)": self.apigw_messages_per_s / inputs.quota_apigw_requests_per_s,
            "API Gateway new connections/s": self.apigw_new_connections_per_s
            / inputs.quota_apigw_new_connections_per_s,
        }

    def binding_quota(self, inputs: CapacityInputs) -> str:
        """The quota closest to (or furthest past) its limit."""
        use = self.quota_use(inputs)
        return max(use, key=lambda name: use[name])


def sessions_per_instance(audio_s_per_s: float, target_utilization: float) -> int:
    """Concurrent TTS sessions one instance serves at the target utilization (the autoscaling target)."""
    return max(1, math.floor(audio_s_per_s * target_utilization))


def audio_messages_per_audio_s() -> float:
    """API Gateway messages per second of speech: base64 PCM split to fit one frame each."""
    pcm_per_message = (FRAME_BYTES - JSON_OVERHEAD_BYTES) * 3 // 4
    return PCM_BYTES_PER_AUDIO_S / pcm_per_message


def demand(talkers: int, inputs: CapacityInputs = CapacityInputs()) -> Demand:
    """The resources and cost of ``talkers`` concurrent talkers."""
    if talkers < 1:
        raise ValueError("talkers must be at least 1")
    per_instance = sessions_per_instance(inputs.gpu_audio_s_per_s, inputs.target_utilization)
    in_turn = talkers * inputs.turn_duty
    instances = max(1, math.ceil(in_turn / per_instance))
    messages_per_s = (
        in_turn * (audio_messages_per_audio_s() + inputs.text_messages_per_audio_s) + talkers / inputs.turn_interval_s
    )
    connection_minutes_per_h = talkers * 60.0
    cost = {
        "SageMaker": instances * inputs.instance_price_per_h,
        "Lambda": in_turn * inputs.relay_memory_gb * 3_600 * inputs.lambda_price_per_gb_s,
        "DynamoDB": in_turn / inputs.relay_poll_interval_s * 3_600 / 1e6 * inputs.dynamodb_price_per_million_reads,
        "API Gateway": messages_per_s * 3_600 / 1e6 * inputs.apigw_price_per_million_messages
        + connection_minutes_per_h / 1e6 * inputs.apigw_price_per_million_connection_minutes,
        "AgentCore": talkers
        * (
            inputs.agentcore_active_vcpu * inputs.agentcore_cpu_active_share * inputs.agentcore_vcpu_price_per_h
            + inputs.agentcore_memory_gb * inputs.agentcore_gb_price_per_h
        ),
    }
    return Demand(
        talkers=talkers,
        sessions_per_instance=per_instance,
        instances=instances,
        relay_concurrency=in_turn,
        agentcore_sessions=talkers,
        apigw_messages_per_s=messages_per_s,
        apigw_new_connections_per_s=talkers / inputs.connection_lifetime_s,
        cost_per_h=cost,
    )


def render(inputs: CapacityInputs = CapacityInputs(), talkers: tuple[int, ...] = (100, 1_000, 10_000)) -> str:
    """The Markdown tables of docs/capacity.md (between its ``capacity:begin``/``capacity:end`` markers)."""
    rows = [demand(n, inputs) for n in talkers]
    cpu_sessions = sessions_per_instance(inputs.cpu_audio_s_per_s, inputs.target_utilization)
    lines = [
        f"Per instance: **{rows[0].sessions_per_instance} concurrent TTS sessions** on ml.g5.xlarge "
        f"({inputs.gpu_audio_s_per_s:g} audio s/s estimated × {inputs.target_utilization:g} target utilization), "
        f"that is {rows[0].sessions_per_instance / inputs.turn_duty:g} connected talkers at a turn duty of "
        f"{inputs.turn_duty:g}; the measured 2-core CPU machine ({inputs.cpu_audio_s_per_s:g} audio s/s) serves "
        f"{cpu_sessions}.",
        "",
        "| concurrent talkers | " + " | ".join(f"{r.talkers:,}" for r in rows) + " |",
        "|---|" + "---|" * len(rows),
        "| TTS sessions in flight | " + " | ".join(f"{r.relay_concurrency:,.0f}" for r in rows) + " |",
        "| ml.g5.xlarge instances | " + " | ".join(f"{r.instances:,}" for r in rows) + " |",
        "| relay Lambda concurrency | " + " | ".join(f"{r.relay_concurrency:,.0f}" for r in rows) + " |",
        "| AgentCore sessions | " + " | ".join(f"{r.agentcore_sessions:,}" for r in rows) + " |",
        "| DynamoDB reads/s (relay polls) | "
        + " | ".join(f"{r.relay_concurrency / inputs.relay_poll_interval_s:,.0f}" for r in rows)
        + " |",
        "| API Gateway messages/s | " + " | ".join(f"{r.apigw_messages_per_s:,.0f}" for r in rows) + " |",
        "| API Gateway new connections/s | " + " | ".join(f"{r.apigw_new_connections_per_s:,.2f}" for r in rows) + " |",
    ]
    for part in rows[0].cost_per_h:
        lines.append(f"| cost/h {part} | " + " | ".join(f"${r.cost_per_h[part]:,.2f}" for r in rows) + " |")
    lines.append("| **cost/h total** | " + " | ".join(f"**${r.total_cost_per_h:,.2f}**" for r in rows) + " |")
    lines.append("| quota that binds first | " + " | ".join(r.binding_quota(inputs) for r in rows) + " |")
    lines += ["", "Quota use (1.00 = at the default quota):", ""]
    names = list(rows[0].quota_use(inputs))
    lines.append("| quota | default | " + " | ".join(f"{r.talkers:,} talkers" for r in rows) + " |")
    lines.append("|---|---|" + "---|" * len(rows))
    defaults = [
        inputs.quota_instances,
        inputs.quota_lambda_concurrency,
        inputs.quota_agentcore_sessions,
        inputs.quota_apigw_requests_per_s,
        inputs.quota_apigw_new_connections_per_s,
    ]
    for name, default in zip(names, defaults, strict=True):
        lines.append(
            f"| {name} | {default:,} | " + " | ".join(f"{r.quota_use(inputs)[name]:,.2f}" for r in rows) + " |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m relay_infra.capacity", description=__doc__)
    defaults = CapacityInputs()
    for item in fields(CapacityInputs):
        parser.add_argument(f"--{item.name.replace('_', '-')}", type=type(getattr(defaults, item.name)))
    parser.add_argument("--talkers", type=int, nargs="+", default=[100, 1_000, 10_000])
    args = vars(parser.parse_args(argv))
    talkers = tuple(args.pop("talkers"))
    inputs = replace(defaults, **{k: v for k, v in args.items() if v is not None})
    print(render(inputs, talkers), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
