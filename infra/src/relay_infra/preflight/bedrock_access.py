"""Check: the agent's Bedrock model (or cross-region inference profile) is offered and enabled for this account.

bedrock:GetFoundationModelAvailability says, for one model in this region, whether it is offered here, whether
the account is entitled and authorized, and whether its agreement (the model's offer terms) is accepted. An
inference profile id (``us.amazon.nova-lite-v1:0``) is looked up with bedrock:GetInferenceProfile and its model
checked the same way. Where GetFoundationModelAvailability is denied, bedrock:GetFoundationModel at least proves
the model exists here (a warning: access itself is then unverified).
"""

from __future__ import annotations

from typing import Any

from relay_infra.bedrock_models import is_inference_profile
from relay_infra.preflight.aws_errors import AwsError, describe, error_code, is_access_denied
from relay_infra.preflight.result import CheckResult, Status

NAME = "bedrock-model"
ACCESS_FIX = (
    "enable access to {model} in {region}: Bedrock console -> Model access (or Model catalog -> the model -> "
    "request access / accept its offer), then run make preflight again"
)


def base_model_id(model_id: str) -> str:
    """The foundation model an inference profile routes to: ``us.amazon.nova-lite-v1:0`` →
    ``amazon.nova-lite-v1:0``; a foundation model id is returned as it is."""
    return model_id.split(".", 1)[1] if is_inference_profile(model_id) else model_id


def check_bedrock_model(bedrock: Any, model_id: str, *, region: str | None) -> CheckResult:
    """Pass when the model (and, for a profile, the profile) is available and authorized in ``region``."""
    where = region or "this region"
    profile_note = ""
    if is_inference_profile(model_id):
        try:
            profile = bedrock.get_inference_profile(inferenceProfileIdentifier=model_id)
        except AwsError as error:
            if error_code(error) == "ResourceNotFoundException":
                return CheckResult(
                    NAME,
                    Status.FAIL,
                    f"inference profile {model_id} does not exist in {where}",
                    "use a profile offered in this region (aws bedrock list-inference-profiles) via "
                    "-c relay:modelId=..., or deploy to a region of the profile's geography",
                )
            return _unreadable(model_id, error)
        if profile.get("status") != "ACTIVE":
            return CheckResult(
                NAME,
                Status.FAIL,
                f"inference profile {model_id} is {profile.get('status')}",
                "use an ACTIVE inference profile (aws bedrock list-inference-profiles)",
            )
        profile_note = f"profile {model_id} ACTIVE ({len(profile.get('models', []))} regions), "
    model = base_model_id(model_id)
    fix = ACCESS_FIX.format(model=model, region=where)
    try:
        availability = bedrock.get_foundation_model_availability(modelId=model)
    except AwsError as error:
        if error_code(error) == "ResourceNotFoundException":
            return CheckResult(NAME, Status.FAIL, f"{profile_note}model {model} is not offered in {where}", fix)
        if is_access_denied(error):
            return _exists_only(bedrock, model, profile_note, error)
        return _unreadable(model_id, error)
    problems = _availability_problems(availability)
    if problems:
        return CheckResult(NAME, Status.FAIL, f"{profile_note}model {model}: {', '.join(problems)}", fix)
    return CheckResult(NAME, Status.PASS, f"{profile_note}model {model} available and authorized in {where}")


def _availability_problems(availability: dict[str, Any]) -> list[str]:
    problems = []
    if availability.get("regionAvailability") != "AVAILABLE":
        problems.append(f"region availability {availability.get('regionAvailability')}")
    if availability.get("entitlementAvailability") != "AVAILABLE":
        problems.append(f"entitlement {availability.get('entitlementAvailability')}")
    if availability.get("authorizationStatus") != "AUTHORIZED":
        problems.append(f"authorization {availability.get('authorizationStatus')}")
    agreement = availability.get("agreementAvailability", {})
    if agreement.get("status") != "AVAILABLE":
        detail = f" ({agreement['errorMessage']})" if agreement.get("errorMessage") else ""
        problems.append(f"agreement {agreement.get('status')}{detail}")
    return problems


def _exists_only(bedrock: Any, model: str, profile_note: str, denied: Exception) -> CheckResult:
    try:
        bedrock.get_foundation_model(modelIdentifier=model)
    except AwsError as error:
        return _unreadable(model, error)
    return CheckResult(
        NAME,
        Status.WARN,
        f"{profile_note}model {model} exists here; access not verified ({describe(denied)})",
        "allow bedrock:GetFoundationModelAvailability to verify, or check Bedrock console -> Model access",
    )


def _unreadable(model_id: str, error: Exception) -> CheckResult:
    return CheckResult(
        NAME,
        Status.FAIL,
        f"cannot check {model_id}: {describe(error)}",
        "allow bedrock:GetFoundationModelAvailability, bedrock:GetFoundationModel and bedrock:GetInferenceProfile "
        "for the caller, then run make preflight again",
    )
