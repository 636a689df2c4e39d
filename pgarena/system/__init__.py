"""The operating system's side, low in the layers: processes (spawning, identity, dying with a parent)
and where the PostgreSQL programs are. Used by the tools, the worker and the local runtime; it imports
nothing of pgarena but the models."""
