"""relay_local: the one-laptop stand-ins for AWS and the stack that wires them together.

The local API Gateway WebSocket API and its Lambda functions, the AgentCore and Bedrock endpoints, the SageMaker
front end, DynamoDB (moto), a JWKS token issuer, the web page's server, and ``VoiceStack`` / ``RelayStack`` that
start them. The ``relay`` command line that drives them is ``relay_cli``; nothing here imports it.
"""
