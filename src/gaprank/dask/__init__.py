"""Ranking data on a Dask cluster: partitions cut at query boundaries, for ``lightgbm.DaskLGBMRanker``
and ``xgboost.dask`` with gaprank's objectives.

Each Dask worker computes the swap deltas of the queries it holds; a query split across two partitions
would be ranked as two separate lists, its gradients silently wrong. :func:`partition_by_query`
never splits one, and :func:`check_query_partitions` finds a split in partitions made elsewhere.

A click log kept as many files (a day's sessions each, say) is counted one file per task by :func:`count_clicks`.
"""

from ._clicks import count_clicks
from ._partitions import check_query_partitions, partition_by_query

__all__ = ["count_clicks", "partition_by_query", "check_query_partitions"]
