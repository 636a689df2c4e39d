"""One step's life in a worker, as a use case: the tool run and its evidence (run, tool_run, slo,
summary), the step served under its heartbeat and hard stop and its task token answered (serve), and
a warm worker's slot (slot). It works through pgarena.campaign.ports; pgarena.worker wires the adapters.
"""
