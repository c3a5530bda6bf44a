"""The LambdaMART engines, one module each: ``check(config)`` (the engine's own parameter checks, run when a
config is loaded, without training) and ``train(config, fold) -> Trained`` (early-stopped on vali)."""

from . import dask_engine, lightgbm_engine, xgboost_engine
from ._common import Trained, select_like_early_stopping

ENGINES = {"lightgbm": lightgbm_engine, "xgboost": xgboost_engine, "lightgbm-dask": dask_engine}

__all__ = ["ENGINES", "Trained", "select_like_early_stopping"]
