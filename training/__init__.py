"""The experiment scripts (``python -m training.cv``, ``training.lambdamart``, ``training.compare``,
``training.tune``): not part of the wheel.

Before torch, XGBoost, LightGBM or numba load, these programs choose how idle threads wait, unless the
environment already says (docs/scale.md, "Threads"); the numbers do not change:

* OpenMP's idle threads spin briefly, then sleep (``GOMP_SPINCOUNT=20000``, a fifteenth of GNU OpenMP's default),
  unless a wait policy or spin count is set: long-spinning threads take the cores from the threads with work
  when other processes are busy beside a run, and always sleeping (``OMP_WAIT_POLICY=PASSIVE``) slows the run
  when the machine is idle.
* gaprank's compiled kernels run on numba's ``workqueue`` threading layer, whose idle threads sleep, unless
  ``NUMBA_THREADING_LAYER`` (or its priority list) is set: beside busy processes, numba's OpenMP layer made
  README's main job take 3.28x its idle time against 2.83x (docs/benchmarks.md, "Scale and shared machines").
  The library itself chooses no layer; these programs are its users.
"""

import os

if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
    os.environ["GOMP_SPINCOUNT"] = "20000"
if "NUMBA_THREADING_LAYER" not in os.environ and "NUMBA_THREADING_LAYER_PRIORITY" not in os.environ:
    os.environ["NUMBA_THREADING_LAYER"] = "workqueue"
