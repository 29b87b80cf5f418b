"""Reading IAM statements out of synthesized templates (shared by the infra tests)."""

from __future__ import annotations

import json
from typing import Any


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def statements(template: dict[str, Any], *, role_path_part: str | None = None) -> list[dict[str, Any]]:
    """Every statement of every AWS::IAM::Policy (and inline role policy) in ``template``; with
    ``role_path_part``, only policies whose logical id contains it (e.g. ``"SendMessage"``)."""
    found = []
    for logical_id, resource in template["Resources"].items():
        if role_path_part is not None and role_path_part not in logical_id:
            continue
        if resource["Type"] == "AWS::IAM::Policy":
            found.extend(resource["Properties"]["PolicyDocument"]["Statement"])
        if resource["Type"] == "AWS::IAM::Role":
            for policy in resource["Properties"].get("Policies", []):
                found.extend(policy["PolicyDocument"]["Statement"])
    return found


def granting(template: dict[str, Any], action: str, **kwargs: Any) -> list[dict[str, Any]]:
    """Statements whose actions include ``action`` exactly."""
    return [s for s in statements(template, **kwargs) if action in as_list(s["Action"])]


def rendered(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def statements_of_handler(template: dict[str, Any], handler: str) -> list[dict[str, Any]]:
    """The statements of the policies attached to the role of the function running ``handler``."""
    functions = [
        r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function" and r["Properties"].get("Handler") == handler
    ]
    if len(functions) != 1:
        raise AssertionError(f"expected one function with handler {handler}, found {len(functions)}")
    role_id = functions[0]["Role"]["Fn::GetAtt"][0]
    found = []
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in resource["Properties"]["Roles"]:
            found.extend(resource["Properties"]["PolicyDocument"]["Statement"])
    return found


def actions_of(found: list[dict[str, Any]]) -> set[str]:
    return {action for statement in found for action in as_list(statement["Action"])}
