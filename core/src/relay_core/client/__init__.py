"""The client's wire (ARCHITECTURE §4, docs/client-protocol.md): what a mobile or web client sends and the gateway's
control messages (:mod:`.messages`), the numbered envelope of a turn's messages (:mod:`.turn_messages`), the relay's
framer from agent events to those messages (:mod:`.framing`), and the client side as a state machine
(:mod:`.session`)."""
