"""The stack's cost whether campaigns run or not (pgarena.planning.fixed_cost), printed by `pgarena estimate`."""

from typer.testing import CliRunner

from pgarena.cli import app
from pgarena.planning.fixed_cost import HOURS_PER_MONTH, fixed_monthly_cost
from tests.conftest import FIXTURES


def test_a_nat_gateway_and_its_address_by_the_month():
    # Given us-east-1's list prices ($0.045/h NAT gateway, $0.005/h public IPv4)
    cost = fixed_monthly_cost("us-east-1")

    # Then one NAT gateway and its Elastic IP cost $36.50 a month
    assert (round(cost.nat_usd, 2), round(cost.address_usd, 2), round(cost.total_usd, 2)) == (32.85, 3.65, 36.50)
    assert HOURS_PER_MONTH == 730


def test_a_region_without_prices_is_priced_as_the_default_and_says_so():
    cost = fixed_monthly_cost("ap-south-2")
    assert cost.priced_as == "us-east-1" and "ap-south-2 (priced as us-east-1)" in cost.line()


def test_estimate_prints_the_fixed_cost_on_its_own_line():
    result = CliRunner().invoke(
        app, ["estimate", "--matrix", str(FIXTURES / "matrices" / "minimal.json"), "--region", "eu-west-1"]
    )
    assert result.exit_code == 0, result.output
    (line,) = [row for row in result.output.splitlines() if row.startswith("stack's fixed cost:")]
    assert "$38.69/month in eu-west-1" in line and "none with a given VPC" in line
