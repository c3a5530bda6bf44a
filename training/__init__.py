"""The experiment scripts (``python -m training.cv``, ``training.lambdamart``, ``training.compare``,
``training.tune``): not part of the wheel.

Before torch, XGBoost or LightGBM load their OpenMP runtimes, their idle threads are told to sleep instead
of spinning (``OMP_WAIT_POLICY=PASSIVE``) unless the environment already sets a wait policy: spinning
threads take the cores from the threads with work when other processes are busy beside a run. The numbers
do not change (docs/scale.md, "Threads")."""

import os

if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
