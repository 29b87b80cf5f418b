"""``relay ops smoke-test | audit | cleanup | erase-user``: the operations workflows from the command line.

- ``--state-machine-arn ARN`` (the Ops stack's outputs) starts the deployed workflow in AWS with your credentials,
  prints each state as it is entered, and then the workflow's report.
- Without it, each command runs the same logic here: ``smoke-test`` runs the three checks against the local relay
  stack it starts (real model, agent through the local AgentCore data plane, gateway over a WebSocket); ``audit``
  audits this workspace's ``uv.lock`` (live OSV, or the bundled snapshot when OSV cannot be reached); ``cleanup``
  runs the cleanup state machine under moto over a simulated deployment (moto has no AgentCore control plane, so
  the runtime part is left out there); ``erase-user`` runs the erase-user state machine under moto over a simulated
  deployment where the user and another user each left two conversations, and shows the other's untouched.

Exit status: 0 when the workflow passed, 1 when it found or hit a problem, 2 for bad usage.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from relay_cli.cli_args import tts_session_url
from relay_core.cli_usage import non_empty
from relay_functions.ops.errors import OpsError
from relay_functions.ops.placeholders import definition_path, substitute

NAME = "ops"
PARTS = ("agent_runtime", "sagemaker_endpoint", "weights_bucket", "history_bucket", "ecr_repository")


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``relay ops`` and its subcommands."""
    parser = commands.add_parser(
        "ops", help="operations workflows: smoke test, dependency audit, cleanup, erase a user"
    )
    workflows = parser.add_subparsers(dest="workflow", required=True)

    smoke = workflows.add_parser("smoke-test", help="check the speech endpoint, the agent and the gateway end to end")
    smoke.add_argument("--local", action="store_true", help="against a local relay stack started here (the default)")
    smoke.add_argument(
        "--tts-url", type=tts_session_url, help="local: use this running TTS container instead of starting one"
    )
    _aws_options(smoke)
    smoke.set_defaults(run=smoke_test)

    audit = workflows.add_parser("audit", help="check every deployable's pinned dependencies against OSV advisories")
    audit.add_argument("--lock", type=existing_file, help="the uv.lock to audit (default: this workspace's)")
    audit.add_argument("--offline", action="store_true", help="use only the bundled advisory snapshot")
    _aws_options(audit)
    audit.set_defaults(run=audit_command)

    cleanup = workflows.add_parser("cleanup", help="remove the billable parts of a deployment, then take inventory")
    cleanup.add_argument("--local", action="store_true", help="run the workflow under moto over a simulated deployment")
    cleanup.add_argument(
        "--parts",
        type=non_empty,
        help=f"comma-separated parts to remove ({', '.join(PARTS)}); default: runtime, endpoint",
    )
    cleanup.add_argument("--all", action="store_true", help="every part, the weights bucket and the images included")
    cleanup.add_argument("--dry-run", action="store_true", help="only list what would be removed")
    _aws_options(cleanup)
    cleanup.set_defaults(run=cleanup_command)

    erase = workflows.add_parser(
        "erase-user", help="delete one user's stored conversations and their items in the gateway's tables"
    )
    erase.add_argument(
        "--user-id", type=non_empty, required=True, help="the user's id: the subject (sub) of their token"
    )
    erase.add_argument("--local", action="store_true", help="run the workflow under moto over a simulated deployment")
    _aws_options(erase)
    erase.set_defaults(run=erase_user_command)


def _aws_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--state-machine-arn", type=state_machine_arn, help="run the deployed workflow in AWS (an Ops stack output)"
    )
    parser.add_argument("--region", type=non_empty, help="AWS region of the state machine (default: from the ARN)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def state_machine_arn(text: str) -> str:
    """An argparse type: a Step Functions state machine ARN (``arn:aws:states:REGION:ACCOUNT:stateMachine:NAME``)."""
    parts = text.split(":")
    if len(parts) < 7 or parts[0] != "arn" or parts[2] != "states" or parts[5] != "stateMachine" or not parts[6]:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a state machine ARN: copy it from the Ops stack's outputs "
            "(arn:aws:states:REGION:ACCOUNT:stateMachine:NAME)"
        )
    return text


def existing_file(text: str) -> Path:
    """An argparse type: a file that exists."""
    path = Path(text)
    if not text.strip() or not path.is_file():
        raise argparse.ArgumentTypeError(f"{text!r} is not a file: give the path of a uv.lock")
    return path


def _quiet_task_logs() -> None:
    """The task functions log at INFO for CloudWatch; here the progress lines say enough."""
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _print_report(report: Any, *, as_json: bool) -> None:
    print(json.dumps(report, indent=2) if as_json else _pretty(report))


def _pretty(report: Any, indent: str = "") -> str:
    if isinstance(report, dict):
        lines = []
        for key, value in report.items():
            if isinstance(value, dict | list) and value:
                lines.append(f"{indent}{key}:")
                lines.append(_pretty(value, indent + "  "))
            else:
                lines.append(f"{indent}{key}: {value}")
        return "\n".join(lines)
    if isinstance(report, list):
        return "\n".join(f"{indent}- {json.dumps(item)}" for item in report)
    return f"{indent}{report}"


# --- AWS ---------------------------------------------------------------------------------------------------


def run_in_aws(arn: str, execution_input: dict[str, Any], *, region: str | None, as_json: bool) -> int:
    """Start the deployed workflow, print states as they are entered, then its report or failure. AWS refusing
    (no credentials, access denied, no such state machine) is one line on stderr and exit status 1."""
    from botocore.exceptions import BotoCoreError, ClientError  # noqa: PLC0415

    try:
        return _run_in_aws(arn, execution_input, region=region, as_json=as_json)
    except (BotoCoreError, ClientError) as exc:
        _say(f"relay ops: AWS refused ({exc}): check your AWS credentials (aws sts get-caller-identity), the region "
             "and the state machine ARN")  # fmt: skip
        return 1


def _run_in_aws(arn: str, execution_input: dict[str, Any], *, region: str | None, as_json: bool) -> int:
    import boto3  # noqa: PLC0415

    sfn = boto3.client("stepfunctions", region_name=region or arn.split(":")[3])
    execution = sfn.start_execution(stateMachineArn=arn, input=json.dumps(execution_input))["executionArn"]
    _say(f"started {execution}")
    seen = 0
    while True:
        described = sfn.describe_execution(executionArn=execution)
        events = sfn.get_execution_history(executionArn=execution, maxResults=1000)["events"]
        for event in events[seen:]:
            if "stateEnteredEventDetails" in event:
                _say(f"  -> {event['stateEnteredEventDetails']['name']}")
        seen = len(events)
        if described["status"] != "RUNNING":
            break
        time.sleep(2.0)
    if described["status"] == "SUCCEEDED":
        _print_report(json.loads(described.get("output") or "null"), as_json=as_json)
        return 0
    _say(f"{described['status']}: {described.get('error')}: {described.get('cause')}")
    return 1


# --- smoke test --------------------------------------------------------------------------------------------


def smoke_test(args: argparse.Namespace) -> int:
    if args.state_machine_arn:
        return run_in_aws(args.state_machine_arn, {"trigger": "cli"}, region=args.region, as_json=args.json)
    from relay_functions.ops.smoke_agent import agentcore_stream, check_agent  # noqa: PLC0415
    from relay_functions.ops.smoke_gateway import check_turn  # noqa: PLC0415
    from relay_functions.ops.smoke_kokoro import run_kokoro_checks  # noqa: PLC0415
    from relay_functions.ops.smoke_local import http_invocations, ws_session  # noqa: PLC0415
    from relay_functions.ops.smoke_report import build_report  # noqa: PLC0415
    from relay_local.relay_stack import AGENT_RUNTIME_ARN, RelayStack  # noqa: PLC0415

    _quiet_task_logs()
    _say("starting the local relay stack (speak model: the agent echoes its prompt; no LLM) ...")
    results: dict[str, Any] = {}
    with RelayStack(tts_url=args.tts_url) as stack:
        steps: list[tuple[str, Callable[[], Any]]] = [
            (
                "KokoroCheck",
                lambda: asyncio.run(
                    run_kokoro_checks(
                        ws_session(stack.tts_url),
                        http_invocations(stack.tts_url.replace("ws://", "http://").split("/invocations")[0]),
                    )
                ).to_json(),
            ),
            ("AgentCheck", lambda: check_agent(agentcore_stream(AGENT_RUNTIME_ARN)).to_json()),
            (
                "GatewayCheck",
                lambda: asyncio.run(check_turn(stack.gateway_url, stack.dev_token("smoke-test"))).to_json(),
            ),
        ]
        for step, run in steps:
            _say(f"{step} ...")
            started = time.perf_counter()
            try:
                results[step.removesuffix("Check").lower()] = run()
            except OpsError as exc:
                report = build_report(
                    {
                        "outcome": "failed",
                        "results": results,
                        "failure": {"step": step, "cause": f"{type(exc).__name__}: {exc}"},
                    }
                )
                _print_report(report, as_json=args.json)
                _say(f"smoke test FAILED at {step}: {exc}")
                return 1
            _say(f"{step} passed in {time.perf_counter() - started:.1f} s")
    report = build_report({"outcome": "passed", "results": results})
    _print_report(report if args.json else {"passed": True, "figures": report["figures"]}, as_json=args.json)
    _say("smoke test passed")
    return 0


# --- audit -------------------------------------------------------------------------------------------------


def _workspace_lock() -> Path:
    for folder in (Path.cwd(), *Path.cwd().parents, Path(__file__).resolve().parents[3]):
        if (folder / "uv.lock").is_file():
            return folder / "uv.lock"
    raise FileNotFoundError("no uv.lock here or above: pass --lock PATH")


def audit_command(args: argparse.Namespace) -> int:
    if args.state_machine_arn:
        return run_in_aws(args.state_machine_arn, {"trigger": "cli"}, region=args.region, as_json=args.json)
    from relay_functions.ops.advisory_sources import LiveOsv  # noqa: PLC0415 - the lock parser only when auditing
    from relay_functions.ops.audit import run_audit  # noqa: PLC0415

    try:
        lock = args.lock or _workspace_lock()
        _say(f"auditing {lock} ({'bundled snapshot only' if args.offline else 'live OSV, snapshot as fallback'}) ...")
        report = run_audit(lock.read_text(encoding="utf-8"), live=None if args.offline else LiveOsv())
    except (OSError, OpsError) as exc:
        _say(f"relay ops audit: {exc}")
        return 2
    print(json.dumps(report.to_json(), indent=2) if args.json else report.summary())
    return 0 if report.ok else 1


# --- cleanup -----------------------------------------------------------------------------------------------


def cleanup_request(args: argparse.Namespace) -> dict[str, Any]:
    parts: dict[str, bool] = {}
    if args.all:
        parts = dict.fromkeys(PARTS, True)
    elif args.parts:
        chosen = [p.strip() for p in args.parts.split(",") if p.strip()]
        parts = {p: p in chosen for p in PARTS}
        unknown = sorted(set(chosen) - set(PARTS))
        if unknown:
            raise ValueError(f"unknown part(s) {', '.join(unknown)}; the parts are {', '.join(PARTS)}")
    request: dict[str, Any] = {"dry_run": bool(args.dry_run)}
    if parts:
        request["parts"] = parts
    return request


def _moto_credentials(region: str) -> None:
    """The dummy credentials and region a local (moto) run needs, where none are set."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": region,
    }.items():
        os.environ.setdefault(name, value)


def cleanup_command(args: argparse.Namespace) -> int:
    try:
        request = cleanup_request(args)
    except ValueError as exc:
        _say(f"relay ops cleanup: {exc}")
        return 2
    if args.state_machine_arn:
        return run_in_aws(args.state_machine_arn, request, region=args.region, as_json=args.json)
    from relay_local.ops_workflows import (  # noqa: PLC0415 - moto only for the local run
        InProcessLambdas,
        default_handlers,
        local_aws,
        local_values,
        run_workflow,
        seed_deployment,
    )

    request.setdefault("parts", {p: p not in {"weights_bucket", "history_bucket", "ecr_repository"} for p in PARTS})
    request["parts"]["agent_runtime"] = False  # no AgentCore control plane in moto
    _quiet_task_logs()
    _say("local: a simulated deployment in moto (endpoint, config, model, weights and history buckets, ECR repository)")
    _moto_credentials("us-east-1")
    with local_aws(), InProcessLambdas(default_handlers()):
        seed_deployment()
        definition = substitute(definition_path("cleanup").read_text(), local_values())
        run = run_workflow(definition, request, on_state=lambda name: _say(f"  -> {name}"))
    if run.status != "SUCCEEDED":
        _say(f"{run.status}: {run.error}: {run.cause}")
        return 1
    _print_report(run.output, as_json=args.json)
    return 0


# --- erase one user ----------------------------------------------------------------------------------------

OTHER_USER = "another-user"
"""The local run's second user, whose data must be left as it was."""


def erase_user_command(args: argparse.Namespace) -> int:
    request = {"user_id": args.user_id}
    if args.state_machine_arn:
        return run_in_aws(args.state_machine_arn, request, region=args.region, as_json=args.json)
    import boto3  # noqa: PLC0415

    from relay_core.agent.conversation_ids import user_history_prefix  # noqa: PLC0415
    from relay_local.ops_workflows import (  # noqa: PLC0415 - moto only for the local run
        LOCAL_NAMES,
        REGION,
        InProcessLambdas,
        default_handlers,
        local_aws,
        local_values,
        run_workflow,
    )
    from relay_local.user_data import create_gateway_tables, seed_user  # noqa: PLC0415

    if args.user_id == OTHER_USER:
        _say(f"relay ops erase-user: --local keeps {OTHER_USER!r} for the user who must stay: erase another id")
        return 2
    _quiet_task_logs()
    _say(
        f"local: a simulated deployment in moto (history bucket, connections and turns tables) where {args.user_id!r} "
        f"and {OTHER_USER!r} each left two conversations; erasing {args.user_id!r} ..."
    )
    _moto_credentials(REGION)
    bucket, connections, turns = (
        LOCAL_NAMES[k] for k in ("HistoryBucketName", "ConnectionsTableName", "TurnsTableName")
    )
    with local_aws(), InProcessLambdas(default_handlers()):
        s3, db = boto3.client("s3", region_name=REGION), boto3.client("dynamodb", region_name=REGION)
        s3.create_bucket(Bucket=bucket)
        create_gateway_tables(db, connections, turns)
        for user in (args.user_id, OTHER_USER):
            seed_user(user, db, bucket=bucket, connections_table=connections, turns_table=turns)
        other_before = s3.list_objects_v2(Bucket=bucket, Prefix=user_history_prefix(OTHER_USER))["KeyCount"]
        definition = substitute(definition_path("erase_user").read_text(), local_values())
        run = run_workflow(definition, request, on_state=lambda name: _say(f"  -> {name}"))
        left = s3.list_objects_v2(Bucket=bucket, Prefix=user_history_prefix(args.user_id))["KeyCount"]
        other_after = s3.list_objects_v2(Bucket=bucket, Prefix=user_history_prefix(OTHER_USER))["KeyCount"]
    if run.status != "SUCCEEDED":
        _say(f"{run.status}: {run.error}: {run.cause}")
        return 1
    _say(f"left of the user's history: {left} objects; {OTHER_USER}'s: {other_after} of {other_before} kept")
    _print_report(run.output, as_json=args.json)
    return 0 if left == 0 and other_after == other_before else 1


__all__ = [
    "add_parser",
    "audit_command",
    "cleanup_command",
    "cleanup_request",
    "erase_user_command",
    "run_in_aws",
    "smoke_test",
]
