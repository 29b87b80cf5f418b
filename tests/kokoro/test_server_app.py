"""The app's lifespan (model loaded once, /ping 503 until then), its settings, and the ``kokoro-server`` command."""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from kokoro_server import config as config_module
from kokoro_server.app import create_app
from kokoro_server.cli import main, parse_command
from kokoro_server.config import ConfigError, ServerConfig, default_workers
from relay_core.agent import defaults as agent_defaults


@pytest.mark.slow
def test_lifespan_loads_the_model_once_and_ping_turns_healthy() -> None:
    app = create_app(ServerConfig())
    state = app.state.server
    with TestClient(app) as http:
        loading = http.get("/ping")
        refused = http.post("/invocations", json={"text": "Yes."})
        assert state.settled.wait(120)
        healthy = http.get("/ping")
        engine = state.engine
        spoken = http.post("/invocations", json={"text": "Yes.", "format": "pcm"})
        assert state.engine is engine  # loaded once, not per request
    assert loading.status_code == 503
    assert loading.json()["status"] == "loading"
    assert refused.status_code == 503
    assert refused.json()["error"]["code"] == "model_not_ready"
    assert healthy.status_code == 200
    assert state.load_seconds is not None
    assert spoken.status_code == 200
    assert spoken.content


def test_a_failed_load_is_reported_by_ping_and_the_websocket() -> None:
    app = create_app(ServerConfig(model_path=Path("/nonexistent/kokoro.onnx")))
    state = app.state.server
    with TestClient(app) as http:
        assert state.settled.wait(60)
        ping = http.get("/ping")
        voices = http.get("/v1/audio/voices")
        with (
            http.websocket_connect("/invocations-bidirectional-stream") as ws,
            pytest.raises(WebSocketDisconnect) as closed,
        ):
            ws.receive_text()
    assert ping.status_code == 503
    assert ping.json()["status"] == "failed"
    assert "/nonexistent/kokoro.onnx" in ping.json()["error"]["message"]
    assert voices.status_code == 503
    assert closed.value.code == 1013


def test_settings_from_the_environment() -> None:
    config = ServerConfig.from_env(
        {
            "KOKORO_ENGINE": "TORCH",
            "KOKORO_WEIGHTS_DIR": "/w",
            "KOKORO_VOICES_PATH": "/v.npz",
            "KOKORO_DEFAULT_VOICE": "jm_kumo",
            "KOKORO_LANG": "ja",
            "KOKORO_WORKERS": "2",
            "KOKORO_THREADS": "3",
            "KOKORO_PORT": "9000",
        }
    )
    assert config == ServerConfig(
        engine="torch",
        weights_dir=Path("/w"),
        voices_path=Path("/v.npz"),
        default_voice="jm_kumo",
        lang="ja",
        workers=2,
        threads=3,
        port=9000,
    )
    engine_config = config.engine_config()
    assert engine_config.engine == "torch"
    assert engine_config.weights_dir == Path("/w")
    assert engine_config.default_voice == "jm_kumo"
    assert ServerConfig.from_env({}) == ServerConfig()


def test_torch_defaults_to_the_sagemaker_model_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(config_module, "SAGEMAKER_MODEL_DIR", tmp_path)
    assert ServerConfig.from_env({"KOKORO_ENGINE": "torch"}).weights_dir == tmp_path
    assert ServerConfig.from_env({"KOKORO_ENGINE": "onnx"}).weights_dir is None


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"KOKORO_ENGINE": "tensorflow"}, "KOKORO_ENGINE"),
        ({"KOKORO_WORKERS": "many"}, "KOKORO_WORKERS"),
        ({"KOKORO_WORKERS": "-1"}, "workers"),
        ({"KOKORO_PORT": "70000"}, "port"),
    ],
)
def test_bad_settings_say_which_and_what_to_do(environ: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ServerConfig.from_env(environ)


def test_command_line_options_override_the_environment() -> None:
    env = {"KOKORO_ENGINE": "torch", "KOKORO_WEIGHTS_DIR": "/w", "KOKORO_PORT": "9000", "KOKORO_DEFAULT_VOICE": "a"}
    config, level = parse_command(
        ["--engine", "onnx", "--port", "1234", "--model", "/m.onnx", "--default-voice", "jf_nezumi"], env
    )
    assert config.engine == "onnx"
    assert config.port == 1234
    assert config.model_path == Path("/m.onnx")
    assert config.default_voice == "jf_nezumi"
    assert config.weights_dir == Path("/w")  # not overridden: kept from the environment
    assert config.host == "127.0.0.1"
    assert level == "info"


def test_serve_is_what_sagemaker_runs() -> None:
    config, _ = parse_command(["serve"], {"KOKORO_HOST": "127.0.0.1", "KOKORO_PORT": "1"})
    assert (config.host, config.port) == ("0.0.0.0", 8080)


def test_a_bad_option_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_command(["--workers", "0"], {})
    assert exited.value.code == 2
    assert "workers" in capsys.readouterr().err


def test_convert_weights_is_delegated(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["convert-weights", "--help"])
    assert exited.value.code == 0
    assert "kokoro-server convert-weights" in capsys.readouterr().out


@contextmanager
def kokoro_server_script(*args: str) -> Iterator[str]:
    """Run the installed ``kokoro-server`` script on a free loopback port; yields its base URL."""
    script = Path(sys.executable).with_name("kokoro-server")
    process = subprocess.Popen(
        [str(script), "--host", "127.0.0.1", "--port", "0", *args],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert process.stderr is not None
        url = None
        for line in process.stderr:
            found = re.search(r"running on (http://127\.0\.0\.1:\d+)", line, re.IGNORECASE)
            if found:
                url = found.group(1)
                break
        assert url is not None
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def settled_ping(url: str, within_s: float = 180.0) -> httpx.Response:
    """``/ping`` once the model has finished loading (or failed to); fails after ``within_s`` seconds."""
    deadline = time.monotonic() + within_s
    with httpx.Client(base_url=url, timeout=60) as http:
        reply = http.get("/ping")
        while reply.json()["status"] == "loading":
            assert time.monotonic() < deadline, f"/ping still says loading after {within_s} s"
            time.sleep(0.2)
            reply = http.get("/ping")
        return reply


@pytest.mark.slow
def test_a_model_that_cannot_load_stops_the_server_with_the_reason() -> None:
    """The installed script serves (the port opens at once), then exits 1 with the reason when the model fails to
    load, instead of answering 503 forever."""
    script = Path(sys.executable).with_name("kokoro-server")
    process = subprocess.Popen(
        [str(script), "--host", "127.0.0.1", "--port", "0", "--lang", "klingon"],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        _, stderr = process.communicate(timeout=180)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
    assert process.returncode == 1
    assert re.search(r"running on http://127\.0\.0\.1:\d+", stderr, re.IGNORECASE)
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("kokoro-server: the model failed to load:")
    assert "klingon" in last
    assert "en-us" in last  # says what to use instead


def test_local_defaults_meet_the_agent_and_serve_keeps_the_image_port() -> None:
    config, _ = parse_command([], {})
    agent_tts = urlsplit(agent_defaults.LOCAL_TTS_URL)
    assert (config.host, config.port) == (agent_tts.hostname, agent_tts.port)
    assert config.port != agent_defaults.LOCAL_AGENT_PORT
    served, _ = parse_command(["serve"], {})
    assert (served.host, served.port) == ("0.0.0.0", agent_defaults.IMAGE_PORT)
    assert parse_command([], {"KOKORO_PORT": "0"})[0].port == 0  # 0 (a free port) is a value, not "unset"


def test_serve_help_is_its_own_and_version_is_printed(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_command(["serve", "--help"], {})
    assert exited.value.code == 0
    serve_help = capsys.readouterr().out
    assert serve_help.startswith("usage: kokoro-server serve")
    assert "0.0.0.0:8080" in serve_help
    with pytest.raises(SystemExit):
        parse_command(["--help"], {})
    top_help = capsys.readouterr().out
    assert top_help != serve_help
    assert "127.0.0.1" in top_help and str(agent_defaults.LOCAL_TTS_PORT) in top_help
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"kokoro-server {importlib.metadata.version('kokoro-server')}"


def test_cors_is_off_by_default_and_allows_only_the_configured_origins() -> None:
    preflight = {"Origin": "http://localhost:3000", "Access-Control-Request-Method": "POST"}
    plain = TestClient(create_app(ServerConfig()))  # no lifespan: routes answer 503 (no model), headers still show
    assert "access-control-allow-origin" not in plain.get("/ping", headers={"Origin": "http://localhost:3000"}).headers
    assert "access-control-allow-origin" not in plain.options("/v1/audio/speech", headers=preflight).headers
    config, _ = parse_command(["--cors-origins", "http://localhost:3000, https://app.example/"], {})
    assert config.cors_origins == ("http://localhost:3000", "https://app.example")
    browser = TestClient(create_app(config))
    allowed = browser.options("/v1/audio/speech", headers=preflight)
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == "http://localhost:3000"
    assert (
        "x-audio-duration"
        in browser.get("/ping", headers={"Origin": "http://localhost:3000"})
        .headers["access-control-expose-headers"]
        .lower()
    )
    refused = browser.options("/v1/audio/speech", headers={**preflight, "Origin": "http://evil.example"})
    assert "access-control-allow-origin" not in refused.headers
    assert ServerConfig.from_env({"KOKORO_CORS_ORIGINS": "*"}).cors_origins == ("*",)
    with pytest.raises(ConfigError, match="origin"):
        ServerConfig(cors_origins=("localhost:3000",))


def test_engine_torch_with_no_weights_directory_speaks_with_the_converted_weights(
    converted_weights_dir: Path,
) -> None:
    """The app configured as ``kokoro-server --engine torch`` with no weights directory loads, in its lifespan, the
    weights converted from the ONNX (in-process: the script's own start-up is tested with the onnx engine above)."""
    config = ServerConfig.from_env({"KOKORO_ENGINE": "torch"})
    assert config.engine == "torch" and config.weights_dir is None
    app = create_app(config)
    state = app.state.server
    with TestClient(app) as http:
        assert state.settled.wait(180)
        reply = http.get("/ping")
        speech = http.post("/invocations", json={"text": "Good morning.", "format": "pcm", "stream": False})
    assert reply.status_code == 200
    assert reply.json()["engine"] == "torch"
    assert speech.status_code == 200
    assert float(speech.headers["X-Audio-Duration"]) > 0.4
    assert converted_weights_dir.is_dir()


def test_default_workers_follow_the_engine() -> None:
    # latency first on CPU: one worker, whose inference gets every core (docs/server.md, scheduling)
    assert default_workers("onnx", cpu_count=2) == 1
    assert default_workers("onnx", cpu_count=64) == 1
    assert default_workers("torch", cpu_count=64) == 2
    assert ServerConfig(engine="onnx", workers=None).inference_workers == default_workers("onnx")
    assert ServerConfig(engine="onnx", workers=3).inference_workers == 3
