"""What the local stand-ins share, and the one interface through which one stand-in reaches another.

AWS's wire pieces that more than one stand-in speaks (the REST-JSON error shape, JSON event-stream messages, the
local account and region) and :class:`~relay_local.aws.service.RoutedService`, a stand-in served on the one local
AWS endpoint. Every stand-in package (``gateway``, ``bedrock``, ``sagemaker_frontend``, ``jwks_issuer``,
``moto_dynamodb``) may import this package; it imports none of them, and no stand-in imports another
(tests/test_workspace_imports.py). The stacks (``stack``, ``relay_stack``) wire the stand-ins together.
"""
