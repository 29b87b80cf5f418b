"""Check (informational): what the minimum deployment costs per hour while idle.

The SageMaker endpoint's instances are ~99 % of an idle deployment's bill (docs/deploy.md, "Cost per hour of
the defaults"): the line gives instance price × minimum instances and where the price came from. It only warns
(never fails) when no price is known.
"""

from __future__ import annotations

from typing import Any

from relay_infra.preflight.aws_errors import AwsError, describe
from relay_infra.preflight.prices import PRICE_TABLE, PRICE_TABLE_REGION, PRICES_AS_OF, api_price
from relay_infra.preflight.result import CheckResult, Status

NAME = "cost"
HOURS_PER_MONTH = 730
PRICING_PAGE = "https://aws.amazon.com/sagemaker/ai/pricing/"


def check_cost(pricing: Any | None, *, instance_type: str, min_instances: int, region: str | None) -> CheckResult:
    """Price × ``min_instances`` from the Pricing API when ``pricing`` is a client that answers, else from
    :data:`~relay_infra.preflight.prices.PRICE_TABLE`; the line says which, and why the API was not used."""
    where = region or PRICE_TABLE_REGION
    reason = "no credentials for the Pricing API"
    if pricing is not None:
        try:
            price = api_price(pricing, instance_type, where)
        except AwsError as error:
            reason = f"Pricing API: {describe(error)}"
        else:
            if price is not None:
                return _priced(price, instance_type, min_instances, f"Pricing API, {where} on demand")
            reason = f"Pricing API lists no {instance_type} hosting price in {where}"
    table_price = PRICE_TABLE.get(instance_type)
    if table_price is None:
        return CheckResult(
            NAME,
            Status.WARN,
            f"{min_instances} x {instance_type}: price unknown ({reason}; not in the built-in table)",
            f"look it up on {PRICING_PAGE} (Real-Time Inference) before deploying",
        )
    note = f"built-in table, {PRICE_TABLE_REGION} on demand as of {PRICES_AS_OF}; {reason}"
    if where != PRICE_TABLE_REGION:
        note += f"; {where} may differ"
    return _priced(table_price, instance_type, min_instances, note)


def _priced(price: float, instance_type: str, min_instances: int, source: str) -> CheckResult:
    hourly = price * min_instances
    return CheckResult(
        NAME,
        Status.PASS,
        f"{min_instances} x {instance_type} at ${price:.3f}/h = ${hourly:.2f}/h idle "
        f"(~${hourly * HOURS_PER_MONTH:,.0f}/month) ({source})",
    )
