"""relay_infra: the AWS CDK app (stacks compose constructs)."""
