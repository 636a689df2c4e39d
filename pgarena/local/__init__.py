"""The local runtime: the campaign state machine on one machine, with no cloud account."""
