"""A campaign's nightly runs, built from one real results.json (tests/fixtures/results/nightly): each
run is a copy of it with its own id and day, every repetition's figures scaled by seeded noise, and the
changes a test asks for. The metrics are recomputed from the scaled runs by pgarena's own aggregation,
so every figure history reads is consistent with the runs, as aggregation would have written it."""

from __future__ import annotations

import json
import math
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

from pgarena.analysis.metrics import target_metrics, with_points
from pgarena.model.results import CampaignResults

NIGHTLY = Path(__file__).parent.parent / "fixtures" / "results" / "nightly"
# Run-to-run noise of a run's figures (relative), and of one repetition's within the run.
RUN_NOISE = 0.02
REPETITION_NOISE = 0.01


@dataclass
class Night:
    """What happens to one run: each target's speed factor (tps x f, latency / f) and setting changes."""

    speed: dict[str, float] = field(default_factory=dict)
    settings: dict[str, dict[str, str]] = field(default_factory=dict)  # target -> {setting: value}
    run: dict[str, object] = field(default_factory=dict)  # the matrix's workload's run settings changed


def _scaled(results: CampaignResults, night: Night, rng: random.Random) -> CampaignResults:
    targets = []
    for target in results.targets:
        run_factor = night.speed.get(target.name, 1.0) * math.exp(rng.gauss(0, RUN_NOISE))
        workloads = []
        for w in target.workloads:
            f = run_factor * math.exp(rng.gauss(0, REPETITION_NOISE))
            latency = w.latency_ms.model_copy(
                update={k: v / f for k, v in w.latency_ms.model_dump().items() if v is not None and k != "stddev"}
            )
            workloads.append(w.model_copy(update={"tps": (w.tps or 0) * f, "latency_ms": latency}))
        server = target.server
        changed = night.settings.get(target.name, {})
        if server is not None and changed:
            settings = [s.model_copy(update={"setting": changed.get(s.name, s.setting)}) for s in server.settings]
            server = server.model_copy(update={"settings": settings})
        targets.append(target.model_copy(update={"workloads": workloads, "server": server}))
    metrics = [target_metrics(t, results.campaign_id) for t in targets]
    targets = [with_points(t, m) for t, m in zip(targets, metrics, strict=True)]
    return results.model_copy(update={"targets": targets, "metrics": metrics})


def _renamed(text: str, suffix: str) -> str:
    """The fixture's targets a and b named a<suffix> and b<suffix>: every value "a" or "b", never a key."""
    return re.sub(r'"([ab])"(?!\s*:)', lambda m: f'"{m[1]}{suffix}"', text)


def write_nights(root: Path, nights: list[Night], seed: int = 5, suffix: str = "") -> list[Path]:
    """One results folder per night under root, a day apart, each with its results.json and matrix.json;
    `suffix` lengthens the targets' names (a page's layout under long names)."""
    rng = random.Random(seed)
    real = CampaignResults.model_validate_json(_renamed((NIGHTLY / "results.json").read_text(), suffix))
    matrix = json.loads(_renamed((NIGHTLY / "matrix.json").read_text(), suffix))
    nights = [
        Night({k + suffix: v for k, v in n.speed.items()}, {k + suffix: v for k, v in n.settings.items()}, n.run) for n in nights
    ]
    folders = []
    for day, night in enumerate(nights, start=1):
        campaign_id = f"nightly-202612{day:02d}T020000Z-{day:06x}"
        results = _scaled(real, night, rng).model_copy(
            update={
                "campaign_id": campaign_id,
                "started_at": f"2026-12-{day:02d}T02:00:00.000+00:00",
                "finished_at": f"2026-12-{day:02d}T02:01:00.000+00:00",
            }
        )
        folder = root / campaign_id
        folder.mkdir(parents=True)
        (folder / "results.json").write_text(results.model_dump_json())
        for target in matrix["targets"]:
            target["embedded"]["settings"].update(night.settings.get(target["name"], {}))
        matrix["workloads"][0]["run"].update(night.run)
        (folder / "matrix.json").write_text(json.dumps(matrix))
        folders.append(folder)
    return folders
