"""gaprank.dask: query-aligned partitions, and gaprank's objectives on a Dask LocalCluster with LightGBM and
XGBoost (one worker: the local model; two workers: each worker's gradients are the single-process ones)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("distributed")
pytest.importorskip("pandas")

import cloudpickle  # noqa: E402
import dask.array as da  # noqa: E402
import lightgbm as lgb  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402

from gaprank import GaprankInputError  # noqa: E402
from gaprank.dask import check_query_partitions, partition_by_query  # noqa: E402
from gaprank.lightgbm import SklearnObjective, sklearn_objective  # noqa: E402

# n_jobs: the local model's threads; Dask workers have their own (one), and LightGBM says it ignores n_jobs there
pytestmark = pytest.mark.filterwarnings("ignore:Parameter n_jobs will be ignored")
PARAMS = dict(n_estimators=8, num_leaves=7, min_child_samples=10, learning_rate=0.1, deterministic=True,
              force_row_wise=True, verbose=-1, seed=1, n_jobs=1)


def _data(seed=0, queries=30):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 25, queries)
    y = np.concatenate([rng.integers(0, 3, n) for n in sizes]).astype(np.float64)
    X = rng.normal(size=(y.size, 5))
    X[:, 0] += y
    return X, y, sizes, np.repeat(np.arange(100, 100 + queries), sizes)


def test_partitions_are_cut_at_query_boundaries_and_balanced_by_documents():
    X, y, sizes, qid = _data()
    dX, dy, dgroup = partition_by_query(X, y, qid, 4)
    assert dX.chunks[0] == dy.chunks[0] and len(dX.chunks[0]) == len(dgroup.chunks[0]) == 4
    ends = np.cumsum(sizes)
    assert set(np.cumsum(dX.chunks[0])) <= set(ends)  # every partition ends where a query ends
    for rows, group in zip(dX.chunks[0], dgroup.to_delayed().tolist(), strict=True):
        assert group.compute().sum() == rows
    assert max(dX.chunks[0]) - min(dX.chunks[0]) <= 2 * sizes.max()
    np.testing.assert_array_equal(dgroup.compute(), sizes)
    np.testing.assert_array_equal(dX.compute(), X)
    check_query_partitions(da.from_array(qid, chunks=(dX.chunks[0],)))


def test_split_and_scattered_queries_are_refused():
    X, y, sizes, qid = _data()
    with pytest.raises(GaprankInputError, match=r"query 10\d is split across partitions"):
        check_query_partitions(da.from_array(qid, chunks=sizes[0] + 1))
    shuffled = qid.copy()
    shuffled[[0, -1]] = shuffled[[-1, 0]]
    with pytest.raises(GaprankInputError, match="are not contiguous"):
        partition_by_query(X, y, shuffled, 2)
    with pytest.raises(GaprankInputError, match="npartitions must be an integer in 1..30"):
        partition_by_query(X, y, qid, 31)
    with pytest.raises(GaprankInputError, match=r"X must be \(rows, features\) with y and qid one per row"):
        partition_by_query(X, y[:-1], qid, 2)
    with pytest.raises(GaprankInputError, match="qid must be a non-empty 1-D array"):
        partition_by_query(X[:0], y[:0], qid[:0], 1)


class RecordingObjective(SklearnObjective):
    """Saves what each call on a worker saw and returned, for the test to recompute in one process."""

    def __init__(self, objective, folder: str) -> None:
        super().__init__(objective.objective)
        self.folder = folder
        self.calls = 0

    def __call__(self, y_true, y_pred, weight, group):
        grad, hess = super().__call__(y_true, y_pred, weight, group)
        import os

        np.savez(Path(self.folder) / f"{os.getpid()}-{self.calls}.npz", y=y_true, preds=y_pred, group=group,
                 grad=grad, hess=hess)
        self.calls += 1
        return grad, hess


cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers need not import this test module


@pytest.fixture(scope="module")
def one_worker():
    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0") as cluster, Client(cluster) as client:
        yield client


@pytest.fixture(scope="module")
def two_workers():
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, Client(cluster) as client:
        yield client


def test_one_worker_trains_the_local_model(one_worker):
    X, y, sizes, qid = _data()
    dX, dy, dgroup = partition_by_query(X, y, qid, 3)
    remote = lgb.DaskLGBMRanker(objective=sklearn_objective("gap", g=[0.5, 0.5]), client=one_worker, **PARAMS)
    remote.fit(dX, dy, group=dgroup)
    local = lgb.LGBMRanker(objective=sklearn_objective("gap", g=[0.5, 0.5]), **PARAMS).fit(X, y, group=sizes)
    np.testing.assert_allclose(remote.to_local().predict(X), local.predict(X), rtol=0, atol=1e-12)


def test_each_of_two_workers_computes_the_single_process_gradients_of_its_queries(two_workers, tmp_path):
    X, y, sizes, qid = _data()
    dX, dy, dgroup = partition_by_query(X, y, qid, 2)
    recording = RecordingObjective(sklearn_objective("egap", g=[0.5, 0.5]), str(tmp_path))
    model = lgb.DaskLGBMRanker(objective=recording, client=two_workers, **PARAMS).fit(dX, dy, group=dgroup)
    assert np.isfinite(model.to_local().predict(X)).all()
    calls = [np.load(path) for path in sorted(tmp_path.glob("*.npz"))]
    workers = {path.name.split("-")[0] for path in tmp_path.glob("*.npz")}
    assert len(workers) == 2 and len(calls) == 2 * PARAMS["n_estimators"]
    single = sklearn_objective("egap", g=[0.5, 0.5])
    for call in calls:
        group = call["group"].astype(int)
        assert group.sum() == call["y"].size and set(group.tolist()) <= set(sizes.tolist())
        grad, hess = single(call["y"], call["preds"], None, group)
        np.testing.assert_array_equal(call["grad"], grad)
        np.testing.assert_array_equal(call["hess"], hess)
    # together the workers saw every row once, in whole queries
    first_round = [c for c in calls if c["preds"].std() == 0]
    assert sum(c["y"].size for c in first_round) == y.size


def _xgboost_case():
    xgb = pytest.importorskip("xgboost")
    import xgboost.dask  # noqa: F401  (a submodule XGBoost does not import by itself)

    X, y, sizes, qid = _data()
    params = {"tree_method": "hist", "max_depth": 3, "eta": 0.1, "nthread": 1, "base_score": 0.5, "seed": 0}
    return xgb, X, y, qid, params


def test_xgboost_dask_with_one_worker_trains_the_local_model(one_worker):
    import gaprank.xgboost as gx

    xgb, X, y, qid, params = _xgboost_case()
    dX, dy, _ = partition_by_query(X, y, qid, 2)
    with one_worker.as_current():  # XGBoost looks up the current client in places: make it this cluster's
        data = xgb.dask.DaskDMatrix(one_worker, dX, dy, qid=da.from_array(qid, chunks=(dX.chunks[0],)))
        remote = xgb.dask.train(one_worker, params, data, 8, obj=gx.objective("gap", g=[0.5, 0.5]))["booster"]
    local_data = xgb.DMatrix(X, label=y, qid=qid)
    local = xgb.train(params, local_data, 8, obj=gx.objective("gap", g=[0.5, 0.5]))
    np.testing.assert_allclose(remote.predict(local_data), local.predict(local_data), atol=1e-6)


def test_xgboost_dask_with_two_workers_trains_on_query_aligned_partitions(two_workers):
    import gaprank.xgboost as gx

    xgb, X, y, qid, params = _xgboost_case()
    dX, dy, _ = partition_by_query(X, y, qid, 2)
    dqid = da.from_array(qid, chunks=(dX.chunks[0],))
    check_query_partitions(dqid)
    with two_workers.as_current():
        data = xgb.dask.DaskDMatrix(two_workers, dX, dy, qid=dqid)
        booster = xgb.dask.train(two_workers, params, data, 8, obj=gx.objective("gap", g=[0.5, 0.5]))["booster"]
    scores = booster.predict(xgb.DMatrix(X, label=y, qid=qid))
    assert np.isfinite(scores).all() and scores.std() > 0


def test_click_log_files_counted_on_the_cluster_are_the_local_counts(tmp_path):
    """Four files counted one task per file on two workers: the local count of the same files, sessions and ids
    included; a session in two files is the local error, naming the later file's line."""
    from gaprank.clicks import ClickLogError, ClickModel, simulate_clicks, write_click_log
    from gaprank.clicks import count_clicks as count_locally
    from gaprank.dask import count_clicks
    from gaprank.data import RankingSplit

    sizes = [6, 4, 8]
    split = RankingSplit(features=np.zeros((18, 1)), labels=np.tile([2, 1, 0], 6),
                         qids=np.repeat(["q1", "q2", "q3"], sizes), docids=np.array([f"d{i}" for i in range(18)]))
    log = simulate_clicks(split, -np.arange(18.0), 200, ClickModel(eta=1.0), shown=4, seed=3)
    files = []
    for number, (first, last) in enumerate([(0, 50), (50, 51), (51, 120), (120, 200)]):
        files.append(tmp_path / f"day{number}.csv")
        write_click_log(files[-1], log.sessions_between(first, last), split)
    local = count_locally(files, split, positions=4)
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, Client(cluster) as client:
        counted = count_clicks(files, split, client=client, positions=4)
        assert counted.sessions == local.sessions == 200
        np.testing.assert_array_equal(counted.counts, local.counts)
        np.testing.assert_array_equal(counted.session_ids, local.session_ids)
        np.testing.assert_array_equal(counted.counts, log.count(18, positions=4).counts)
        again = tmp_path / "again.csv"
        again.write_text(files[1].read_text())  # session 50 once more
        with pytest.raises(ClickLogError, match=r"again.csv, line 2: session '50' was already read from .*day1.csv"):
            count_clicks([*files, again], split, client=client, positions=4)
        with pytest.raises(GaprankInputError, match=r"no click log files given \(paths is empty\)"):
            count_clicks([], split, client=client)
