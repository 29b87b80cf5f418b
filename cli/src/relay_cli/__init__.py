"""relay_cli: the ``relay`` command line and the clients it speaks with (the gateway's client protocol, the
agent's ``/invocations``).

At module level its modules import only ``relay_core``, each other, ``voice_agent.config`` /
``voice_agent.errors``, ``relay_functions.ops`` and light clients (``websockets``, ``httpx``). The local stand-ins
(``relay_local``), the CDK app (``relay_infra``) and moto are imported only inside the function that needs them
(``--local``, ``relay up``, ``relay speak`` without ``--agent-url``, ``relay ops --local``, ``relay deploy
preflight``), so ``relay --help`` and ``relay chat --gateway-url`` load none of them (tests/cli/test_cli_imports.py).
"""
