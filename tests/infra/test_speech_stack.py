"""Speech stacks: the weights-cache bucket, the GPU endpoint, its role and its session-based autoscaling."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from aws_cdk.assertions import Match

from relay_core.tts.metrics import DIMENSION, NAMESPACE, OPEN_SESSIONS, QUEUED_SESSIONS, SESSION_GAUGE_INTERVAL_S
from relay_infra.constructs.session_scaling import QUEUE_MAX_STEP, queue_scaling_steps

if TYPE_CHECKING:
    from tests.infra.conftest import SynthesizedApp


def test_weights_bucket_is_versioned_encrypted_private_and_tls_only(relay_app: SynthesizedApp) -> None:
    template = relay_app.assertions("SpeechData")
    template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "VersioningConfiguration": {"Status": "Enabled"},
            "BucketEncryption": Match.object_like({"ServerSideEncryptionConfiguration": Match.any_value()}),
            "PublicAccessBlockConfiguration": {
                "BlockPublicAcls": True,
                "BlockPublicPolicy": True,
                "IgnorePublicAcls": True,
                "RestrictPublicBuckets": True,
            },
            "LoggingConfiguration": Match.object_like({"LogFilePrefix": "weights-cache/"}),
        },
    )
    # retained on destroy, so CloudFormation names it: a deploy after a destroy never collides with it
    assert all("BucketName" not in b["Properties"] for b in relay_app.resources("SpeechData", "AWS::S3::Bucket"))
    policies = relay_app.resources("SpeechData", "AWS::S3::BucketPolicy")
    denies = [
        s
        for p in policies
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if s["Effect"] == "Deny" and s.get("Condition", {}).get("Bool", {}).get("aws:SecureTransport") == "false"
    ]
    assert len(denies) == len(relay_app.resources("SpeechData", "AWS::S3::Bucket"))


def test_endpoint_runs_the_configured_gpu_instance_with_weights_from_s3(relay_app: SynthesizedApp) -> None:
    template = relay_app.assertions("Speech")
    template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {"ProductionVariants": [Match.object_like({"InstanceType": "ml.g5.xlarge", "InitialInstanceCount": 1})]},
    )
    template.has_resource_properties(
        "AWS::SageMaker::Model",
        {
            "PrimaryContainer": Match.object_like(
                {
                    "ModelDataSource": {
                        "S3DataSource": Match.object_like({"S3DataType": "S3Prefix", "CompressionType": "None"})
                    },
                    "Environment": Match.object_like({"KOKORO_ENGINE": "torch", "KOKORO_WEIGHTS_DIR": "/opt/ml/model"}),
                }
            )
        },
    )
    template.resource_count_is("AWS::SageMaker::Endpoint", 1)


def test_autoscaling_tracks_concurrent_sessions_not_cpu(relay_app: SynthesizedApp) -> None:
    template = relay_app.assertions("Speech")
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget",
        {
            "MinCapacity": 1,
            "MaxCapacity": 4,
            "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
            "ServiceNamespace": "sagemaker",
        },
    )
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        {
            "PolicyType": "TargetTrackingScaling",
            "TargetTrackingScalingPolicyConfiguration": Match.object_like(
                {
                    "TargetValue": 24,
                    "PredefinedMetricSpecification": {
                        "PredefinedMetricType": "SageMakerVariantConcurrentRequestsPerModelHighResolution"
                    },
                }
            ),
        },
    )
    assert "CPU" not in json.dumps(relay_app.resources("Speech", "AWS::ApplicationAutoScaling::ScalingPolicy"))


ENDPOINT = "kokoro-relay-dev-tts"


def _session_query(name: str) -> dict[str, Any]:
    return {
        "MetricStat": {
            "Metric": {
                "Namespace": NAMESPACE,
                "MetricName": name,
                "Dimensions": [{"Name": DIMENSION, "Value": ENDPOINT}],
            },
            "Stat": "Average",
        },
        "ReturnData": False,
    }


def test_autoscaling_also_tracks_the_sessions_the_container_counts(relay_app: SynthesizedApp) -> None:
    """Beside the built-in metric, a target tracking policy on the container's own gauges: the Average of
    SessionsOpen + SessionsQueued (the mean of every instance's samples: sessions per instance), at the same target,
    on the dimension value the container writes (KOKORO_METRICS_ENDPOINT is the endpoint's name)."""
    policies = relay_app.resources("Speech", "AWS::ApplicationAutoScaling::ScalingPolicy")
    tracked = [
        p["Properties"]["TargetTrackingScalingPolicyConfiguration"]
        for p in policies
        if "CustomizedMetricSpecification" in p["Properties"].get("TargetTrackingScalingPolicyConfiguration", {})
    ]
    assert len(tracked) == 1
    (config,) = tracked
    assert config["TargetValue"] == 24
    assert config.get("DisableScaleIn") is not True  # it must vote on scale-in, or an under-counting metric wins
    assert (config["ScaleOutCooldown"], config["ScaleInCooldown"]) == (60, 600)
    queries = {q["Id"]: q for q in config["CustomizedMetricSpecification"]["Metrics"]}
    returned = [q for q in queries.values() if q["ReturnData"]]
    assert len(returned) == 1
    terms = set(re.findall(r"[a-z_]+", returned[0]["Expression"]))
    assert returned[0]["Expression"].count("+") == 1 and len(terms) == 2
    for term in terms:
        name = queries[term]["MetricStat"]["Metric"]["MetricName"]
        assert {key: queries[term][key] for key in ("MetricStat", "ReturnData")} == _session_query(name)
    assert {queries[t]["MetricStat"]["Metric"]["MetricName"] for t in terms} == {OPEN_SESSIONS, QUEUED_SESSIONS}
    models = relay_app.resources("Speech", "AWS::SageMaker::Model")
    assert {m["Properties"]["PrimaryContainer"]["Environment"]["KOKORO_METRICS_ENDPOINT"] for m in models} == {ENDPOINT}
    relay_app.assertions("Speech").has_resource_properties("AWS::SageMaker::Endpoint", {"EndpointName": ENDPOINT})


def test_sessions_waiting_scale_the_fleet_out_on_the_containers_10_second_samples(relay_app: SynthesizedApp) -> None:
    """A step policy, out only, on an alarm over SessionsQueued summed per 10 s (the container's interval): 2 of 3
    periods with a session waiting add one instance per 24 sessions waiting, at most 3, with a 5 min cooldown."""
    alarms = [
        a["Properties"]
        for a in relay_app.resources("Speech", "AWS::CloudWatch::Alarm")
        if a["Properties"].get("MetricName") == QUEUED_SESSIONS
    ]
    assert len(alarms) == 1  # no scale-in alarm: target tracking alone decides scale-in
    (alarm,) = alarms
    assert alarm["Namespace"] == NAMESPACE
    assert alarm["Dimensions"] == [{"Name": DIMENSION, "Value": ENDPOINT}]
    assert alarm["Period"] == SESSION_GAUGE_INTERVAL_S == 10
    assert alarm["Statistic"] == "Sum"
    assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("GreaterThanOrEqualToThreshold", 1)
    assert (alarm["DatapointsToAlarm"], alarm["EvaluationPeriods"]) == (2, 3)
    (action,) = alarm["AlarmActions"]
    resources = relay_app.template("Speech")["Resources"]
    policy = resources[action["Ref"]]["Properties"]
    assert policy["PolicyType"] == "StepScaling"
    step = policy["StepScalingPolicyConfiguration"]
    assert (step["AdjustmentType"], step["Cooldown"]) == ("ChangeInCapacity", 300)
    adjustments = sorted(step["StepAdjustments"], key=lambda a: a["MetricIntervalLowerBound"])
    assert [a["ScalingAdjustment"] for a in adjustments] == [1, 2, 3]
    # bounds relative to the threshold (1): [1, 24) +1, [24, 48) +2, 48 and more +3
    assert [(a["MetricIntervalLowerBound"], a.get("MetricIntervalUpperBound")) for a in adjustments] == [
        (0, 23),
        (23, 47),
        (47, None),
    ]
    assert policy["ScalingTargetId"] == {"Ref": _only(relay_app, "AWS::ApplicationAutoScaling::ScalableTarget")}


def test_the_containers_emf_lines_are_what_the_policies_query(relay_app: SynthesizedApp) -> None:
    """The record the container writes (relay_core's own EMF builder, fed the endpoint name the CDK app sets)
    declares the namespace, dimension and names the session policies query, high-resolution; SageMaker ships it
    to /aws/sagemaker/Endpoints/<endpoint>, where the execution role may write, and CloudWatch Logs extracts it."""
    from relay_core.tts.metrics import sessions_emf_record  # noqa: PLC0415

    (model,) = relay_app.resources("Speech", "AWS::SageMaker::Model")
    written = model["Properties"]["PrimaryContainer"]["Environment"]["KOKORO_METRICS_ENDPOINT"]
    record = sessions_emf_record(written, open_sessions=3, queued_sessions=1, now_ms=0)
    (directive,) = record["_aws"]["CloudWatchMetrics"]
    assert directive["Dimensions"] == [[DIMENSION]]
    assert {m["Name"]: m["StorageResolution"] for m in directive["Metrics"]} == {OPEN_SESSIONS: 1, QUEUED_SESSIONS: 1}
    queried = set()
    for policy in relay_app.resources("Speech", "AWS::ApplicationAutoScaling::ScalingPolicy"):
        tracking = policy["Properties"].get("TargetTrackingScalingPolicyConfiguration", {})
        for query in tracking.get("CustomizedMetricSpecification", {}).get("Metrics", []):
            if "MetricStat" in query:
                metric = query["MetricStat"]["Metric"]
                queried.add((metric["Namespace"], metric["MetricName"], json.dumps(metric["Dimensions"])))
    for alarm in relay_app.resources("Speech", "AWS::CloudWatch::Alarm"):
        props = alarm["Properties"]
        queried.add((props["Namespace"], props["MetricName"], json.dumps(props["Dimensions"])))
    dimensions = json.dumps([{"Name": DIMENSION, "Value": record[DIMENSION]}])
    assert queried == {(directive["Namespace"], m["Name"], dimensions) for m in directive["Metrics"]}
    logs = [
        st
        for p in relay_app.resources("Speech", "AWS::IAM::Policy")
        for st in p["Properties"]["PolicyDocument"]["Statement"]
        if "logs:PutLogEvents" in _list(st["Action"])
    ]
    assert logs and all({"logs:CreateLogStream", "logs:PutLogEvents"} <= set(_list(st["Action"])) for st in logs)
    assert all("log-group:/aws/sagemaker/Endpoints/*" in json.dumps(st["Resource"]) for st in logs)


def test_queue_steps_stay_valid_for_any_sessions_per_instance() -> None:
    """No two steps share a bound (Application Auto Scaling refuses overlaps), whatever the target."""
    for per_instance in (1, 2, 24, 500):
        steps = queue_scaling_steps(per_instance)
        lowers = [s.lower for s in steps if s.lower is not None]
        assert lowers == sorted(set(lowers)) and lowers[0] == 1
        assert [s.change for s in steps] == list(range(len(steps)))
        assert max(s.change for s in steps) <= QUEUE_MAX_STEP
    assert [s.lower for s in queue_scaling_steps(1)] == [None, 1, 2]


def _only(relay_app: SynthesizedApp, resource_type: str) -> str:
    resources: dict[str, dict[str, Any]] = relay_app.template("Speech")["Resources"]
    (logical_id,) = [k for k, r in resources.items() if r["Type"] == resource_type]
    return logical_id


def test_capacity_doc_says_whether_the_scaling_metric_counts_a_session(relay_app: SynthesizedApp) -> None:
    """Every metric the fleet scales on is named in docs/capacity.md, which says what AWS documents about it for a
    bidirectional session (nothing settles it), how to measure it, and why the design holds either way."""
    from relay_infra.paths import REPO_ROOT  # noqa: PLC0415

    text = " ".join((REPO_ROOT / "docs" / "capacity.md").read_text(encoding="utf-8").split())
    names = set()
    for policy in relay_app.resources("Speech", "AWS::ApplicationAutoScaling::ScalingPolicy"):
        tracking = policy["Properties"].get("TargetTrackingScalingPolicyConfiguration", {})
        if "PredefinedMetricSpecification" in tracking:
            names.add(tracking["PredefinedMetricSpecification"]["PredefinedMetricType"])
        for query in tracking.get("CustomizedMetricSpecification", {}).get("Metrics", []):
            if "MetricStat" in query:
                names.add(query["MetricStat"]["Metric"]["MetricName"])
    for alarm in relay_app.resources("Speech", "AWS::CloudWatch::Alarm"):
        names.add(alarm["Properties"]["MetricName"])
    assert {"SageMakerVariantConcurrentRequestsPerModelHighResolution", OPEN_SESSIONS, QUEUED_SESSIONS} <= names
    for name in names:
        assert f"`{name}`" in text
    assert "Does the built-in metric count a session? AWS's documentation does not say." in text
    assert "docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling-add-code-define.html" in text
    assert "`InvokeEndpointWithBidirectionalStream`" in text
    assert "`KOKORO_MAX_SESSIONS`" in text  # what keeps it correct when the metric under-reports


def test_execution_role_reads_only_its_weights_prefix(relay_app: SynthesizedApp) -> None:
    statements = [
        s
        for p in relay_app.resources("Speech", "AWS::IAM::Policy")
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    s3_statements = [s for s in statements if any(a.startswith("s3:") for a in _list(s["Action"]))]
    assert s3_statements
    for statement in s3_statements:
        assert all(not a.startswith(("s3:Put", "s3:Delete")) for a in _list(statement["Action"]))
        rendered = json.dumps(statement["Resource"])
        assert '"Fn::ImportValue": "KokoroRelay-dev-WeightsBucketArn"' in rendered
        object_resources = [r for r in _list(statement["Resource"]) if "/" in json.dumps(r)]
        assert all("/kokoro-82m/*" in json.dumps(r) for r in object_resources)
    ecr = [s for s in statements if "ecr:BatchGetImage" in _list(s["Action"])]
    assert ecr
    assert all(s["Resource"] != "*" for s in ecr)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_the_variant_routes_sessions_to_the_least_busy_instance_and_keeps_its_scaled_capacity(
    relay_app: SynthesizedApp,
) -> None:
    (config,) = relay_app.resources("Speech", "AWS::SageMaker::EndpointConfig")
    (variant,) = config["Properties"]["ProductionVariants"]
    assert variant["RoutingConfig"] == {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"}
    assert variant["InferenceAmiVersion"] == "al2023-ami-sagemaker-inference-gpu-4-1"
    (endpoint,) = relay_app.resources("Speech", "AWS::SageMaker::Endpoint")
    assert endpoint["Properties"]["RetainAllVariantProperties"] is True
    assert endpoint["Properties"]["EndpointName"] == "kokoro-relay-dev-tts"


def test_model_and_config_are_named_lowercase_and_renamed_with_their_properties(relay_app: SynthesizedApp) -> None:
    (model,) = relay_app.resources("Speech", "AWS::SageMaker::Model")
    (config,) = relay_app.resources("Speech", "AWS::SageMaker::EndpointConfig")
    for name in (model["Properties"]["ModelName"], config["Properties"]["EndpointConfigName"]):
        assert re.fullmatch(r"kokoro-relay-dev-tts-[0-9a-f]{12}", name)
    (uris_model,) = relay_app.resources("ImageUris-Speech", "AWS::SageMaker::Model")
    assert uris_model["Properties"]["ModelName"].startswith("kokoro-relay-uris-tts-")
    assert uris_model["Properties"]["ModelName"] != model["Properties"]["ModelName"]


def test_endpoint_updates_blue_green_and_drains_the_old_fleet_for_a_whole_turn(relay_app: SynthesizedApp) -> None:
    """With no DeploymentConfig the old fleet goes as soon as traffic flips (TerminationWaitInSeconds 0) and the
    speech of every open turn is cut: the template asks for a drain as long as the relay's timeout (a turn's longest
    life), and a deployment timeout SageMaker accepts (600..28800, larger than the waits)."""
    from relay_infra.config import RelayConfig  # noqa: PLC0415

    (endpoint,) = relay_app.resources("Speech", "AWS::SageMaker::Endpoint")
    policy = endpoint["Properties"]["DeploymentConfig"]
    assert set(policy) == {"BlueGreenUpdatePolicy"}
    blue_green = policy["BlueGreenUpdatePolicy"]
    assert blue_green["TrafficRoutingConfiguration"] == {"Type": "ALL_AT_ONCE", "WaitIntervalInSeconds": 0}
    assert blue_green["TerminationWaitInSeconds"] == RelayConfig().relay_timeout_s
    assert 0 < blue_green["TerminationWaitInSeconds"] <= 3600
    assert blue_green["TerminationWaitInSeconds"] < blue_green["MaximumExecutionTimeoutInSeconds"] <= 28800


def test_autoscaling_can_be_left_out_for_an_instance_type_change() -> None:
    """relay:ttsAutoscaling=false (the first of the two deploys that change the instance type) leaves the variant
    out of Application Auto Scaling; the endpoint keeps its name; preflight names the same endpoint."""
    from aws_cdk import App  # noqa: PLC0415
    from aws_cdk.assertions import Template  # noqa: PLC0415

    from relay_infra.config import RelayConfig  # noqa: PLC0415
    from relay_infra.preflight.runner import Target  # noqa: PLC0415
    from relay_infra.stacks.speech import SpeechStack  # noqa: PLC0415

    image = "111122223333.dkr.ecr.us-east-1.amazonaws.com/kokoro:gpu"
    for autoscaling in (True, False):
        config = RelayConfig(tts_autoscaling=autoscaling, tts_image_uri=image)
        resources = Template.from_stack(SpeechStack(App(), "Speech", config=config)).to_json()["Resources"]
        types = {r["Type"] for r in resources.values()}
        scaling = {"AWS::ApplicationAutoScaling::ScalableTarget", "AWS::ApplicationAutoScaling::ScalingPolicy"}
        assert (scaling <= types) is autoscaling
        assert bool(scaling & types) is autoscaling
        (endpoint,) = [r for r in resources.values() if r["Type"] == "AWS::SageMaker::Endpoint"]
        assert endpoint["Properties"]["EndpointName"] == Target.from_config(config).endpoint_name
        assert Target.from_config(config).autoscaling is autoscaling


def test_docs_give_the_two_deploys_that_change_the_instance_type() -> None:
    from relay_infra.paths import REPO_ROOT  # noqa: PLC0415

    text = " ".join((REPO_ROOT / "docs" / "deploy.md").read_text(encoding="utf-8").split())
    assert "Change the instance type" in text
    assert "`relay:ttsAutoscaling`" in text
    assert "| `instance-type` |" in text


def test_docs_state_the_quota_an_update_needs() -> None:
    """The quota step and the preflight table say what the blue/green update needs: twice ttsMaxInstances."""
    from relay_infra.paths import REPO_ROOT  # noqa: PLC0415

    text = " ".join((REPO_ROOT / "docs" / "deploy.md").read_text(encoding="utf-8").split())
    assert "≥ 2 × `relay:ttsMaxInstances`" in text
    assert "TerminationWaitInSeconds" in text


def test_docs_name_the_endpoint_update_the_template_asks_for(relay_app: SynthesizedApp) -> None:
    """docs/deploy.md says how SageMaker updates the endpoint: rolling only when the template asks for it, else
    SageMaker's default, blue/green with all-at-once traffic shifting."""
    from relay_infra.paths import REPO_ROOT  # noqa: PLC0415

    (endpoint,) = [
        r["Properties"]
        for r in relay_app.template("Speech")["Resources"].values()
        if r["Type"] == "AWS::SageMaker::Endpoint"
    ]
    policy = endpoint.get("DeploymentConfig", {})
    text = " ".join((REPO_ROOT / "docs" / "deploy.md").read_text(encoding="utf-8").split())
    if "RollingUpdatePolicy" in policy:
        assert "rolling" in text
    else:
        assert "blue/green" in text
        assert "rolling update" not in text.lower()
