"""Every handler imports with no AWS configuration at all (no credentials, region or endpoints): no client and no
network at import time, so the local stack can load them in-process and Lambda cold starts stay light."""

from __future__ import annotations

import os
import subprocess
import sys

from relay_functions import manifest

HANDLERS = tuple(function.name for function in manifest.FUNCTIONS)


def test_handlers_import_without_aws_configuration() -> None:
    code = (
        "import importlib, sys\n"
        f"for name in {HANDLERS!r}:\n"
        "    module = importlib.import_module('relay_functions.gateway.' + name)\n"
        "    assert callable(module.handler), name\n"
        "assert 'onnxruntime' not in sys.modules and 'torch' not in sys.modules\n"
    )
    env = {"PATH": os.environ.get("PATH", ""), "HOME": "/nonexistent", "AWS_EC2_METADATA_DISABLED": "true"}
    command = [sys.executable, "-c", code]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
