"""The API Gateway WebSocket route handlers and the turn relay."""
