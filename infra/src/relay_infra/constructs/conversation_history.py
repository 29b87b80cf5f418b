"""The voice agent's conversation history: the bucket Strands' ``S3SessionManager`` keeps conversations in.

Private (SSE-S3, TLS only, public access blocked, access-logged), NOT versioned: a barge-in's cut rewrites a stored
reply and a conversation that starts over is deleted, and neither may leave the old words behind as a noncurrent
version. A lifecycle rule deletes every object :data:`~relay_core.agent.defaults.HISTORY_EXPIRY_DAYS` days after it
was written (the agent starts a conversation over before any of its objects can expire: ``voice_agent.history``).
Retained on ``cdk destroy`` like every bucket that holds data; the lifecycle rule goes on emptying it, and the
cleanup workflow deletes it when asked (``history_bucket``).
"""

from __future__ import annotations

from aws_cdk import CfnOutput, Duration, Fn, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from relay_core.agent.defaults import HISTORY_EXPIRY_DAYS, HISTORY_PREFIX
from relay_infra.nag import logical_id

HISTORY_ACTIONS = ("s3:GetObject", "s3:PutObject", "s3:DeleteObject")
"""What Strands' ``S3SessionManager`` does to a conversation's objects (HeadObject is GetObject's; DeleteObjects
checks DeleteObject per key)."""


def history_bucket_exports(agent_stack_name: str) -> tuple[str, str]:
    """The export names of the history bucket's name and ARN (``<Agent stack>-HistoryBucketName`` / ``...Arn``):
    fixed, so the Ops stack (the cleanup) and its cdk-nag acknowledgments can spell them. Their values never change:
    an update never replaces the bucket."""
    return f"{agent_stack_name}-HistoryBucketName", f"{agent_stack_name}-HistoryBucketArn"


def import_history_bucket(scope: Construct, agent_stack_name: str) -> s3.IBucket:
    """The history bucket in a stack other than the Agent stack, through :func:`history_bucket_exports`."""
    name_export, arn_export = history_bucket_exports(agent_stack_name)
    return s3.Bucket.from_bucket_attributes(
        scope, "ConversationHistory", bucket_name=Fn.import_value(name_export), bucket_arn=Fn.import_value(arn_export)
    )


class ConversationHistory(Construct):
    """The history bucket (its name and ARN exported: :func:`history_bucket_exports`), and :meth:`statements` for
    the agent's role: its prefix only."""

    def __init__(self, scope: Construct, construct_id: str, *, access_logs: s3.IBucket) -> None:
        super().__init__(scope, construct_id)
        self.prefix = HISTORY_PREFIX
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            versioned=False,
            server_access_logs_bucket=access_logs,
            server_access_logs_prefix="conversation-history/",
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="ExpireConversations",
                    expiration=Duration.days(HISTORY_EXPIRY_DAYS),
                    abort_incomplete_multipart_upload_after=Duration.days(1),
                )
            ],
            removal_policy=RemovalPolicy.RETAIN,
        )
        name_export, arn_export = history_bucket_exports(Stack.of(self).stack_name)
        CfnOutput(self, "BucketNameExport", value=self.bucket.bucket_name, export_name=name_export)
        CfnOutput(self, "BucketArnExport", value=self.bucket.bucket_arn, export_name=arn_export)

    def statements(self) -> list[iam.PolicyStatement]:
        """What the agent's role may do: read, write and delete the conversations under the prefix, and list
        that prefix (without it a missing object reads as AccessDenied, not as absent); nothing else."""
        return [
            iam.PolicyStatement(
                actions=list(HISTORY_ACTIONS), resources=[self.bucket.arn_for_objects(f"{self.prefix}*")]
            ),
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[self.bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{self.prefix}*"]}},
            ),
        ]

    def wildcard_finding(self) -> str:
        """The cdk-nag IAM5 detail of the object statement's wildcard (one folder per conversation, made at run
        time), for the acknowledgment on the role that holds it."""
        return f"Resource::<{logical_id(self.bucket)}.Arn>/{self.prefix}*"


__all__ = ["HISTORY_ACTIONS", "ConversationHistory", "history_bucket_exports", "import_history_bucket"]
