"""The Docker check, against stand-in ``docker`` executables (a daemon that answers, one that does not, ...)."""

from __future__ import annotations

from pathlib import Path

from tests.infra.preflight.stubs import fake_docker

from relay_infra.preflight.docker import check_docker, needed_platforms
from relay_infra.preflight.result import Status

BOTH = ("linux/amd64", "linux/arm64")


def test_needed_platforms_leave_out_images_given_as_uris() -> None:
    assert needed_platforms(tts_image_uri=None, agent_image_uri=None) == BOTH
    assert needed_platforms(tts_image_uri="123.dkr.ecr/x:1", agent_image_uri=None) == ("linux/arm64",)
    assert needed_platforms(tts_image_uri="a", agent_image_uri="b") == ()


def test_passes_with_a_daemon_and_both_builders(tmp_path: Path) -> None:
    result = check_docker(BOTH, docker=fake_docker(tmp_path))
    assert result.status is Status.PASS
    assert result.found == "daemon 27.3.1 linux/x86_64, builders for linux/amd64, linux/arm64"


def test_passes_without_docker_when_both_images_are_given() -> None:
    result = check_docker((), docker="/nonexistent/docker")
    assert result.status is Status.PASS
    assert result.found.startswith("not needed")


def test_fails_without_the_docker_command() -> None:
    result = check_docker(BOTH, docker="/nonexistent/docker")
    assert result.status is Status.FAIL
    assert result.found.startswith("no docker command")


def test_fails_when_only_the_client_is_there(tmp_path: Path) -> None:
    result = check_docker(BOTH, docker=fake_docker(tmp_path, info="", info_rc=1))
    assert result.status is Status.FAIL
    assert result.found == "the Docker daemon is not reachable (Cannot connect to the Docker daemon)"
    assert "start the Docker daemon" in result.fix


def test_fails_without_buildx(tmp_path: Path) -> None:
    result = check_docker(BOTH, docker=fake_docker(tmp_path, buildx="unknown command: buildx", buildx_rc=1))
    assert result.status is Status.FAIL
    assert "no buildx" in result.found


def test_fails_without_an_arm64_builder_and_says_how_to_add_one(tmp_path: Path) -> None:
    builders = "default* docker\n  default default running linux/amd64, linux/amd64/v2, linux/386"
    result = check_docker(BOTH, docker=fake_docker(tmp_path, buildx=builders))
    assert result.status is Status.FAIL
    assert result.found.endswith("no builder for linux/arm64")
    assert "tonistiigi/binfmt --install arm64" in result.fix
    assert "relay:agentImageUri" in result.fix
