"""LightGBM's ``lambdarank_norm``, the one constant both backends read.

With ``norm=True`` a pair's |Delta M| is divided by ``NORM_OFFSET * sigma + sigma |s_i - s_j|`` and each query's
lambdas and hessians are scaled by log2(1 + S) / S, S their sum (docs: The maths, "LambdaRank and LambdaMART").
"""

import numpy as np

# lambdarank_norm's score-distance offset: LightGBM writes it as the float literal 0.01f.
NORM_OFFSET = float(np.float32(0.01))
