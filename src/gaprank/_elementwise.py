r"""Elementwise log, exp and erfc in float64, compiled (numba) as loops without calls or branches, which
the compiler vectorises: a library function called per element, from a loop over pairs, cost more than the
rest of the kernels that call these.

* :func:`log_into`: within 1 ulp of the correctly rounded logarithm (positive normal values).
* :func:`exp_into`: :math:`e^t = 2^k e^r`, :math:`k = \mathrm{round}(t / \log 2)`, :math:`|r| \le \log 2 / 2`
  (log 2 in two parts, so that r is exact), :math:`e^r` by a polynomial of degree 12; within 2 ulps for
  :math:`-708.39 \le t \le 709`, 0 below (no subnormal results).
* :func:`erfc_into`, for :math:`x \ge 0`: below 0.75, :math:`1 - x P(x^2)` with P a polynomial of degree 11
  for :math:`\mathrm{erf}(x) / x`; from 0.75 on, :math:`e^{-x^2}\, y\, Q(y)` with :math:`y = 4 / (4 + x)` and Q a
  polynomial of degree 23 for the scaled function :math:`\mathrm{erfcx}(x) / y = e^{x^2} \mathrm{erfc}(x) / y`
  (smooth on [0, 16/19], with the limit :math:`1 / (4 \sqrt\pi)` at y = 0), :math:`e^{-x^2}` in two exact
  parts. Within 1e-15 of erfc(x) relative to it (libm's is within 5e-16); where erfc(x) < 2^-1022
  (x > 26.55), within 2^-1022 of it (0 from x = 26.65 on).

The polynomials are Chebyshev fits in 50-digit arithmetic (``mpmath.chebyfit``: 12, 24 and 13 coefficients
on [0, 0.5625], [0, 16/19] and [-log 2 / 2, log 2 / 2]); their fitting errors are below 1e-19 relative, and
``tests/test_elementwise.py`` fits them again and checks every function against mpmath.
"""

from __future__ import annotations

import math

import numpy as np

from ._compiled_setup import jit, numba

# log 2 in two parts (the high one with trailing zero bits, so that e * LN2_HI is exact for |e| < 2^11)
LN2_HI, LN2_LO = 6.93147180369123816490e-01, 1.90821492927058770002e-10
SQRT2 = math.sqrt(2.0)
INV_LN2 = 1.0 / math.log(2.0)
EXP_MIN = -708.39  # below: e^t < 2^-1022, written as 0

# highest degree first
EXP_POLY = (2.09215799649503e-09, 2.5114869528657765e-08, 2.7557251904174915e-07, 2.7557224958392624e-06,
            2.4801587350110797e-05, 0.000198412699092171, 0.001388888888887189, 0.008333333333309528,
            0.04166666666666669, 0.16666666666666702, 0.5, 1.0, 1.0)
ERFC_SPLIT = 0.75
ERFCX_SCALE = 4.0  # y = ERFCX_SCALE / (ERFCX_SCALE + x)
ERF_OVER_X_POLY = (-9.502840894774706e-10, 1.4413879289095029e-08, -1.63332293434337e-07, 1.646038320985815e-06,
                   -1.4925589383821143e-05, 0.00012055331545294116, -0.0008548327001135946, 0.005223977625222192,
                   -0.026866170645118446, 0.11283791670955087, -0.37612638903183754, 1.1283791670955126)
ERFCX_OVER_Y_POLY = (0.001251628323269353, -0.012063244137746103, 0.05242413611445175, -0.13578931077628562,
                     0.23536079946035818, -0.2940273407568435, 0.2801497350552971, -0.20840419409706412,
                     0.1214623614746652, -0.059962867035309994, 0.021248152885912915, -0.005137416198570629,
                     0.00916031496610716, 0.01620716011426104, 0.029192938967323848, 0.04475628119401487,
                     0.06249656963419031, 0.08106519108461767, 0.09903621079545075, 0.11501423387861825,
                     0.12782420252402416, 0.13663966476545594, 0.14104739588693915, 0.14104739588693907)


def log_into(values, logs, scratch, count):  # pragma: no cover - compiled
    """``logs[i] = log(values[i])`` for i < count, positive normal values, within 1 ulp of the correctly
    rounded logarithm (``scratch``: int64, at least count long). With the exponent e and m in
    [sqrt(1/2), sqrt(2)), log = e log 2 + 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172, and the series of
    atanh to s^21 (the next term is below 2^-60 of the result)."""
    bits = values.view(np.int64)
    for i in range(count):  # the mantissa with the exponent of 1: m in [1, 2)
        scratch[i] = (bits[i] & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000
    mantissas = scratch.view(np.float64)
    for i in range(count):
        m = mantissas[i]
        e = float((bits[i] >> 52) - 1023)
        high = m > SQRT2
        m = m * 0.5 if high else m
        e = e + 1.0 if high else e
        f = m - 1.0
        s = f / (2.0 + f)
        z = s * s
        p = 1.0 / 21.0
        p = p * z + 1.0 / 19.0
        p = p * z + 1.0 / 17.0
        p = p * z + 1.0 / 15.0
        p = p * z + 1.0 / 13.0
        p = p * z + 1.0 / 11.0
        p = p * z + 1.0 / 9.0
        p = p * z + 1.0 / 7.0
        p = p * z + 1.0 / 5.0
        p = p * z + 1.0 / 3.0
        tail = 2.0 * s * z * p  # 2 atanh(s) - 2 s
        # 2 s = f - s f, so log m = f - (s f - tail), the small terms first
        logs[i] = e * LN2_HI + ((f - (s * f - tail)) + e * LN2_LO)


def exp_into(exponents, out, scratch, count):  # pragma: no cover - compiled
    """``out[i] = exp(exponents[i])`` for i < count, exponents <= 709 (``scratch``: int64, at least count long):
    :math:`2^k e^r`,
    the power of two made from its bits. ``out`` must not be ``exponents``: the compiler vectorises the loops
    only for arrays that do not overlap."""
    for i in range(count):
        t = exponents[i]
        under = t < EXP_MIN
        t = 0.0 if under else t
        k = math.floor(t * INV_LN2 + 0.5)
        r = (t - k * LN2_HI) - k * LN2_LO
        p = EXP_POLY[0]
        p = p * r + EXP_POLY[1]
        p = p * r + EXP_POLY[2]
        p = p * r + EXP_POLY[3]
        p = p * r + EXP_POLY[4]
        p = p * r + EXP_POLY[5]
        p = p * r + EXP_POLY[6]
        p = p * r + EXP_POLY[7]
        p = p * r + EXP_POLY[8]
        p = p * r + EXP_POLY[9]
        p = p * r + EXP_POLY[10]
        p = p * r + EXP_POLY[11]
        p = p * r + EXP_POLY[12]
        scratch[i] = (np.int64(k) + 1023) << 52
        out[i] = 0.0 if under else p
    powers = scratch.view(np.float64)
    for i in range(count):
        out[i] = out[i] * powers[i]


def erfc_into(x, out, spare, scratch, count):  # pragma: no cover - compiled
    """``out[i] = erfc(x[i])`` for i < count, x >= 0 (``spare``: float64 [2, count] or wider, ``scratch``: int64,
    at least count long; none of them overlapping). :math:`e^{-x^2} = e^{-z^2} e^{-(x - z)(x + z)}` with z = x rounded
    down to a sixteenth, so that :math:`z^2` is exact and the rounding of :math:`x^2` is not carried into the
    result."""
    for i in range(count):
        v = x[i]
        z = math.floor(v * 16.0) * 0.0625
        spare[0, i] = -(z * z)
        spare[1, i] = -((v - z) * (v + z))
    exp_into(spare[0], out, scratch, count)
    exp_into(spare[1], spare[0], scratch, count)
    for i in range(count):
        v = x[i]
        u = v * v
        p = ERF_OVER_X_POLY[0]
        p = p * u + ERF_OVER_X_POLY[1]
        p = p * u + ERF_OVER_X_POLY[2]
        p = p * u + ERF_OVER_X_POLY[3]
        p = p * u + ERF_OVER_X_POLY[4]
        p = p * u + ERF_OVER_X_POLY[5]
        p = p * u + ERF_OVER_X_POLY[6]
        p = p * u + ERF_OVER_X_POLY[7]
        p = p * u + ERF_OVER_X_POLY[8]
        p = p * u + ERF_OVER_X_POLY[9]
        p = p * u + ERF_OVER_X_POLY[10]
        p = p * u + ERF_OVER_X_POLY[11]
        y = ERFCX_SCALE / (ERFCX_SCALE + v)
        q = ERFCX_OVER_Y_POLY[0]
        q = q * y + ERFCX_OVER_Y_POLY[1]
        q = q * y + ERFCX_OVER_Y_POLY[2]
        q = q * y + ERFCX_OVER_Y_POLY[3]
        q = q * y + ERFCX_OVER_Y_POLY[4]
        q = q * y + ERFCX_OVER_Y_POLY[5]
        q = q * y + ERFCX_OVER_Y_POLY[6]
        q = q * y + ERFCX_OVER_Y_POLY[7]
        q = q * y + ERFCX_OVER_Y_POLY[8]
        q = q * y + ERFCX_OVER_Y_POLY[9]
        q = q * y + ERFCX_OVER_Y_POLY[10]
        q = q * y + ERFCX_OVER_Y_POLY[11]
        q = q * y + ERFCX_OVER_Y_POLY[12]
        q = q * y + ERFCX_OVER_Y_POLY[13]
        q = q * y + ERFCX_OVER_Y_POLY[14]
        q = q * y + ERFCX_OVER_Y_POLY[15]
        q = q * y + ERFCX_OVER_Y_POLY[16]
        q = q * y + ERFCX_OVER_Y_POLY[17]
        q = q * y + ERFCX_OVER_Y_POLY[18]
        q = q * y + ERFCX_OVER_Y_POLY[19]
        q = q * y + ERFCX_OVER_Y_POLY[20]
        q = q * y + ERFCX_OVER_Y_POLY[21]
        q = q * y + ERFCX_OVER_Y_POLY[22]
        q = q * y + ERFCX_OVER_Y_POLY[23]
        tail = out[i] * spare[0, i] * (y * q)  # read unconditionally, so that the select vectorises
        out[i] = 1.0 - v * p if v < ERFC_SPLIT else tail


if numba is not None:
    # log_into as the LambdaMART kernel measured it, without contraction; exp and erfc with their multiply-adds
    # fused (never reordered)
    log_into = jit(log_into, nogil=True, error_model="numpy")
    exp_into = jit(exp_into, nogil=True, error_model="numpy", fastmath={"contract"})
    erfc_into = jit(erfc_into, nogil=True, error_model="numpy", fastmath={"contract"})
