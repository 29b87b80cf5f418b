"""The agent's wire (ARCHITECTURE §3): the events the voice agent streams from AgentCore ``/invocations`` and the
payload it accepts (:mod:`.events`), the rules of one agent turn (:mod:`.turn`), and the agent's defaults and
bounds (:mod:`.defaults`)."""
