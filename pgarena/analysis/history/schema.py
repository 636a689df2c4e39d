"""`pgarena history --json`: what the history of campaigns and their series is, as one documented schema."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

Metric = Literal["tps", "p95_ms"]
Direction = Literal["better", "worse"]


class RunEntry(BaseModel):
    """One finished run of a campaign: one results folder."""

    run: int = Field(description="1-based, in the order the runs started")
    campaign_id: str
    folder: str = Field(description="the results folder, as found under the root")
    started_at: str
    finished_at: str
    status: str = Field(description="completed, cancelled or failed (results.json's status)")
    targets: list[str]
    failed_targets: list[str] = Field(default_factory=list)
    headline: str = Field(description="the stored verdict (pgarena.analysis.headline), '' when nothing was ranked")
    cost_usd: float | None = Field(None, description="the actual cost, else the estimate; None when not recorded")
    priced_as_aws: bool = Field(
        False, description="a local run (every target's workers on this machine): cost_usd is what it would have cost in AWS"
    )


class IndexedRun(BaseModel):
    """A finished campaign run as finalize indexes it in AWS (the results table, one item per run)."""

    campaign: str
    campaign_id: str
    started_at: str
    finished_at: str
    status: str
    targets: list[str]
    failed_targets: list[str] = Field(default_factory=list)
    headline: str
    cost_usd: float | None = None
    results_key: str = Field(description="results.json's key in the results bucket")


class CampaignEntry(BaseModel):
    """A campaign name and its runs under the root."""

    campaign: str
    runs: int
    first_started_at: str
    last_started_at: str
    last_status: str
    last_campaign_id: str


class TrendPoint(BaseModel):
    """One run's figure of a series: the mean over the run's repetitions and its 95% interval."""

    run: int
    campaign_id: str
    started_at: str
    value: float
    ci95_low: float | None = None
    ci95_high: float | None = None
    n: int = Field(description="repetitions the figure is over")


class Split(BaseModel):
    """Where a series stops being comparable: a fact results.json records changed at this run."""

    run: int
    started_at: str
    changed: list[str] = Field(description="what changed, e.g. 'setting shared_buffers: 128MB -> 256MB'")


class Change(BaseModel):
    """A change point: the series' level from `run` on differs from the level before, beyond its noise."""

    run: int = Field(description="the first run at the new level")
    started_at: str
    ratio: float = Field(description="mean after / mean before (runs of the same comparable segment)")
    ci95_low: float = Field(description="95% interval of the ratio: Welch's t on the log values")
    ci95_high: float
    p: float
    direction: Direction = Field(description="worse: tps lower or latency higher")
    before_runs: int
    after_runs: int
    message: str = Field(description="the change in the user's units")


class Series(BaseModel):
    """One ranked metric of one target x workload x client count across a campaign's runs."""

    target: str
    workload: str
    clients: int | None
    metric: Metric
    unit: str
    points: list[TrendPoint]
    splits: list[Split] = Field(default_factory=list, description="runs from which the series is not comparable with before")
    changes: list[Change] = Field(default_factory=list)

    @property
    def label(self) -> str:
        clients = f" {self.clients} clients" if self.clients is not None else ""
        return f"{self.target} {self.workload}{clients}"


class Detector(BaseModel):
    """How change points were found, so a reader can weigh them."""

    library: str
    method: str
    min_runs: int = Field(description="runs needed on each side of a change")
    threshold: float = Field(description="a relative change smaller than this is not reported")
    alpha: float


class History(BaseModel):
    """`pgarena history NAME --json`: the campaign's runs, its series and what changed."""

    campaign: str
    root: str
    runs: list[RunEntry]
    series: list[Series] = Field(default_factory=list)
    detector: Detector | None = Field(None, description="None when the change-point library is not installed")
    gate: list[str] = Field(default_factory=list, description="changes for the worse at the latest runs (--fail-on-change)")


class Campaigns(BaseModel):
    """`pgarena history --json`: every campaign under the root."""

    root: str
    campaigns: list[CampaignEntry]
    unreadable: list[str] = Field(default_factory=list, description="folders whose results.json could not be read, and why")
