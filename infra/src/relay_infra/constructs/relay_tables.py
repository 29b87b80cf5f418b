"""The gateway's two DynamoDB tables: connections (plus per-user counters and conversations) and turns.

Both: partition key ``pk`` (S), TTL on ``expires_at`` (N, epoch seconds), on-demand, point-in-time recovery,
encrypted with an AWS-owned key. Schema owned by relay_functions (docs/functions.md).
"""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

PARTITION_KEY = "pk"
TTL_ATTRIBUTE = "expires_at"


def _table(scope: Construct, construct_id: str) -> dynamodb.Table:
    return dynamodb.Table(
        scope,
        construct_id,
        partition_key=dynamodb.Attribute(name=PARTITION_KEY, type=dynamodb.AttributeType.STRING),
        time_to_live_attribute=TTL_ATTRIBUTE,
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True
        ),
        encryption=dynamodb.TableEncryption.AWS_MANAGED,
        removal_policy=RemovalPolicy.DESTROY,
    )


class RelayTables(Construct):
    """``connections`` and ``turns``; both hold only short-lived session state, so they go with the stack."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.connections = _table(self, "Connections")
        self.turns = _table(self, "Turns")
