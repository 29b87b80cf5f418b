"""What CloudFormation would do to this app across deploy → update → destroy → deploy, read from templates.

Plain functions over synthesized templates (``{stack name: template dict}``) and the resource schemas cfn-lint ships
(AWS's CloudFormation registry schemas: which properties are create-only, i.e. force a replacement when they change).
They answer the three questions a first deploy, a second deploy and a redeploy after ``cdk destroy`` depend on:

- which resources an update replaces (a create-only property changed, or it names a resource that is replaced);
- which exported values another stack imports would change (CloudFormation refuses the update);
- which resources keep a fixed physical name while being replaced or retained (the create fails: "already exists").
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import cfnlint

Templates = Mapping[str, dict[str, Any]]
RETAINING = {"Retain", "RetainExceptOnCreate"}
SCHEMAS = Path(cfnlint.__file__).parent / "data" / "schemas"


@cache
def _provider_index() -> dict[str, str]:
    return dict(json.loads((SCHEMAS / "providers" / "us-east-1.json").read_text(encoding="utf-8")))


@cache
def create_only_properties(resource_type: str) -> frozenset[str]:
    """Top-level properties whose change makes CloudFormation replace a resource of ``resource_type`` (empty for a
    type the registry does not know, such as a custom resource, which is updated in place)."""
    schema_id = _provider_index().get(resource_type)
    if schema_id is None:
        return frozenset()
    schema = json.loads((SCHEMAS / "resources" / f"{schema_id}.json").read_text(encoding="utf-8"))
    return frozenset(path.split("/")[2] for path in schema.get("createOnlyProperties", []))


def physical_name_properties(resource_type: str, properties: Mapping[str, Any]) -> dict[str, Any]:
    """The create-only ``...Name`` properties a template sets on a resource: a physical name it chose itself."""
    return {
        name: properties[name]
        for name in sorted(create_only_properties(resource_type))
        if name.endswith("Name") and name in properties
    }


def _walk(value: Any) -> Iterator[Any]:
    yield value
    if isinstance(value, dict):
        for item in value.values():
            yield from _walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item)


def referenced_resources(value: Any) -> set[str]:
    """Logical ids ``value`` names through ``Ref``, ``Fn::GetAtt`` or ``${Id}`` in ``Fn::Sub``."""
    found: set[str] = set()
    for node in _walk(value):
        if not isinstance(node, dict):
            continue
        if isinstance(node.get("Ref"), str) and not node["Ref"].startswith("AWS::"):
            found.add(node["Ref"])
        getatt = node.get("Fn::GetAtt")
        if isinstance(getatt, list) and getatt:
            found.add(str(getatt[0]))
        elif isinstance(getatt, str):
            found.add(getatt.split(".", 1)[0])
    return found


def imported_exports(value: Any) -> set[str]:
    """Export names ``value`` reads through ``Fn::ImportValue`` (literal names only)."""
    return {
        node["Fn::ImportValue"]
        for node in _walk(value)
        if isinstance(node, dict) and isinstance(node.get("Fn::ImportValue"), str)
    }


def exports(templates: Templates) -> dict[str, tuple[str, Any]]:
    """Every export: name → (stack, value expression)."""
    found: dict[str, tuple[str, Any]] = {}
    for stack, template in templates.items():
        for output in template.get("Outputs", {}).values():
            name = output.get("Export", {}).get("Name")
            if isinstance(name, str):
                found[name] = (stack, output["Value"])
    return found


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def replaced_resources(before: Templates, after: Templates) -> set[tuple[str, str]]:
    """(stack, logical id) of every resource present in both that the update from ``before`` to ``after`` replaces.

    A resource is replaced when a create-only property changed, or when a create-only property names (``Ref``,
    ``GetAtt``, or an import of an export whose value names) a resource that is itself replaced: its physical id,
    and so the referring value, changes at deploy time. Computed to a fixed point across stacks."""
    replaced: set[tuple[str, str]] = set()
    after_exports = exports(after)
    while True:
        changed_exports = {
            name
            for name, (stack, value) in after_exports.items()
            if any((stack, ref) in replaced for ref in referenced_resources(value))
        }
        grown = False
        for stack, template in after.items():
            old_resources = before.get(stack, {}).get("Resources", {})
            for logical_id, resource in template.get("Resources", {}).items():
                old = old_resources.get(logical_id)
                if old is None or (stack, logical_id) in replaced or old["Type"] != resource["Type"]:
                    continue
                props, old_props = resource.get("Properties", {}), old.get("Properties", {})
                for name in create_only_properties(resource["Type"]):
                    value = props.get(name)
                    if not _same(value, old_props.get(name)) or (
                        any((stack, ref) in replaced for ref in referenced_resources(value))
                        or imported_exports(value) & changed_exports
                    ):
                        replaced.add((stack, logical_id))
                        grown = True
                        break
        if not grown:
            return replaced


def changed_imported_exports(before: Templates, after: Templates) -> dict[str, str]:
    """Exports that another stack imports whose value the update would change (CloudFormation refuses that:
    "Cannot update export ... as it is in use by ..."), each with why."""
    imported = {name for template in after.values() for name in imported_exports(template.get("Resources", {}))}
    replaced = replaced_resources(before, after)
    old, new = exports(before), exports(after)
    problems: dict[str, str] = {}
    for name in sorted(imported & old.keys()):
        if name not in new:
            problems[name] = "removed while imported"
            continue
        stack, value = new[name]
        if not _same(value, old[name][1]):
            problems[name] = f"value changes: {json.dumps(old[name][1])} -> {json.dumps(value)}"
        elif gone := sorted(ref for ref in referenced_resources(value) if (stack, ref) in replaced):
            problems[name] = f"names {', '.join(gone)}, which the update replaces"
    return problems


def replaced_with_the_same_name(before: Templates, after: Templates) -> list[str]:
    """Replaced resources whose fixed physical name does not change: CloudFormation creates the replacement first,
    and the create fails because the name is taken."""
    clashes = []
    for stack, logical_id in sorted(replaced_resources(before, after)):
        old = before[stack]["Resources"][logical_id]
        new = after[stack]["Resources"][logical_id]
        old_names = physical_name_properties(old["Type"], old.get("Properties", {}))
        new_names = physical_name_properties(new["Type"], new.get("Properties", {}))
        if new_names and _same(old_names, new_names):
            clashes.append(f"{stack}/{logical_id} ({new['Type']}) keeps {json.dumps(new_names)}")
    return clashes


def retained_with_a_fixed_name(templates: Templates) -> list[str]:
    """Resources left behind by a stack deletion that carry a physical name the template chose: the next deploy
    creates them again under the same name and fails ("already exists")."""
    found = []
    for stack, template in sorted(templates.items()):
        for logical_id, resource in sorted(template.get("Resources", {}).items()):
            if resource.get("DeletionPolicy") not in RETAINING:
                continue
            names = physical_name_properties(resource["Type"], resource.get("Properties", {}))
            if names:
                found.append(f"{stack}/{logical_id} ({resource['Type']}) retained as {json.dumps(names)}")
    return found
