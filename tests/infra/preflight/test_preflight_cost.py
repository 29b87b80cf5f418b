"""The cost line: Pricing API first, the dated built-in table when the API cannot answer."""

from __future__ import annotations

import json
from typing import Any

from tests.infra.preflight.stubs import Stubbed

from relay_infra.preflight.cost import check_cost
from relay_infra.preflight.prices import PRICE_TABLE, hosting_price, price_filters
from relay_infra.preflight.result import Status

INSTANCE = "ml.g5.xlarge"


def _product(component: str, usd: str, unit: str = "Hrs") -> str:
    return json.dumps(
        {
            "product": {
                "productFamily": "ML Instance",
                "attributes": {"instanceName": INSTANCE, "component": component},
            },
            "terms": {
                "OnDemand": {
                    "SKU.TERM": {"priceDimensions": {"SKU.TERM.DIM": {"unit": unit, "pricePerUnit": {"USD": usd}}}}
                }
            },
        }
    )


def _get_products(region: str) -> dict[str, Any]:
    return {"ServiceCode": "AmazonSageMaker", "Filters": price_filters(INSTANCE, region)}


def test_hosting_price_ignores_other_components_and_zero_prices() -> None:
    assert hosting_price([_product("Training", "1.9"), _product("Hosting", "0"), _product("Hosting", "1.5")]) == 1.5
    assert hosting_price([_product("Notebook", "1.2")]) is None


def test_uses_the_pricing_api_when_it_answers(stubbed: Stubbed) -> None:
    pricing, stub = stubbed("pricing")
    stub.add_response(
        "get_products",
        {"PriceList": [_product("Training", "1.6"), _product("Hosting", "1.5")], "FormatVersion": "aws_v1"},
        _get_products("eu-west-1"),
    )
    result = check_cost(pricing, instance_type=INSTANCE, min_instances=2, region="eu-west-1")
    assert result.status is Status.PASS
    assert result.found == (
        "2 x ml.g5.xlarge at $1.500/h = $3.00/h idle (~$2,190/month) (Pricing API, eu-west-1 on demand)"
    )


def test_falls_back_to_the_table_and_says_why(stubbed: Stubbed) -> None:
    pricing, stub = stubbed("pricing")
    stub.add_client_error("get_products", "AccessDeniedException", "no pricing:GetProducts")
    result = check_cost(pricing, instance_type=INSTANCE, min_instances=1, region="us-east-1")
    assert result.status is Status.PASS
    assert f"${PRICE_TABLE[INSTANCE]:.3f}/h" in result.found
    assert "built-in table, us-east-1 on demand as of" in result.found
    assert "Pricing API: AccessDeniedException" in result.found


def test_the_table_price_says_other_regions_may_differ() -> None:
    result = check_cost(None, instance_type=INSTANCE, min_instances=1, region="ap-northeast-1")
    assert result.status is Status.PASS
    assert "no credentials for the Pricing API; ap-northeast-1 may differ" in result.found


def test_warns_when_no_price_is_known(stubbed: Stubbed) -> None:
    pricing, stub = stubbed("pricing")
    stub.add_response("get_products", {"PriceList": [], "FormatVersion": "aws_v1"})
    result = check_cost(pricing, instance_type="ml.g6e.12xlarge", min_instances=1, region="us-east-1")
    assert result.status is Status.WARN
    assert "price unknown" in result.found
    assert "aws.amazon.com/sagemaker" in result.fix
