"""What a command that serves nothing loads: reading the settings (``kokoro_server.config``) imports no inference
stack (onnxruntime, phonemizer, torch), since the engines load with a model; ``kokoro-server --help`` and the
weights converter load neither uvicorn nor the app.

Each check runs in a fresh interpreter, since this one has long imported everything."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

INFERENCE_STACKS = ("onnxruntime", "phonemizer", "torch")


def loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter has imported after running ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_reading_the_settings_imports_no_inference_stack() -> None:
    loaded = loaded_after("import kokoro_server.config")
    assert "kokoro_server.config" in loaded
    assert loaded & set(INFERENCE_STACKS) == set()


def test_the_engines_package_loads_its_inference_stack_with_a_name_that_needs_it() -> None:
    assert "onnxruntime" not in loaded_after("import kokoro_server.engines")
    assert "onnxruntime" in loaded_after("from kokoro_server.engines import OnnxSynthesizer")


def test_the_weights_converter_and_the_help_load_no_server() -> None:
    """``kokoro-server convert-weights`` and ``kokoro-server --help`` serve nothing: neither uvicorn nor the app
    (nor the routes behind it) is imported; only ``kokoro-server`` serving does (``kokoro_server.serving``). The
    converter's help (or a mistyped option) answers before torch is imported: torch only once a conversion runs."""
    for argv in (["convert-weights", "--help"], ["--help"]):
        loaded = loaded_after(
            f"import contextlib\nfrom kokoro_server.cli import main\n"
            f"with contextlib.suppress(SystemExit):\n    main({argv!r})"
        )
        assert "kokoro_server.cli" in loaded
        assert loaded & {"torch", "uvicorn", "starlette", "kokoro_server.app", "kokoro_server.serving"} == set(), argv


def test_the_voices_command_loads_no_inference_stack_and_no_server(tmp_path: Path) -> None:
    """``kokoro-server voices list`` reads packs with numpy alone: no onnxruntime, torch, uvicorn or app."""
    for argv in (["voices", "--help"], ["voices", "--cache-dir", str(tmp_path), "list"]):
        loaded = loaded_after(
            f"import contextlib\nfrom kokoro_server.cli import main\n"
            f"with contextlib.suppress(SystemExit):\n    main({argv!r})"
        )
        assert "kokoro_server.voices_cli" in loaded
        assert (
            loaded & {*INFERENCE_STACKS, "uvicorn", "starlette", "kokoro_server.app", "kokoro_server.serving"} == set()
        )
