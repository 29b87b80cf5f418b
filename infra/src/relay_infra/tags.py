"""The project's tags, applied to every resource of every stack (the cleanup inventory selects by them)."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Tags
from constructs import IConstruct


def tag_everything(scope: IConstruct, tags: Mapping[str, str]) -> None:
    """Tag ``scope`` and every taggable resource beneath it."""
    for key, value in tags.items():
        Tags.of(scope).add(key, value)
