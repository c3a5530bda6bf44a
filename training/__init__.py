"""The experiment scripts (``python -m training.cv``, ``training.lambdamart``, ``training.compare``,
``training.tune``): not part of the wheel.

Before torch, XGBoost or LightGBM load their OpenMP runtimes, their idle threads are told to spin briefly,
then sleep (``GOMP_SPINCOUNT=20000``, a fifteenth of GNU OpenMP's default), unless the environment already sets
a wait policy or spin count: long-spinning threads take the cores from the threads with work when other
processes are busy beside a run, and always sleeping (``OMP_WAIT_POLICY=PASSIVE``) slows the run when the
machine is idle. The numbers do not change (docs/scale.md, "Threads")."""

import os

if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
    os.environ["GOMP_SPINCOUNT"] = "20000"
