"""``relay deploy preflight`` (``make preflight``): read-only checks of a target AWS account before a deploy.

Each check is a plain function over boto3 clients (or a local command) that returns one
:class:`~relay_infra.preflight.result.CheckResult`; none of them changes anything in the account. The runner
(:mod:`relay_infra.preflight.runner`) builds the clients, runs every check, prints one line per check and exits
non-zero when any check failed or could not run. docs/deploy.md ("Before the first deploy: make preflight")
describes each check and its fix.
"""
