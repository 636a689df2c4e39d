"""Issue 26.2: the memory `pgarena estimate` measures aggregation against is the functions' own."""

from pgarena.planning.footprint import AGGREGATE_MEMORY_MIB
from pgarena_cdk import constants


def test_estimate_s_aggregation_memory_is_the_aggregating_functions_memory():
    assert constants.AGGREGATE.memory_mib == constants.FINALIZE_STOPPED.memory_mib == AGGREGATE_MEMORY_MIB
