"""relay_local: the one-laptop stand-ins for AWS, and the ``relay`` command line.

Two halves in one package, declared here and checked by tests/local/test_cli_imports.py:

- the ``relay`` CLI (:data:`CLI_MODULES`): the commands, their options, and the clients they speak with (the
  gateway's client protocol, the agent's ``/invocations``). At module level they import only ``relay_core``,
  each other, ``voice_agent.config`` / ``voice_agent.errors``, ``relay_functions.ops`` and light clients
  (``websockets``, ``httpx``). A stand-in, ``relay_infra`` (the CDK app) or moto is imported only inside the
  function that needs it (``--local``, ``relay up``, ``relay speak`` without ``--agent-url``, ``relay ops
  --local``, ``relay deploy preflight``), so ``relay --help`` and ``relay chat --gateway-url`` load none of them.
- the stand-ins: every other module (the local API Gateway WebSocket and its Lambda, AgentCore and Bedrock
  endpoints, the SageMaker front end, moto, ``VoiceStack`` / ``RelayStack``). They never import a CLI module.
"""

from typing import Final

CLI_MODULES: Final = frozenset(
    {
        "relay_local.agent_client",
        "relay_local.agent_options",
        "relay_local.chat_cli",
        "relay_local.cli",
        "relay_local.cli_args",
        "relay_local.deploy_cli",
        "relay_local.gateway_client",
        "relay_local.interrupts",
        "relay_local.ops_cli",
        "relay_local.speak_cli",
        "relay_local.terminal_logging",
        "relay_local.up_cli",
    }
)
"""The modules of the ``relay`` command line; every other module of ``relay_local`` is a local stand-in."""
