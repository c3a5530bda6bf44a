"""Graded implicit feedback: click logs (a document shown at a position in a session, and the event it got: none,
click, cart, purchase) and a simulator of such logs from true grades, for trying a learner without a log.

The simulator follows the standard offline protocol (Joachims et al. 2017; Ai et al. 2018): a logging ranker's
top documents are shown; the user examines them by a position-based or a cascade model, with or without trust
bias, and each examined document gets an event whose probability grows with its true grade. The examination
propensities, known or estimated from a log with randomised top ranks, give the weights of inverse-propensity
estimates (the metrics' ``weights=``)."""

from ._affine import estimate_affine
from ._dla import DualLearningLoss, session_lists
from ._em import em_propensities
from ._files import ClickLogError, count_clicks, read_click_log, write_click_log
from ._joint import JointObjective, JointPropensities
from ._log import EVENTS, ClickCounts, ClickLog
from ._propensities import estimate_propensities, inverse_propensities
from ._simulator import ClickModel, simulate_clicks
from ._training import ClickTrainingSet, click_training_set

__all__ = ["EVENTS", "ClickCounts", "ClickLog", "ClickLogError", "ClickModel", "ClickTrainingSet", "DualLearningLoss",
           "JointObjective", "JointPropensities",
           "click_training_set", "count_clicks", "em_propensities", "estimate_affine", "estimate_propensities",
           "inverse_propensities", "read_click_log", "session_lists", "simulate_clicks", "write_click_log"]
