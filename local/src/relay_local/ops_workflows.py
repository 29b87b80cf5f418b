"""Run the ops state machines on this machine: moto's Step Functions executor, with every Lambda task running the
real handler in-process (used by ``relay ops ... --local`` and the tests).

moto (5.2) executes JSONPath definitions when ``execute_state_machine`` is on; its ``lambda:invoke`` integration
calls ``LambdaSimpleBackend.invoke`` (``lambda.use_docker = False``), which :class:`InProcessLambdas` replaces for
the duration of a ``with`` block so that the call lands in the handler named by the function ARN. A handler that
raises is reported the way the Lambda runtime reports it (``X-Amz-Function-Error`` with ``errorType`` = the
exception's class name), so ``Catch`` clauses see the same error names as in AWS.
"""

from __future__ import annotations

import importlib
import json
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Final

import boto3

from relay_functions.ops.placeholders import FUNCTION_HANDLERS

Handler = Callable[[dict[str, Any], object], Any]
REGION: Final = "us-east-1"
ACCOUNT: Final = "123456789012"
MOTO_CONFIG: Final[dict[str, Any]] = {
    "stepfunctions": {"execute_state_machine": True},
    "lambda": {"use_docker": False},
}
"""The ``mock_aws`` configuration the workflows need."""
POLL_S: Final = 0.1
"""How often :func:`run_workflow` asks whether the execution has finished."""


def function_arn(placeholder: str) -> str:
    """A local function ARN for a placeholder (``SmokeKokoroFunctionArn`` -> ``...:function:SmokeKokoro``)."""
    return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{placeholder.removesuffix('FunctionArn')}"


def load_handler(path: str) -> Handler:
    """The callable named by ``package.module.function``."""
    module, _, name = path.rpartition(".")
    handler: Handler = getattr(importlib.import_module(module), name)
    return handler


def default_handlers() -> dict[str, Handler]:
    """Function ARN -> the real handler (imported at its first call), for every task function of the workflows."""

    def lazy(path: str) -> Handler:
        def call(event: dict[str, Any], context: object) -> Any:
            return load_handler(path)(event, context)

        return call

    return {function_arn(p): lazy(path) for p, path in FUNCTION_HANDLERS.items()}


def function_values() -> dict[str, str]:
    """Placeholder values for every function ARN (see :func:`function_arn`)."""
    return {p: function_arn(p) for p in FUNCTION_HANDLERS}


LOCAL_NAMES: Final[dict[str, str]] = {
    "EndpointName": "kokoro-relay-tts",
    "EndpointConfigName": "kokoro-relay-tts-config",
    "ModelName": "kokoro-relay-tts-model",
    "AgentRuntimeId": "kokoro_relay_agent-AbCdEf1234",
    "WeightsBucketName": "kokoro-relay-weights-local",
    "HistoryBucketName": "kokoro-relay-history-local",
    "ConnectionsTableName": "kokoro-relay-connections-local",
    "TurnsTableName": "kokoro-relay-turns-local",
    "EcrRepositoryName": "kokoro-relay",
    "AuditReportBucketName": "kokoro-relay-audit-local",
    "AuditTopicArn": f"arn:aws:sns:{REGION}:{ACCOUNT}:kokoro-relay-audit",
}
"""Resource names of a deployment simulated in moto (the local runs and the tests)."""
LOCAL_TIMING: Final[dict[str, str]] = {
    "EndpointPollSeconds": "0",
    "EndpointMaxPolls": "3",
    "DeletePollSeconds": "0",
    "DeleteMaxPolls": "8",
}
PROJECT_TAGS: Final[Any] = [{"Key": "Project", "Value": "kokoro-relay"}]
LOCAL_INSTANCE_TYPE: Final = "ml.g4dn.xlarge"
"""moto rejects the production ml.g5.xlarge (the CDK configuration's default); the workflows never look at it."""
_MANIFEST_TYPE: Final = "application/vnd.docker.distribution.manifest.v2+json"


def local_values() -> dict[str, str]:
    """A value for every placeholder: local function ARNs, :data:`LOCAL_NAMES`, :data:`LOCAL_TIMING`."""
    return {**function_values(), **LOCAL_NAMES, **LOCAL_TIMING}


def seed_deployment(names: dict[str, str] = LOCAL_NAMES, *, endpoint_url: str | None = None) -> None:
    """Create in moto what a deployment leaves billable: the SageMaker model, endpoint config and endpoint, a
    versioned weights bucket holding several versions and a delete marker, a conversation-history bucket holding
    a conversation in Strands' layout, an ECR repository with an image; all tagged ``Project=kokoro-relay``.
    (AgentCore has no moto backend: the runtime is not simulated here.)"""
    sm = boto3.client("sagemaker", region_name=REGION, endpoint_url=endpoint_url)
    sm.create_model(
        ModelName=names["ModelName"],
        ExecutionRoleArn=f"arn:aws:iam::{ACCOUNT}:role/kokoro-relay-sagemaker",
        PrimaryContainer={"Image": f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/kokoro-relay:gpu"},
        Tags=PROJECT_TAGS,
    )
    variant: Any = {
        "VariantName": "AllTraffic",
        "ModelName": names["ModelName"],
        "InitialInstanceCount": 1,
        "InstanceType": LOCAL_INSTANCE_TYPE,
    }
    sm.create_endpoint_config(
        EndpointConfigName=names["EndpointConfigName"], ProductionVariants=[variant], Tags=PROJECT_TAGS
    )
    sm.create_endpoint(
        EndpointName=names["EndpointName"], EndpointConfigName=names["EndpointConfigName"], Tags=PROJECT_TAGS
    )
    s3 = boto3.client("s3", region_name=REGION, endpoint_url=endpoint_url)
    bucket = names["WeightsBucketName"]
    s3.create_bucket(Bucket=bucket)
    s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": PROJECT_TAGS})
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    for i in range(3):
        s3.put_object(Bucket=bucket, Key="kokoro/kokoro-v1_0.pth", Body=f"weights v{i}".encode())
    s3.put_object(Bucket=bucket, Key="kokoro/config.json", Body=b"{}")
    s3.delete_object(Bucket=bucket, Key="kokoro/config.json")  # a delete marker over an old version
    history = names["HistoryBucketName"]
    s3.create_bucket(Bucket=history)
    s3.put_bucket_tagging(Bucket=history, Tagging={"TagSet": PROJECT_TAGS})
    conversation = "conversations/session_kokoro-relay-conversation-0123456789abcdef0123456789abcdef/"
    for key in ("session.json", "agents/agent_voice/agent.json", "agents/agent_voice/messages/message_0.json"):
        s3.put_object(Bucket=history, Key=conversation + key, Body=b"{}")
    ecr = boto3.client("ecr", region_name=REGION, endpoint_url=endpoint_url)
    ecr.create_repository(repositoryName=names["EcrRepositoryName"], tags=PROJECT_TAGS)
    ecr.put_image(
        repositoryName=names["EcrRepositoryName"],
        imageManifest=json.dumps({"schemaVersion": 2, "mediaType": _MANIFEST_TYPE, "layers": []}),
        imageManifestMediaType=_MANIFEST_TYPE,
        imageTag="gpu",
    )


class InProcessLambdas:
    """While active, ``lambda:invoke`` tasks under moto run ``handlers[function ARN]`` in this process."""

    def __init__(self, handlers: Mapping[str, Handler]) -> None:
        self.handlers = dict(handlers)
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._saved: Any = None

    def _invoke(self, function_name: str, body: Any, response_headers: dict[str, str]) -> bytes:
        handler = self.handlers.get(function_name)
        if handler is None:
            response_headers["x-amz-function-error"] = "Unhandled"
            return json.dumps({"errorType": "ResourceNotFoundException", "errorMessage": function_name}).encode()
        event = json.loads(body) if body else {}
        self.calls.append((function_name, event))
        try:
            result = handler(event, None)
        except Exception as exc:  # noqa: BLE001 - reported to the workflow exactly as the Lambda runtime does
            response_headers["x-amz-function-error"] = "Unhandled"
            return json.dumps(
                {
                    "errorType": type(exc).__name__,
                    "errorMessage": str(exc),
                    "stackTrace": traceback.format_tb(exc.__traceback__)[-3:],
                }
            ).encode()
        return json.dumps(result).encode()

    def __enter__(self) -> InProcessLambdas:
        from moto.awslambda_simple.models import LambdaSimpleBackend  # noqa: PLC0415 - moto only where used

        runtime = self

        def invoke(  # noqa: PLR0917 - moto's signature
            backend: Any, function_name: str, qualifier: str | None, body: Any, headers: Any, response_headers: Any
        ) -> bytes:
            return runtime._invoke(function_name, body, response_headers)

        self._saved = LambdaSimpleBackend.invoke
        setattr(LambdaSimpleBackend, "invoke", invoke)  # noqa: B010 - replaced for the block, restored on exit
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        from moto.awslambda_simple.models import LambdaSimpleBackend  # noqa: PLC0415

        setattr(LambdaSimpleBackend, "invoke", self._saved)  # noqa: B010


@dataclass
class WorkflowRun:
    """A finished execution: ``status`` SUCCEEDED/FAILED/..., the output (JSON) or error and cause, and the
    names of the states entered, in order."""

    status: str
    output: Any = None
    error: str | None = None
    cause: str | None = None
    states: list[str] = field(default_factory=list)


class WorkflowTimeoutError(RuntimeError):
    """An execution did not finish within its deadline."""


def run_workflow(
    definition: str,
    execution_input: Mapping[str, Any],
    *,
    timeout_s: float = 120.0,
    on_state: Callable[[str], None] | None = None,
    endpoint_url: str | None = None,
) -> WorkflowRun:
    """Create the state machine (inside an active :func:`local_aws`, or on the :func:`moto_server` at
    ``endpoint_url``), run it once, wait for the end. ``on_state`` sees each state name as it is entered."""
    sfn = boto3.client("stepfunctions", region_name=REGION, endpoint_url=endpoint_url)
    name = f"ops-{uuid.uuid4().hex[:12]}"
    arn = sfn.create_state_machine(
        name=name, definition=definition, roleArn=f"arn:aws:iam::{ACCOUNT}:role/relay-ops-workflows"
    )["stateMachineArn"]
    execution = sfn.start_execution(stateMachineArn=arn, name=name, input=json.dumps(execution_input))["executionArn"]
    deadline = time.monotonic() + timeout_s
    seen = 0
    states: list[str] = []

    def follow() -> None:
        nonlocal seen
        events = sfn.get_execution_history(executionArn=execution, maxResults=1000)["events"]
        for event in events[seen:]:
            entered = event.get("stateEnteredEventDetails")
            if entered:
                states.append(entered["name"])
                if on_state is not None:
                    on_state(entered["name"])
        seen = len(events)

    while True:
        described = sfn.describe_execution(executionArn=execution)
        if described["status"] != "RUNNING":
            break
        if on_state is not None:
            follow()  # progress as it happens; otherwise read the history once at the end (less work for the executor)
        if time.monotonic() > deadline:
            sfn.stop_execution(executionArn=execution)
            raise WorkflowTimeoutError(f"the execution did not finish within {timeout_s:.0f} s (states: {states})")
        time.sleep(POLL_S)
    follow()
    output = described.get("output")
    return WorkflowRun(
        status=described["status"],
        output=json.loads(output) if output else None,
        error=described.get("error"),
        cause=described.get("cause"),
        states=states,
    )


@contextmanager
def local_aws() -> Iterator[None]:
    """moto in-process with the configuration the workflows need (S3, SageMaker, ECR, SNS, Step Functions...)."""
    from moto import mock_aws  # noqa: PLC0415

    with mock_aws(config=MOTO_CONFIG):  # type: ignore[call-overload]
        yield


@contextmanager
def moto_server() -> Iterator[str]:
    """moto over HTTP on a free loopback port, executing state machines, for workflows whose tasks must reach
    real local servers that themselves use boto3 (the relay stack's in-process functions, which an in-process
    ``mock_aws`` would intercept). Yields the endpoint URL; the Step Functions executor's own AWS calls go there
    (``MOTO_PORT``), and ``lambda:invoke`` still lands in :class:`InProcessLambdas` (same process)."""
    import os  # noqa: PLC0415

    from moto.core.config import default_user_config  # noqa: PLC0415
    from moto.server import ThreadedMotoServer  # noqa: PLC0415

    saved = {"stepfunctions": dict(default_user_config["stepfunctions"]), "lambda": dict(default_user_config["lambda"])}
    saved_port = os.environ.get("MOTO_PORT")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        os.environ["MOTO_PORT"] = str(port)
        default_user_config["stepfunctions"]["execute_state_machine"] = True
        default_user_config["lambda"]["use_docker"] = False
        yield f"http://{host}:{port}"
    finally:
        server.stop()
        default_user_config["stepfunctions"].update(saved["stepfunctions"])  # type: ignore[typeddict-item]
        default_user_config["lambda"].update(saved["lambda"])  # type: ignore[typeddict-item]
        if saved_port is None:
            os.environ.pop("MOTO_PORT", None)
        else:
            os.environ["MOTO_PORT"] = saved_port


__all__ = [
    "ACCOUNT",
    "LOCAL_NAMES",
    "LOCAL_TIMING",
    "MOTO_CONFIG",
    "REGION",
    "InProcessLambdas",
    "WorkflowRun",
    "WorkflowTimeoutError",
    "default_handlers",
    "function_arn",
    "function_values",
    "load_handler",
    "local_aws",
    "local_values",
    "moto_server",
    "run_workflow",
    "seed_deployment",
]
