"""``speech_waiting``, the turn's status while its speech waits for the TTS service: one agent event, relayed to the
client as a numbered turn message like any other (and not mistaken for the turn's end)."""

from __future__ import annotations

import json

from relay_core.agent.events import AgentEnd, SpeechWaiting, parse_event, serialize_event
from relay_core.client.framing import TurnFramer
from relay_core.client.messages import TurnAccepted
from relay_core.client.session import ClientSession, SpeechWaitingReceived, TurnPhase
from relay_core.client.turn_messages import (
    TurnMessage,
    parse_server_message,
    serialize_server_message,
    serialize_turn_message,
)


def test_the_agent_event_round_trips() -> None:
    event = SpeechWaiting("agent-req-1", position=3)
    assert json.loads(serialize_event(event)) == {"request_id": "agent-req-1", "position": 3, "type": "speech_waiting"}
    assert parse_event(serialize_event(event)) == event


def test_the_relay_numbers_it_for_the_client_and_the_turn_goes_on() -> None:
    framer = TurnFramer("t-1")
    (text,) = framer.frame(SpeechWaiting("agent-req-1", position=2))
    assert json.loads(text) == {"type": "speech_waiting", "turn_id": "t-1", "seq": 0, "position": 2}
    message = parse_server_message(text)
    assert isinstance(message, TurnMessage) and not message.terminal
    assert message.event == SpeechWaiting("t-1", position=2)
    assert not framer.finished
    (end,) = framer.frame(AgentEnd("agent-req-1"))
    assert json.loads(end)["seq"] == 1


def test_the_client_session_reports_it_as_a_status_of_the_live_turn() -> None:
    session = ClientSession()
    session.send_message("Hi", turn_id="t-1")
    session.receive(serialize_server_message(TurnAccepted("t-1")))
    (event,) = session.receive(serialize_turn_message(TurnMessage("t-1", 0, SpeechWaiting("t-1", position=2))))
    assert event == SpeechWaitingReceived("t-1", 0, 2)
    assert session.turn("t-1").phase is TurnPhase.ACTIVE
