"""relay_infra.lock_subset: the workspace's uv.lock cut down to what one package installs (the closure under every
marker, members whole, distributions with only the extras asked of them), its bytes unchanged by anything outside."""

from __future__ import annotations

import re
import tomllib

import pytest

from relay_infra.lock_subset import LockSubsetError, lock_subset
from relay_infra.paths import REPO_ROOT

LOCK = (REPO_ROOT / "uv.lock").read_text(encoding="utf-8")


def bump(lock_text: str, name: str) -> str:
    """``lock_text`` with the locked version of ``name`` changed (what a re-lock that moves only it writes)."""
    pattern = re.compile(rf'(\[\[package\]\]\nname = "{re.escape(name)}"\nversion = "[^"]+)"')
    bumped, count = pattern.subn(r'\1.post9"', lock_text)
    assert count == 1, f"{name} is not locked once"
    return bumped


def package_tables(text: str) -> dict[str, dict[str, object]]:
    return {str(p["name"]): p for p in tomllib.loads(text)["package"]}


@pytest.mark.parametrize(
    ("package", "members"),
    [
        ("kokoro-server", ("containers/kokoro", "core")),
        ("voice-agent", ("containers/agent", "core", "transport")),
    ],
)
def test_the_subset_holds_the_members_a_package_reaches(package: str, members: tuple[str, ...]) -> None:
    subset = lock_subset(LOCK, package, f"{package}-image")
    assert subset.members == members
    manifest = tomllib.loads(subset.text)["manifest"]
    tables = package_tables(subset.text)
    assert sorted(manifest["members"]) == sorted(
        [f"{package}-image", *(name for name, p in tables.items() if "editable" in p["source"])]  # type: ignore[operator]
    )
    assert "relay-functions" not in tables and "relay-infra" not in tables and "kokoro-relay" not in tables


@pytest.mark.parametrize("package", ["kokoro-server", "voice-agent", "relay-functions"])
def test_every_dependency_a_kept_entry_names_is_kept(package: str) -> None:
    """uv refuses to parse a lock with a dependency it does not hold: the subset must be closed."""
    tables = package_tables(lock_subset(LOCK, package, "image-root").text)
    for table in tables.values():
        deps = list(table.get("dependencies", []))  # type: ignore[call-overload]
        for section in ("optional-dependencies", "dev-dependencies"):
            for group in dict(table.get(section, {})).values():  # type: ignore[call-overload]
                deps.extend(group)
        missing = [dep["name"] for dep in deps if dep["name"] not in tables]
        assert missing == [], f"{table['name']} names {missing}, which the subset lacks"


def test_a_distribution_keeps_only_the_extras_the_closure_asks_for() -> None:
    """uvicorn[standard] is Kokoro's, not the agent's: the agent's subset neither holds its extra nor uvloop."""
    kokoro = package_tables(lock_subset(LOCK, "kokoro-server", "image-root").text)
    agent = package_tables(lock_subset(LOCK, "voice-agent", "image-root").text)
    assert "standard" in kokoro["uvicorn"]["optional-dependencies"]  # type: ignore[operator]
    assert "optional-dependencies" not in agent["uvicorn"]
    assert "uvloop" in kokoro and "uvloop" not in agent
    assert "torch" in kokoro and "torch" not in agent and "onnxruntime" not in agent


def test_the_kept_entries_are_the_locks_own_bytes() -> None:
    subset = lock_subset(LOCK, "kokoro-server", "image-root").text
    numpy = re.search(r'\[\[package\]\]\nname = "numpy"\n.*?(?=\n\[\[package\]\])', LOCK, re.DOTALL)
    assert numpy is not None and numpy.group(0) in subset


@pytest.mark.parametrize(
    ("package", "bumped", "changes"),
    [
        ("kokoro-server", "hypothesis", False),  # the dev group's
        ("kokoro-server", "strands-agents", False),  # the agent's
        ("kokoro-server", "aws-cdk-lib", False),  # infra's
        ("kokoro-server", "numpy", True),
        ("kokoro-server", "torch", True),
        ("voice-agent", "torch", False),
        ("voice-agent", "onnxruntime", False),
        ("voice-agent", "uvloop", False),  # only in uvicorn[standard], which Kokoro asks for
        ("voice-agent", "strands-agents", True),
    ],
)
def test_only_a_locked_package_of_the_closure_changes_the_subset(package: str, bumped: str, changes: bool) -> None:
    before = lock_subset(LOCK, package, "image-root").text
    after = lock_subset(bump(LOCK, bumped), package, "image-root").text
    assert (after != before) is changes


SMALL_LOCK = """version = 1
revision = 3
requires-python = ">=3.12"

[manifest]
members = [
    "app",
    "other",
]

[[package]]
name = "app"
version = "0.1.0"
source = { editable = "app" }
dependencies = [
    { name = "lib", version = "1.0", source = { registry = "https://example.org/simple" }, marker = "os_name == 'a'" },
    { name = "lib", version = "2.0", source = { registry = "https://example.org/simple" }, marker = "os_name != 'a'" },
]

[[package]]
name = "lib"
version = "1.0"
source = { registry = "https://example.org/simple" }

[[package]]
name = "lib"
version = "2.0"
source = { registry = "https://example.org/simple" }

[[package]]
name = "other"
version = "0.1.0"
source = { editable = "other" }
dependencies = [
    { name = "unused" },
]

[[package]]
name = "unused"
version = "1.0"
source = { registry = "https://example.org/simple" }
"""


def test_a_package_locked_at_two_versions_keeps_both_forks() -> None:
    subset = lock_subset(SMALL_LOCK, "app", "app-image")
    versions = [(p["name"], p["version"]) for p in tomllib.loads(subset.text)["package"]]
    assert versions == [("app", "0.1.0"), ("app-image", "0"), ("lib", "1.0"), ("lib", "2.0")]
    assert subset.members == ("app",)


def test_a_name_that_is_no_member_is_refused() -> None:
    with pytest.raises(LockSubsetError, match="not a workspace member"):
        lock_subset(SMALL_LOCK, "lib", "root")
    with pytest.raises(LockSubsetError, match="already a package"):
        lock_subset(SMALL_LOCK, "app", "other")


def test_a_dependency_the_lock_does_not_hold_is_refused() -> None:
    with pytest.raises(LockSubsetError, match="run `uv lock`"):
        lock_subset(SMALL_LOCK.replace('{ name = "unused" }', '{ name = "gone" }'), "other", "root")


def test_an_optional_table_laid_out_otherwise_is_refused_not_guessed() -> None:
    odd = SMALL_LOCK.replace(
        'name = "unused"\nversion = "1.0"\nsource = { registry = "https://example.org/simple" }\n',
        'name = "unused"\nversion = "1.0"\nsource = { registry = "https://example.org/simple" }\n\n'
        '[package.optional-dependencies]\nfast = [{ name = "lib", version = "1.0" }]\n',
    )
    odd = odd.replace('{ name = "unused" }', '{ name = "unused", extra = [] }')
    with pytest.raises(LockSubsetError, match="not laid out"):
        lock_subset(odd, "other", "root")


def test_a_lock_without_packages_is_refused() -> None:
    with pytest.raises(LockSubsetError, match="no \\[\\[package\\]\\]"):
        lock_subset('version = 1\nrequires-python = ">=3.12"\n', "app", "root")
