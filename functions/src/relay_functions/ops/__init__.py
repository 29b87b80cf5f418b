"""Task functions of the Step Functions workflows (smoke test, dependency audit, cleanup)."""
