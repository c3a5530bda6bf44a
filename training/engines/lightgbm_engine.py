"""The ``lightgbm`` engine: ``lgb.train`` with gaprank's objective or LightGBM's native lambdarank.

``booster.params`` are checked when a config is loaded, from LightGBM's own tables and parser: names
through its alias table (``LGBM_DumpParamAliases``), values by building a Booster on a tiny data set,
which LightGBM's config parser checks; no boosting round is run.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

import lightgbm as lgb
import numpy as np

from gaprank import GaprankInputError
from gaprank.lightgbm import ranking_feval

from ._common import Trained

# LightGBM parameters the config sets through its own keys (canonical names), and where.
_OWN_KEYS = {"objective": "objective", "metric": "evaluation.selection", "num_iterations": "booster.num_boost_round",
             "early_stopping_round": "booster.early_stopping_rounds", "seed": "booster.seed",
             "learning_rate": "booster.learning_rate", "num_leaves": "booster.num_leaves",
             "min_data_in_leaf": "booster.min_data_in_leaf", "num_threads": "booster.num_threads",
             "sigmoid": "objective.sigma", "lambdarank_norm": "objective.norm",
             "lambdarank_truncation_level": "objective.truncation_level", "label_gain": "objective.label_gain"}


def lightgbm_aliases() -> dict[str, str]:
    """Every LightGBM parameter name and alias -> its canonical name, from LightGBM's own table
    (``LGBM_DumpParamAliases``, the table ``lgb.train`` resolves aliases with)."""
    from lightgbm.basic import _ConfigAliases

    return {alias: name for name, aliases in _ConfigAliases._get_all_param_aliases().items()
            for alias in [name, *aliases]}


@contextlib.contextmanager
def _quiet_native_stderr() -> Iterator[None]:
    """LightGBM prints a refused parameter as '[Fatal] ...' from C++ before raising: keep it off the terminal."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def check_lightgbm_params(params: dict[str, Any]) -> None:
    """``booster.params`` checked as LightGBM will read them: names resolved through its alias table
    (an unknown name, a name given twice under two aliases, or one the config sets through its own key
    is an error) and values accepted by LightGBM itself (probed on a tiny data set)."""
    aliases = lightgbm_aliases()
    seen: dict[str, str] = {}
    for key in params:
        name = aliases.get(key)
        if name is None:
            close = difflib.get_close_matches(key, list(aliases), n=3)
            hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
            raise GaprankInputError(f"booster.params: {key!r} is not a LightGBM parameter{hint}")
        if name in _OWN_KEYS:
            alias = f" (LightGBM's alias of {name})" if key != name else ""
            raise GaprankInputError(f"booster.params may not set {key!r}{alias}: it comes from {_OWN_KEYS[name]}")
        if name in seen:
            raise GaprankInputError(f"booster.params sets {name} twice: as {seen[name]!r} and {key!r}")
        seen[name] = key
    features = np.random.default_rng(0).random((40, 3))
    labels = np.tile([0.0, 1.0, 2.0, 1.0], 10)
    try:
        with _quiet_native_stderr():
            data = lgb.Dataset(features, labels, group=[20, 20], params={**params, "verbosity": -1})
            lgb.Booster(params={**params, "objective": "lambdarank", "verbosity": -1}, train_set=data)
    except lgb.basic.LightGBMError as exc:
        reason = str(exc).strip().splitlines()[0].split(" at /")[0]
        raise GaprankInputError(f"booster.params: LightGBM refuses them: {reason}") from None


def check(config: Any) -> None:
    """``booster.params`` as LightGBM will read them (no training)."""
    check_lightgbm_params(config.booster.params)


def lightgbm_params(config: Any) -> dict[str, Any]:
    return {**config.booster.lightgbm_params(), **config.objective.build()}


def train(config: Any, fold: Any) -> Trained:
    X, y, group = fold.train.to_flat()
    Xv, yv, gv = fold.vali.to_flat()
    ev = config.evaluation
    train = lgb.Dataset(X, y, group=group, free_raw_data=False)
    vali = lgb.Dataset(Xv, yv, group=gv, reference=train, free_raw_data=False)
    history: dict[str, dict[str, list[float]]] = {}
    feval = ranking_feval([ev.selection], g=ev.g, conventions=ev.conventions)
    start = time.perf_counter()
    booster = lgb.train(
        lightgbm_params(config), train, num_boost_round=config.booster.num_boost_round, valid_sets=[vali],
        valid_names=["vali"], feval=feval,
        callbacks=[lgb.early_stopping(config.booster.early_stopping_rounds, verbose=False),
                   lgb.record_evaluation(history)],
    )
    seconds = time.perf_counter() - start
    best = booster.best_iteration or booster.current_iteration()
    return Trained(lambda features: booster.predict(features, num_iteration=best), int(best),
                    int(booster.current_iteration()), list(history["vali"][feval.names[0]]), seconds,
                    booster.feature_importance("gain").tolist())
