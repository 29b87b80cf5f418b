"""@kokoro-relay/client's committed declarations (clients/js/types/*.d.ts) are what tsc makes of its JSDoc today,
and the package's manifest points at files that exist. Regenerate with ``npm --prefix web run client-types``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "clients" / "js"
TSC = REPO / "web" / "node_modules" / ".bin" / "tsc"


def test_package_manifest_points_at_real_files_and_has_no_runtime_dependencies() -> None:
    manifest = json.loads((PACKAGE / "package.json").read_text())
    assert manifest["name"] == "@kokoro-relay/client"
    assert manifest["type"] == "module"
    assert "dependencies" not in manifest and "peerDependencies" not in manifest
    entry = manifest["exports"]["."]
    assert (PACKAGE / entry["default"]).is_file()
    assert (PACKAGE / entry["types"]).is_file()


@pytest.mark.skipif(not TSC.exists(), reason="TypeScript is not installed: npm --prefix web ci (make web-typecheck)")
def test_committed_declarations_are_current(tmp_path: Path) -> None:
    subprocess.run(
        [str(TSC), "-p", str(PACKAGE / "tsconfig.json"), "--outDir", str(tmp_path)], check=True, cwd=REPO, timeout=120
    )
    made = {p.name: p.read_text() for p in tmp_path.glob("*.d.ts")}
    committed = {p.name: p.read_text() for p in (PACKAGE / "types").glob("*.d.ts")}
    assert made.keys() == committed.keys()
    stale = [name for name in made if made[name] != committed[name]]
    assert not stale, f"clients/js/types is stale ({stale}): run npm --prefix web run client-types"
