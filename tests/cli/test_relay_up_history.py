"""``relay up`` keeps a conversation across a restart of its agent, as docs/local-stack.md tells a user to run it:
``relay up --agent-url`` (real process: gateway, functions, moto with the history bucket) and ``voice-agent`` by
hand (real process) keeping its history in relay up's moto S3, killed (SIGKILL) between two turns and started
again. The turns go through the real gateway; the agent's model is the local Bedrock stand-in of this test process
(``bedrock_env``), which records what the restarted agent sent."""

from __future__ import annotations

import asyncio
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.conftest import free_port

from relay_cli.gateway_client import run_turn
from relay_core.client.session import TurnOutcome
from relay_local.moto_s3 import HISTORY_BUCKET, S3_ENDPOINT_ENV

pytestmark = pytest.mark.slow

DEADLINE_S = 180.0
"""Only catches a hang: starting a process on a busy 2-core machine."""
FIRST = "My name is Ada."
SECOND = "What is my name?"


class RelayUp:
    """``relay up --agent-url`` on free ports; its printed dev token."""

    def __init__(self, agent_url: str) -> None:
        self.moto_port, gateway_port = free_port(), free_port()
        ports = ["--web-port", "0", "--gateway-port", str(gateway_port), "--aws-port", "0"]
        ports += ["--dynamodb-port", str(self.moto_port)]
        self.process = subprocess.Popen(
            [str(Path(sys.executable).with_name("relay")), "up", *ports, "--agent-url", agent_url, "--model", "speak"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.gateway_url = f"ws://127.0.0.1:{gateway_port}/local"
        self.token = self._wait_for(r"^dev token \([^)]*\): (\S+)").group(1)

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in iter(self.process.stdout.readline, ""):
            self.lines.put(line)

    def _wait_for(self, pattern: str) -> re.Match[str]:
        deadline = time.monotonic() + DEADLINE_S
        seen: list[str] = []
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                assert self.process.poll() is None, f"relay up exited {self.process.returncode}: {''.join(seen)}"
                continue
            seen.append(line)
            if match := re.match(pattern, line):
                return match
        raise AssertionError(f"relay up never printed {pattern!r}: {''.join(seen)}")

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=60)


class HandRunAgent:
    """``voice-agent`` as docs/local-stack.md runs it beside relay up: its history in relay up's moto S3."""

    def __init__(self, *, port: int, tts_url: str, moto_port: int) -> None:
        env = {
            **os.environ,
            S3_ENDPOINT_ENV: f"http://127.0.0.1:{moto_port}",
            "VOICE_AGENT_HISTORY_BUCKET": HISTORY_BUCKET,
        }
        exe = Path(sys.executable).with_name("voice-agent")
        self.process = subprocess.Popen(
            [str(exe), "--port", str(port), "--tts-url", tts_url, "--speak-tokens-per-s", "1000"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"voice-agent exited {self.process.returncode}"
            try:
                if httpx.get(f"http://127.0.0.1:{port}/ping", timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise AssertionError("voice-agent never answered /ping")

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)


@pytest.fixture
def agent_port() -> int:
    return free_port()


@pytest.fixture
def relay_up(agent_port: int) -> Iterator[RelayUp]:
    up = RelayUp(f"http://127.0.0.1:{agent_port}")
    try:
        yield up
    finally:
        up.stop()


def _turn(up: RelayUp, prompt: str) -> None:
    report = asyncio.run(run_turn(up.gateway_url, up.token, prompt, timeout_s=DEADLINE_S))
    assert report.outcome is TurnOutcome.COMPLETED, report.outcome


def test_relay_up_keeps_a_conversation_across_a_restart_of_its_agent(
    relay_up: RelayUp, agent_port: int, tts_server: Any, bedrock_env: Any
) -> None:
    def start() -> HandRunAgent:
        return HandRunAgent(port=agent_port, tts_url=tts_server.ws_url, moto_port=relay_up.moto_port)

    agent = start()
    try:
        _turn(relay_up, FIRST)
    finally:
        agent.kill()
    agent = start()
    try:
        _turn(relay_up, SECOND)
    finally:
        agent.kill()
    sent = bedrock_env.runtime.last_request
    assert [(m.role, m.text) for m in sent.messages] == [("user", FIRST), ("assistant", FIRST), ("user", SECOND)]
