"""cdk-nag (v3): the AwsSolutions checks on every synth, and the one way this app acknowledges a finding.

cdk-nag 3 runs as a CDK policy-validation plugin: ``app.synth()`` fails when any finding is left
unacknowledged (and writes ``policy-validation-report.json`` into the cloud assembly). An acknowledgment
always sits next to the resource it concerns (called where the resource is built) and carries its reason; it
covers that construct and everything beneath it. Findings that name a detail (IAM5's wildcards) are
acknowledged one by one: ``AwsSolutions-IAM5[Resource::*]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aws_cdk import Acknowledgment, App, CfnElement, Stack, Validations
from cdk_nag import AwsSolutionsChecks
from constructs import IConstruct


@dataclass(frozen=True, slots=True)
class Acknowledged:
    """One accepted cdk-nag finding: the rule id, why it is right here, and the details it covers (IAM5
    wildcards such as ``Resource::*``); no details = the rule as a whole."""

    rule: str
    reason: str
    details: Sequence[str] = ()

    def ids(self) -> list[str]:
        """The finding ids cdk-nag reports: ``Rule`` or ``Rule[detail]`` for each detail."""
        return [f"{self.rule}[{detail}]" for detail in self.details] or [self.rule]


def check_app(app: App) -> None:
    """Run the AwsSolutions pack over every stack of ``app`` at synth; unacknowledged findings fail the synth."""
    Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))


def acknowledge(resource: IConstruct, *findings: Acknowledged) -> None:
    """Acknowledge ``findings`` on ``resource`` and everything beneath it."""
    Validations.of(resource).acknowledge(
        *[Acknowledgment(id=finding_id, reason=item.reason) for item in findings for finding_id in item.ids()]
    )


XRAY_WILDCARD = Acknowledged(
    "AwsSolutions-IAM5",
    "X-Ray's PutTraceSegments/PutTelemetryRecords have no resource-level permissions: AWS requires Resource '*'.",
    ("Resource::*",),
)


def acknowledge_custom_resource_provider(stack: IConstruct, permission: str) -> None:
    """Acknowledge the findings on CDK's ``AwsCustomResource`` provider function of ``stack`` (if it has one): AWS's
    basic execution policy for its logs, and the Node.js runtime aws-cdk-lib picks. ``permission`` says what else
    the provider may do (for the reviewer)."""
    from aws_cdk import custom_resources as cr  # noqa: PLC0415 - only stacks with a custom resource need it

    provider = stack.node.try_find_child("AWS" + cr.AwsCustomResource.PROVIDER_FUNCTION_UUID.replace("-", ""))
    if provider is None:
        return
    acknowledge(
        provider,
        Acknowledged(
            "AwsSolutions-IAM4",
            "CDK's AwsCustomResource provider (one per stack, runs once per deployment) writes its logs "
            f"through AWS's basic execution policy; its only other permission is {permission}.",
            ("Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",),
        ),
        Acknowledged(
            "AwsSolutions-L1",
            "The AwsCustomResource provider's Node.js runtime is chosen by aws-cdk-lib, not by this app.",
        ),
    )


def logical_id(construct: IConstruct) -> str:
    """The CloudFormation logical id of ``construct``'s resource, as cdk-nag prints it in ``<Id.Arn>``."""
    child = construct.node.default_child if not isinstance(construct, CfnElement) else construct
    if not isinstance(child, CfnElement):
        raise TypeError(f"{construct.node.path} has no CloudFormation resource")
    return Stack.of(construct).get_logical_id(child)
