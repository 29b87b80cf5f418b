"""What the ``relay`` command line loads: ``relay --help`` and ``relay chat --gateway-url`` (a deployed gateway)
import neither the CDK app (``aws_cdk``, ``constructs``, ``relay_infra``) nor moto nor any local stand-in; those
come only with the commands that run them (``--local``, ``relay up``, ``relay deploy preflight``).

The CLI is its own package (``relay_cli``); the stand-ins are ``relay_local``. The import checks run in a fresh
interpreter each, since this one has long imported everything; what each module imports at module level is checked
with ``ast``.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import relay_cli
import relay_local

HEAVY = (
    "relay_local",
    "aws_cdk",
    "constructs",
    "moto",
    "relay_infra",
    "boto3",
    "botocore",
    "uvicorn",
    "starlette",
    "kokoro_server",
)
"""Never loaded by a command that talks to a deployed (or already running) relay: the local stand-ins, the CDK app,
moto, the AWS SDK, the servers the stand-ins run, the TTS container."""
CLI_SOURCES = Path(relay_cli.__file__).resolve().parent
STAND_IN_SOURCES = Path(relay_local.__file__).resolve().parent
CHAT_REMOTE = ["chat", "--gateway-url", "ws://127.0.0.1:9/x", "--token", "t", "Hello."]
"""A gateway that is not there (port 9, discard: the connection is refused at once)."""


def loaded_after(argv: list[str]) -> set[str]:
    """The modules a fresh interpreter has imported after ``relay <argv>`` (through ``relay_cli.cli.main``, the
    console script's entry point)."""
    probe = (
        "import contextlib, io, json, sys\n"
        "from relay_cli.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        "    with contextlib.suppress(SystemExit):\n"
        f"        main({argv!r})\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    return set(json.loads(done.stdout.splitlines()[-1]))


def heavy(loaded: set[str]) -> set[str]:
    return {name for name in loaded if name.split(".")[0] in HEAVY}


@pytest.mark.parametrize(
    "argv",
    [["--help"], *([command, "--help"] for command in ("speak", "up", "chat", "ops", "deploy")), CHAT_REMOTE],
    ids=["help", "speak-help", "up-help", "chat-help", "ops-help", "deploy-help", "chat-gateway-url"],
)
def test_a_command_without_local_stack_loads_no_cdk_moto_or_stand_in(argv: list[str]) -> None:
    loaded = loaded_after(argv)
    assert "relay_cli.cli" in loaded
    assert heavy(loaded) == set()


def test_the_remote_chat_argument_parse_loads_no_cdk_moto_or_stand_in() -> None:
    probe = (
        "import json, sys\n"
        "from relay_cli.cli import build_parser\n"
        f"args = build_parser().parse_args({CHAT_REMOTE!r})\n"
        "assert args.gateway_url == 'ws://127.0.0.1:9/x' and args.token == 't' and not args.local\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    assert heavy(set(json.loads(done.stdout.splitlines()[-1]))) == set()


def test_deploy_preflight_loads_the_preflight_when_chosen_and_no_cdk() -> None:
    """The check above is not vacuous: the one command that needs ``relay_infra`` loads it (its options are added
    when it is parsed), and still neither aws_cdk nor boto3 for its ``--help``."""
    loaded = loaded_after(["deploy", "preflight", "--help"])
    assert "relay_infra.preflight.cli" in loaded
    assert loaded & {"aws_cdk", "constructs", "moto", "boto3"} == set()


def _module_name(path: Path, sources: Path) -> str:
    parts = path.relative_to(sources.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _parsed(sources: Path) -> dict[str, ast.Module]:
    return {
        _module_name(path, sources): ast.parse(path.read_text(), filename=str(path)) for path in sources.rglob("*.py")
    }


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


def test_no_cli_module_imports_a_stand_in_or_a_heavy_package_at_module_level() -> None:
    """What the subprocess checks above see for the commands they run holds for every module of the CLI: a stand-in
    or a heavy package is imported only inside the function of the command that needs it."""
    modules = _parsed(CLI_SOURCES)
    assert {"relay_cli.cli", "relay_cli.chat_cli", "relay_cli.up_cli"} <= modules.keys()
    lazy = set()
    for name, tree in sorted(modules.items()):
        eager = _imports(tree, top_level_only=True)
        assert {i for i in eager if i.split(".")[0] in HEAVY} == set(), name
        lazy |= {i for i in _imports(tree, top_level_only=False) if i.startswith("relay_local.")}
    assert "relay_local.relay_stack.RelayStack" in lazy  # `relay up` and `--local` do reach the stand-ins


def test_no_stand_in_imports_the_cli() -> None:
    """The stand-ins are driven by the CLI, never the other way round, even inside a function."""
    modules = _parsed(STAND_IN_SOURCES)
    assert "relay_local.relay_stack" in modules
    for name, tree in sorted(modules.items()):
        assert {i for i in _imports(tree, top_level_only=False) if i.split(".")[0] == "relay_cli"} == set(), name


def test_the_installed_console_script_loads_no_cdk_moto_or_stand_in() -> None:
    """The ``relay`` script the workspace installs (its entry point read from relay-cli's pyproject.toml), run as a
    shell runs it; ``-X importtime`` names every module it imports, on stderr."""
    script = Path(sys.executable).parent / "relay"
    done = subprocess.run(
        [sys.executable, "-X", "importtime", str(script), "--help"],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "relay_cli.cli" in imported
    assert heavy(imported) == set()
