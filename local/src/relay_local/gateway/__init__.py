"""The local stand-ins for the AWS-managed data planes above which the relay's own code runs unchanged:
an API Gateway WebSocket API (:mod:`.websocket_api`) with its ``@connections`` HTTP API
(:mod:`.connections_api`), the Lambda Invoke endpoint (:mod:`.lambda_invoke`) and the AgentCore data plane
(:mod:`.agentcore_dataplane`)."""
