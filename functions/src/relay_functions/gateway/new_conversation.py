"""``newConversation``: start over. The user's conversation (the AgentCore runtime session id in the connections
table, ``conversation#<user id>``) is replaced by a fresh one in one write, so the next turn on any connection of
the user, and on any later connection, reaches a session the agent has no history of. A turn already running keeps
the session its turn record holds (its relay, a cancel and a late barge-in all use that one).

The client gets ``conversation_started`` once the write is made; it sends its next ``sendMessage`` after that
(API Gateway does not keep the order of two messages of a connection). An unrecorded connection is refused
``unauthorized``; nothing else can refuse it, and a second one only starts another fresh conversation.
"""

from __future__ import annotations

from relay_core.client.messages import ClientMessage, ConversationStarted, NewConversation, serialize
from relay_functions.gateway.connections import Connection
from relay_functions.gateway.deps import GatewayDeps
from relay_functions.gateway.lambda_handler import action_handler
from relay_functions.gateway.observability import count, logger, tracer
from relay_functions.gateway.route_event import Route, RouteContext


@tracer.capture_method
def start_new_conversation(
    ctx: RouteContext, connection: Connection, message: NewConversation, deps: GatewayDeps
) -> None:
    """Give the connection's user a fresh conversation and tell the client so."""
    deps.connections.new_conversation_session(connection.user_id)
    count("ConversationsStarted")
    logger.info("new conversation started")
    if not ctx.send(serialize(ConversationStarted())):
        logger.info("the client left before conversation_started: its next turn starts the new conversation")


ROUTES: dict[type[ClientMessage], Route] = {NewConversation: start_new_conversation}


handler = action_handler(__name__, ROUTES)
