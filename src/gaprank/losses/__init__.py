"""Learning-to-rank objectives. So far: the all-pairs swap deltas that LambdaRank and LambdaMART use."""

from ..metrics._swap import swap_deltas

__all__ = ["swap_deltas"]
