"""What a state works on, named for progress: a state's input carries only indices."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from pgarena.campaign.ports import Records
from pgarena.model.plan import Plan, PreflightResult, planned_target


class Subjects:
    """Names what a state works on, for progress (pgarena.remote.follow): the step id or the target's name its
    input's indices stand for, looked up in the plan and preflight's answers (each written once, so kept)."""

    def __init__(self, state: Records):
        self.state = state
        self._plans: dict[str, Plan] = {}
        self._preflights: dict[tuple[str, int, int], PreflightResult] = {}

    def __call__(self, data: Any) -> str:
        if not isinstance(data, dict) or not isinstance(data.get("phase"), int) or not isinstance(data.get("target"), int):
            return ""
        campaign_id, phase, target = str(data.get("campaign_id")), data["phase"], data["target"]
        try:
            if "shard" in data:
                key = (campaign_id, phase, target)
                if key not in self._preflights:
                    self._preflights[key] = self.state.preflight(campaign_id, phase, target)
                return self._preflights[key].steps[int(data["step"]["index"])].shards[int(data["shard"])].step_id
            if campaign_id not in self._plans:
                self._plans[campaign_id] = self.state.plan(campaign_id)
            return planned_target(self._plans[campaign_id], phase, target).name
        except (ClientError, KeyError, IndexError, TypeError):  # not written yet, or not readable: unnamed
            return ""
