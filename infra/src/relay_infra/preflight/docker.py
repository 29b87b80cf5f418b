"""Check: a Docker daemon (not only the client) answers, with builders for the platforms the images need.

``make deploy`` builds the Kokoro image for linux/amd64 and the agent image for linux/arm64 unless
``relay:ttsImageUri`` / ``relay:agentImageUri`` name pushed images. Read-only: ``docker info`` and
``docker buildx ls``.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

from relay_infra.preflight.result import CheckResult, Status

NAME = "docker"
TIMEOUT_S = 20.0
BINFMT_FIX = (
    "install QEMU emulation for the missing platform (docker run --privileged --rm tonistiigi/binfmt --install "
    "{platforms}), or build that image elsewhere and pass its URI (-c relay:ttsImageUri=... / "
    "-c relay:agentImageUri=...)"
)


def needed_platforms(*, tts_image_uri: str | None, agent_image_uri: str | None) -> tuple[str, ...]:
    """The platforms ``make deploy`` builds for: linux/amd64 (Kokoro) and linux/arm64 (agent), less those whose
    image is given as a URI."""
    return tuple(
        platform for platform, given in (("linux/amd64", tts_image_uri), ("linux/arm64", agent_image_uri)) if not given
    )


def _run(command: Sequence[str], timeout_s: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(command), capture_output=True, text=True, timeout=timeout_s, check=False)  # noqa: S603


def check_docker(platforms: Sequence[str], *, docker: str = "docker", timeout_s: float = TIMEOUT_S) -> CheckResult:
    """Pass when nothing is to be built, or when ``docker info`` reaches the daemon and ``docker buildx ls``
    lists every platform in ``platforms``."""
    if not platforms:
        return CheckResult(NAME, Status.PASS, "not needed: both images are given as URIs")
    builds = f"needed to build {', '.join(platforms)}"
    try:
        info = _run([docker, "info", "--format", "{{.ServerVersion}} {{.OSType}}/{{.Architecture}}"], timeout_s)
    except FileNotFoundError:
        return CheckResult(
            NAME,
            Status.FAIL,
            f"no docker command ({builds})",
            "install Docker with buildx (docs.docker.com/get-docker), or pass both images as URIs",
        )
    except subprocess.TimeoutExpired:
        return CheckResult(NAME, Status.FAIL, f"docker info did not answer in {timeout_s:.0f} s", "restart Docker")
    if info.returncode != 0 or not info.stdout.strip():
        reason = (info.stderr.strip().splitlines() or ["no output"])[-1]
        return CheckResult(
            NAME,
            Status.FAIL,
            f"the Docker daemon is not reachable ({reason})",
            "start the Docker daemon (Docker Desktop, or sudo systemctl start docker) and make sure this user may "
            "use it (docker info must succeed)",
        )
    server = info.stdout.strip()
    try:
        builders = _run([docker, "buildx", "ls"], timeout_s)
    except subprocess.TimeoutExpired:
        return CheckResult(NAME, Status.FAIL, f"daemon {server}; docker buildx ls did not answer", "restart Docker")
    if builders.returncode != 0:
        return CheckResult(
            NAME,
            Status.FAIL,
            f"daemon {server}, but no buildx ({builds})",
            "install the Docker buildx plugin (docs.docker.com/build/install-buildx)",
        )
    missing = [platform for platform in platforms if platform not in builders.stdout]
    if missing:
        return CheckResult(
            NAME,
            Status.FAIL,
            f"daemon {server}; no builder for {', '.join(missing)}",
            BINFMT_FIX.format(platforms=",".join(platform.split("/")[1] for platform in missing)),
        )
    return CheckResult(NAME, Status.PASS, f"daemon {server}, builders for {', '.join(platforms)}")
