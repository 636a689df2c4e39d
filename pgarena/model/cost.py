"""A campaign's cost estimate: one region's list prices, and the estimate's lines and totals."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class RegionPrices(BaseModel):
    """On-demand list prices of one region, in USD."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fargate_vcpu_hour: float = Field(description="Fargate Linux/x86, per vCPU-hour")
    fargate_gb_hour: float = Field(description="Fargate Linux/x86, per GB of memory per hour")
    fargate_spot_discount: float = Field(description="typical Fargate Spot discount off on-demand (Spot prices vary)")
    lambda_gb_second: float = Field(description="Lambda x86_64 (the functions' architecture), per GB-second")
    lambda_request: float = Field(description="Lambda, per request")
    sfn_transition: float = Field(description="Step Functions standard workflows, per state transition")
    dynamodb_write: float = Field(description="DynamoDB on-demand, per write request unit")
    dynamodb_read: float = Field(description="DynamoDB on-demand, per read request unit")
    s3_put: float = Field(description="S3 Standard, per PUT request")
    s3_get: float = Field(description="S3 Standard, per GET request")


class CostLine(BaseModel):
    item: str
    quantity: float
    unit: str
    unit_price_usd: float
    usd: float
    note: str = ""


class CostEstimate(BaseModel):
    region: str
    prices_as_of: str = Field(description="the date of the list prices used")
    worker_vcpu: float
    worker_memory_gb: float
    spot: bool = False
    tasks: int = Field(
        description="worker tasks: estimated one per target, phase and shard (a warm worker runs the phase's steps); "
        "once run, the workers the steps recorded"
    )
    worker_task_s: float = Field(description="billed Fargate seconds over all worker tasks")
    wall_s: float = Field(description="the campaign's wall time, start to results")
    lines: list[CostLine]
    total_usd: float
    bound_usd: float | None = Field(
        None, description="every step running to its timeout and the worker's hard stop: what can be billed at most"
    )
    notes: list[str] = Field(default_factory=list)

    def line_usd(self, prefix: str) -> float:
        return round(sum(line.usd for line in self.lines if line.item.startswith(prefix)), 6)

    def breakdown(self) -> str:
        """One sentence for refusal messages: the biggest items first."""
        groups = {
            "workers (Fargate)": self.line_usd("Fargate"),
            "targets": self.line_usd("target "),
            "AWS services": self.line_usd("Lambda")
            + self.line_usd("Step Functions")
            + self.line_usd("DynamoDB")
            + self.line_usd("S3"),
        }
        # Lines only campaigns with sites have (pgarena.planning.cost: external sites, region sites' uploads).
        for name, prefix in (("workers (ECS Anywhere)", "ECS Anywhere"), ("sites' results across regions", "results from ")):
            if any(line.item.startswith(prefix) for line in self.lines):
                groups[name] = self.line_usd(prefix)
        parts = [f"{name} ${usd:.2f}" for name, usd in sorted(groups.items(), key=lambda kv: -kv[1])]
        return f"{', '.join(parts)}; {self.tasks} worker tasks, about {self.wall_s / 60:.0f} min"
