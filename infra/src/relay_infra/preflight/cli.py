"""``relay deploy preflight`` / ``python -m relay_infra.preflight``: its arguments and what it runs.

Reads the deployment's config the way the CDK app does (infra/cdk.json's context, overlaid with ``-c key=value``),
builds a boto3 session (``--profile``, ``--region``, or the usual environment and config files), runs every
check, prints one line per check and a verdict, and returns the exit status. Importing this module loads
neither boto3 nor aws_cdk.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from relay_infra.preflight.runner import Target

NAME_WIDTH = 14


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The preflight's options, shared by ``relay deploy preflight`` and ``python -m relay_infra.preflight``."""
    parser.add_argument(
        "-c",
        "--context",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="CDK context over infra/cdk.json, as for make deploy (e.g. -c relay:ttsInstanceType=ml.g6.xlarge)",
    )
    parser.add_argument("--profile", help="AWS profile (default: AWS_PROFILE or the default profile)")
    parser.add_argument("--region", help="AWS region (default: AWS_REGION or the profile's region)")
    parser.add_argument("--docker", default="docker", help="the docker command to check (default: docker)")


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run the preflight for parsed ``args``; print to ``out`` (stdout); 0 when the target is ready."""
    stream = out or sys.stdout
    target = _target(list(args.context), stream)
    if target is None:
        return 1
    import boto3  # noqa: PLC0415 - only when the checks run
    from botocore.exceptions import BotoCoreError  # noqa: PLC0415

    from relay_infra.preflight.runner import report, run_checks  # noqa: PLC0415

    try:
        session = boto3.session.Session(profile_name=args.profile, region_name=args.region)
    except BotoCoreError as error:  # e.g. ProfileNotFound
        print(
            f"✗ {'credentials':<{NAME_WIDTH}} {error}; fix: name an existing profile (aws configure list-profiles)",
            file=stream,
        )
        return 1
    lines, status = report(run_checks(session, target, docker_command=args.docker))
    for line in lines:
        print(line, file=stream)
    return status


def _target(context: list[str], stream: TextIO) -> Target | None:
    """The :class:`~relay_infra.preflight.runner.Target` of infra/cdk.json + ``context``; None (after printing
    one line saying why) when the config cannot be read."""
    # aws_cdk (imported by relay_infra.config) starts Node.js; its deprecation banner is not a preflight finding.
    os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
    try:
        from relay_infra.config import ConfigError, ContextValues, RelayConfig  # noqa: PLC0415
        from relay_infra.paths import REPO_ROOT  # noqa: PLC0415
        from relay_infra.preflight.runner import Target  # noqa: PLC0415
    except Exception as error:  # noqa: BLE001 - jsii raises plain Exceptions when Node.js is missing
        print(
            f"✗ {'config':<{NAME_WIDTH}} cannot load relay_infra.config ({error}); fix: install Node.js >= 20",
            file=stream,
        )
        return None
    try:
        cdk_json = json.loads((REPO_ROOT / "infra" / "cdk.json").read_text(encoding="utf-8"))
        values = ContextValues.from_cdk_json(cdk_json, [f"--context={item}" for item in context])
        return Target.from_config(RelayConfig.from_context(values))
    except (ConfigError, OSError, ValueError) as error:
        print(f"✗ {'config':<{NAME_WIDTH}} {error}; fix: correct that value in infra/cdk.json or its -c", file=stream)
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m relay_infra.preflight", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))
