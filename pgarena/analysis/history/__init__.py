"""A campaign's history: the index of its finished runs, each ranked metric's series across them, the
runs where a series stops being comparable, and its change points. Pure, but for reading the folders
(`index.read_runs`) and the optional change-point library (`detect`)."""
