"""Driving and watching an execution of the state machine from outside it: `pgarena run --aws`'s client
and the follower that the local runtime shares."""
