"""Fixtures of the CDK template tests: the whole app synthesized ONCE per session (jsii is slow).

The app is built with ``relay:lambdaBundling=sources`` (the functions' sources only: offline, fast); every
other setting is the deployment default, so the templates are those ``make synth`` produces.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


class SynthesizedApp:
    """The synthesized app: its stacks and each stack's CloudFormation template (as a dict)."""

    def __init__(self, stacks: Any, templates: dict[str, dict[str, Any]], outdir: Path) -> None:
        self.stacks = stacks
        self.templates = templates
        self.outdir = outdir

    def template(self, part: str) -> dict[str, Any]:
        """The template of the stack whose name ends with ``-<part>`` (e.g. ``"Gateway"``), or of an
        ``ImageUris-Speech`` / ``ImageUris-Agent`` variant stack."""
        return self.templates[part]

    def assertions(self, part: str) -> Any:
        from aws_cdk.assertions import Template  # noqa: PLC0415

        return Template.from_stack(getattr(self.stacks, _attribute(part)))

    def resources(self, part: str, resource_type: str) -> list[dict[str, Any]]:
        """Every resource of ``resource_type`` in ``part``'s template."""
        return [r for r in self.template(part)["Resources"].values() if r["Type"] == resource_type]


def synthesize(config: Any, outdir: Path) -> dict[str, dict[str, Any]]:
    """Synthesize ``config``'s whole app (cdk-nag on) into ``outdir``: ``{stack name: template}``."""
    from aws_cdk import App  # noqa: PLC0415

    from relay_infra.app import build_app  # noqa: PLC0415

    app, stacks = build_app(config, app=App(outdir=str(outdir)))
    app.synth()
    return {
        stack.stack_name: json.loads((outdir / f"{stack.stack_name}.template.json").read_text(encoding="utf-8"))
        for stack in stacks.all()
    }


def _attribute(part: str) -> str:
    return {"SpeechData": "speech_data"}.get(part, part.lower())


@pytest.fixture(scope="session")
def relay_app(tmp_path_factory: pytest.TempPathFactory) -> SynthesizedApp:
    from aws_cdk import App  # noqa: PLC0415
    from aws_cdk.assertions import Template  # noqa: PLC0415

    from relay_infra.app import build_app  # noqa: PLC0415
    from relay_infra.config import LambdaBundling, RelayConfig  # noqa: PLC0415

    outdir = tmp_path_factory.mktemp("cdk.out")
    app, stacks = build_app(RelayConfig(lambda_bundling=LambdaBundling.SOURCES), app=App(outdir=str(outdir)))
    variants = _image_uri_variant(app)  # in the same app: one synth (jsii is slow), cdk-nag checks them too
    app.synth()  # raises if cdk-nag leaves any finding unacknowledged
    templates = {
        stack.stack_name.rsplit("-", 1)[1]: dict(Template.from_stack(stack).to_json()) for stack in stacks.all()
    }
    templates.update({name: dict(Template.from_stack(stack).to_json()) for name, stack in variants.items()})
    return SynthesizedApp(stacks, templates, outdir)


TTS_IMAGE_URI = "111122223333.dkr.ecr.eu-west-1.amazonaws.com/kokoro-tts:gpu-1"
AGENT_IMAGE_URI = "111122223333.dkr.ecr.eu-west-1.amazonaws.com/kokoro-agent@sha256:abc"


def _image_uri_variant(app: Any) -> dict[str, Any]:
    """Speech and Agent stacks deployed from pushed images (``relay:ttsImageUri`` / ``relay:agentImageUri``),
    as templates ``ImageUris-Speech`` / ``ImageUris-Agent``."""
    from relay_infra.config import RelayConfig  # noqa: PLC0415
    from relay_infra.stacks.agent import AgentStack  # noqa: PLC0415
    from relay_infra.stacks.speech import SpeechDataStack, SpeechStack  # noqa: PLC0415

    config = RelayConfig(environment="uris", tts_image_uri=TTS_IMAGE_URI, agent_image_uri=AGENT_IMAGE_URI)
    speech_data = SpeechDataStack(app, "ImageUris-SpeechData", config=config)
    speech = SpeechStack(app, "ImageUris-Speech", config=config)
    agent = AgentStack(
        app,
        "ImageUris-Agent",
        config=config,
        endpoint_name="kokoro",
        endpoint_arn="arn:aws:sagemaker:eu-west-1:111122223333:endpoint/kokoro",
        access_logs=speech_data.access_logs,
    )
    return {"ImageUris-Speech": speech, "ImageUris-Agent": agent}
