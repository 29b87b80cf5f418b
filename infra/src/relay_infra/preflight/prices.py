"""On-demand hourly prices of SageMaker real-time inference instances, and how to read them from the Price List.

:data:`PRICE_TABLE` is the offline fallback: US East (N. Virginia), on demand, USD per instance-hour, from the
AWS SageMaker AI pricing page (https://aws.amazon.com/sagemaker/ai/pricing/, "Real-Time Inference"), as
recorded in :data:`PRICES_AS_OF`. Prices change and differ by region: the Pricing API
(pricing:GetProducts, served from us-east-1) is asked first, and the table only when it cannot answer.
"""

from __future__ import annotations

import json
from typing import Any

PRICES_AS_OF = "2025-10"
PRICE_TABLE_REGION = "us-east-1"
PRICE_TABLE: dict[str, float] = {
    "ml.g4dn.xlarge": 0.736,
    "ml.g5.xlarge": 1.408,
    "ml.g5.2xlarge": 1.515,
}
"""USD per hour, real-time inference, on demand, us-east-1 (the project's default is ml.g5.xlarge)."""

PRICING_REGION = "us-east-1"
"""The Price List API's endpoint region (it also answers from eu-central-1 and ap-south-1)."""
SERVICE_CODE = "AmazonSageMaker"


def price_filters(instance_type: str, region: str) -> list[dict[str, str]]:
    """pricing:GetProducts filters for one SageMaker ML instance in one region."""
    return [
        {"Type": "TERM_MATCH", "Field": "productFamily", "Value": "ML Instance"},
        {"Type": "TERM_MATCH", "Field": "regionCode", "Value": region},
        {"Type": "TERM_MATCH", "Field": "instanceName", "Value": instance_type},
    ]


def hosting_price(price_list: list[str]) -> float | None:
    """The on-demand USD per hour of the real-time hosting product among GetProducts' ``PriceList`` entries
    (JSON strings); None when none of them is a hosting price."""
    for entry in price_list:
        product = json.loads(entry)
        attributes = product.get("product", {}).get("attributes", {})
        if "Hosting" not in (attributes.get("component"), attributes.get("platoinstancetype")):
            continue
        for term in product.get("terms", {}).get("OnDemand", {}).values():
            for dimension in term.get("priceDimensions", {}).values():
                usd = float(dimension.get("pricePerUnit", {}).get("USD", "0"))
                if dimension.get("unit") == "Hrs" and usd > 0:
                    return usd
    return None


def api_price(pricing: Any, instance_type: str, region: str) -> float | None:
    """The Price List's hourly price of ``instance_type`` hosting in ``region`` (None: not listed)."""
    for page in pricing.get_paginator("get_products").paginate(
        ServiceCode=SERVICE_CODE, Filters=price_filters(instance_type, region)
    ):
        price = hosting_price(page.get("PriceList", []))
        if price is not None:
            return price
    return None
