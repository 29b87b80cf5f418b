"""What the ``relay`` command line loads: ``relay --help`` and ``relay chat --gateway-url`` (a deployed gateway)
import neither the CDK app (``aws_cdk``, ``constructs``, ``relay_infra``) nor moto nor any local stand-in; those
come only with the commands that run them (``--local``, ``relay up``, ``relay deploy preflight``).

``relay_local.CLI_MODULES`` declares the package's CLI half; the rest are stand-ins. The import checks run in a
fresh interpreter each, since this one has long imported everything; the declaration is checked with ``ast``.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import relay_local
from relay_local import CLI_MODULES

HEAVY = ("aws_cdk", "constructs", "moto", "relay_infra", "boto3", "botocore", "uvicorn", "starlette", "kokoro_server")
"""Never loaded by a command that talks to a deployed (or already running) relay: the CDK app, moto, the AWS SDK,
the servers the stand-ins run, the TTS container."""
SOURCES = Path(relay_local.__file__).resolve().parent
CHAT_REMOTE = ["chat", "--gateway-url", "ws://127.0.0.1:9/x", "--token", "t", "Hello."]
"""A gateway that is not there (port 9, discard: the connection is refused at once)."""


def loaded_after(argv: list[str]) -> set[str]:
    """The modules a fresh interpreter has imported after ``relay <argv>`` (through ``relay_local.cli.main``, the
    console script's entry point)."""
    probe = (
        "import contextlib, io, json, sys\n"
        "from relay_local.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        "    with contextlib.suppress(SystemExit):\n"
        f"        main({argv!r})\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    return set(json.loads(done.stdout.splitlines()[-1]))


def heavy_or_stand_ins(loaded: set[str]) -> set[str]:
    return {
        name
        for name in loaded
        if name.split(".")[0] in HEAVY or (name.startswith("relay_local.") and name not in CLI_MODULES)
    }


@pytest.mark.parametrize(
    "argv",
    [["--help"], *([command, "--help"] for command in ("speak", "up", "chat", "ops", "deploy")), CHAT_REMOTE],
    ids=["help", "speak-help", "up-help", "chat-help", "ops-help", "deploy-help", "chat-gateway-url"],
)
def test_a_command_without_local_stack_loads_no_cdk_moto_or_stand_in(argv: list[str]) -> None:
    loaded = loaded_after(argv)
    assert "relay_local.cli" in loaded
    assert heavy_or_stand_ins(loaded) == set()


def test_the_remote_chat_argument_parse_loads_no_cdk_moto_or_stand_in() -> None:
    probe = (
        "import json, sys\n"
        "from relay_local.cli import build_parser\n"
        f"args = build_parser().parse_args({CHAT_REMOTE!r})\n"
        "assert args.gateway_url == 'ws://127.0.0.1:9/x' and args.token == 't' and not args.local\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    assert heavy_or_stand_ins(set(json.loads(done.stdout.splitlines()[-1]))) == set()


def test_deploy_preflight_loads_the_preflight_when_chosen_and_no_cdk() -> None:
    """The check above is not vacuous: the one command that needs ``relay_infra`` loads it (its options are added
    when it is parsed), and still neither aws_cdk nor boto3 for its ``--help``."""
    loaded = loaded_after(["deploy", "preflight", "--help"])
    assert "relay_infra.preflight.cli" in loaded
    assert loaded & {"aws_cdk", "constructs", "moto", "boto3"} == set()


def _module_name(path: Path) -> str:
    parts = path.relative_to(SOURCES.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _executed(node: ast.AST) -> list[ast.AST]:
    """``node`` and what runs with it when its module is imported: no function body, no ``if TYPE_CHECKING``."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        return [node]  # its decorators and defaults run, but they import nothing here
    if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
        return [n for child in node.orelse for n in _executed(child)]
    return [node, *(n for child in ast.iter_child_nodes(node) for n in _executed(child))]


def _imports(tree: ast.Module, *, top_level_only: bool) -> set[str]:
    """Absolute imported names: those a module runs when imported, or every one (functions included)."""
    names: set[str] = set()
    for node in _executed(tree) if top_level_only else list(ast.walk(tree)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _is_stand_in(name: str) -> bool:
    return name.startswith("relay_local.") and not any(
        name == module or name.startswith(f"{module}.") for module in CLI_MODULES
    )


def test_the_declared_split_holds_in_the_sources() -> None:
    """Every declared CLI module exists; at module level none imports a stand-in or a heavy package; no stand-in
    imports a CLI module, even inside a function."""
    modules = {_module_name(path): ast.parse(path.read_text(), filename=str(path)) for path in SOURCES.rglob("*.py")}
    assert modules.keys() >= CLI_MODULES
    for name in sorted(CLI_MODULES):
        eager = _imports(modules[name], top_level_only=True)
        assert {i for i in eager if _is_stand_in(i) or i.split(".")[0] in HEAVY} == set(), name
    for name, tree in sorted(modules.items()):
        if name in CLI_MODULES or name == "relay_local":
            continue
        reached = {i for i in _imports(tree, top_level_only=False) if i.startswith("relay_local.")}
        assert {i for i in reached if not _is_stand_in(i)} == set(), name
