"""The Bedrock model check: availability and authorization of a model, or of an inference profile's model."""

from __future__ import annotations

from typing import Any

from tests.infra.preflight.stubs import REGION, Stubbed

from relay_infra.preflight.bedrock_access import base_model_id, check_bedrock_model
from relay_infra.preflight.result import Status

MODEL = "amazon.nova-lite-v1:0"
PROFILE = "us.amazon.nova-lite-v1:0"


def _availability(**overrides: Any) -> dict[str, Any]:
    response: dict[str, Any] = {
        "modelId": MODEL,
        "agreementAvailability": {"status": "AVAILABLE"},
        "authorizationStatus": "AUTHORIZED",
        "entitlementAvailability": "AVAILABLE",
        "regionAvailability": "AVAILABLE",
    }
    response.update(overrides)
    return response


def _profile(status: str = "ACTIVE") -> dict[str, Any]:
    return {
        "inferenceProfileName": "US Nova Lite",
        "inferenceProfileArn": f"arn:aws:bedrock:us-east-1:111122223333:inference-profile/{PROFILE}",
        "inferenceProfileId": PROFILE,
        "models": [
            {"modelArn": f"arn:aws:bedrock:{region}::foundation-model/{MODEL}"}
            for region in ("us-east-1", "us-west-2", "us-east-2")
        ],
        "status": status,
        "type": "SYSTEM_DEFINED",
    }


def test_base_model_id() -> None:
    assert base_model_id(PROFILE) == MODEL
    assert base_model_id(MODEL) == MODEL


def test_passes_for_an_enabled_model(stubbed: Stubbed) -> None:
    bedrock, stub = stubbed("bedrock")
    stub.add_response("get_foundation_model_availability", _availability(), {"modelId": MODEL})
    result = check_bedrock_model(bedrock, MODEL, region=REGION)
    assert result.status is Status.PASS
    assert result.found == f"model {MODEL} available and authorized in {REGION}"


def test_passes_for_an_active_profile_whose_model_is_enabled(stubbed: Stubbed) -> None:
    bedrock, stub = stubbed("bedrock")
    stub.add_response("get_inference_profile", _profile(), {"inferenceProfileIdentifier": PROFILE})
    stub.add_response("get_foundation_model_availability", _availability(), {"modelId": MODEL})
    result = check_bedrock_model(bedrock, PROFILE, region=REGION)
    assert result.status is Status.PASS
    assert result.found.startswith(f"profile {PROFILE} ACTIVE (3 regions), model {MODEL} available")


def test_fails_when_access_was_never_granted(stubbed: Stubbed) -> None:
    bedrock, stub = stubbed("bedrock")
    stub.add_response(
        "get_foundation_model_availability",
        _availability(
            authorizationStatus="NOT_AUTHORIZED",
            agreementAvailability={"status": "NOT_AVAILABLE", "errorMessage": "offer not accepted"},
        ),
    )
    result = check_bedrock_model(bedrock, MODEL, region=REGION)
    assert result.status is Status.FAIL
    assert "authorization NOT_AUTHORIZED" in result.found
    assert "agreement NOT_AVAILABLE (offer not accepted)" in result.found
    assert "Model access" in result.fix


def test_fails_for_a_model_not_offered_in_the_region(stubbed: Stubbed) -> None:
    bedrock, stub = stubbed("bedrock")
    stub.add_client_error("get_foundation_model_availability", "ResourceNotFoundException", "no such model")
    result = check_bedrock_model(bedrock, MODEL, region="eu-north-1")
    assert result.status is Status.FAIL
    assert result.found == f"model {MODEL} is not offered in eu-north-1"


def test_fails_for_an_unknown_profile(stubbed: Stubbed) -> None:
    bedrock, stub = stubbed("bedrock")
    stub.add_client_error("get_inference_profile", "ResourceNotFoundException", "no such profile")
    result = check_bedrock_model(bedrock, PROFILE, region="eu-west-1")
    assert result.status is Status.FAIL
    assert result.found == f"inference profile {PROFILE} does not exist in eu-west-1"
    assert "list-inference-profiles" in result.fix


def test_warns_when_only_the_models_existence_can_be_verified(stubbed: Stubbed) -> None:
    bedrock, stub = stubbed("bedrock")
    stub.add_client_error("get_foundation_model_availability", "AccessDeniedException", "denied")
    stub.add_response(
        "get_foundation_model",
        {"modelDetails": {"modelArn": f"arn:aws:bedrock:us-east-1::foundation-model/{MODEL}", "modelId": MODEL}},
        {"modelIdentifier": MODEL},
    )
    result = check_bedrock_model(bedrock, MODEL, region=REGION)
    assert result.status is Status.WARN
    assert "access not verified" in result.found


def test_fails_when_nothing_can_be_read(stubbed: Stubbed) -> None:
    bedrock, stub = stubbed("bedrock")
    stub.add_client_error("get_foundation_model_availability", "AccessDeniedException", "denied")
    stub.add_client_error("get_foundation_model", "AccessDeniedException", "denied")
    result = check_bedrock_model(bedrock, MODEL, region=REGION)
    assert result.status is Status.FAIL
    assert "bedrock:GetFoundationModelAvailability" in result.fix
