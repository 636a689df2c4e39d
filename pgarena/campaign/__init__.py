"""The use cases of a campaign, one module each, between the adapters (Lambda handlers, the worker,
the local runtime, the CLI) and the infrastructure, reached only through the ports (ports.py,
leases.py): claim and plan, guard the cost, preflight and lease, launch, finalize."""
