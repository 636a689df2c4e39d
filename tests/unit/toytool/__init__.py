"""A toy benchmark tool from outside pgarena: its run record and its Tool, registered only by the test
that uses it (pgarena.tools.registry.registered)."""
