"""The compiled elementwise log, exp and erfc against exact values (decimal, mpmath), and their polynomials
fitted again from their definitions."""

from __future__ import annotations

import decimal
import math

import mpmath  # the oracle: a test dependency, so a missing one fails rather than skips
import numpy as np
import pytest

from gaprank import _elementwise as elementwise

pytest.importorskip("numba")


def test_the_vectorised_logarithm_is_within_one_ulp():
    """The LambdaMART loss's cost takes its logarithms in one vectorised pass per row of pairs (``log_into``):
    within 1 ulp of the correctly rounded value, at the ends of its reduction intervals (powers of two,
    sqrt(2) and its neighbours), at the smallest sums the kernel can form and at random values."""
    rng = np.random.default_rng(3)
    edges = [1.0, 2.0, 0.5, 1e-290, 3e-290, math.sqrt(2.0), np.nextafter(math.sqrt(2.0), 0), math.sqrt(0.5),
             np.nextafter(1.0, 0), np.nextafter(1.0, 2), np.nextafter(2.0, 0), 1.9999999, 1.0000001, 0.75, 1.5]
    values = np.concatenate([edges, rng.uniform(1e-3, 2.0, 5000), np.exp(rng.uniform(-660, 0.69, 5000))])
    logs, scratch = np.empty(values.size), np.empty(values.size, dtype=np.int64)
    elementwise.log_into(values, logs, scratch, values.size)
    with mpmath.workdps(40):  # the correctly rounded logarithm (numpy's own log is off by an ulp on some builds)
        rounded = np.array([float(mpmath.log(mpmath.mpf(float(v)))) for v in values])
    ulps = np.abs(logs - rounded) / np.spacing(np.abs(rounded))
    assert ulps.max() <= 1.0 and logs[0] == 0.0
    for value, log in zip(values[:len(edges)], logs[:len(edges)], strict=True):  # against an exact rounding
        exact = decimal.Context(prec=40).ln(decimal.Decimal(float(value)))  # the float's exact value's log
        assert abs(decimal.Decimal(float(log)) - exact) <= decimal.Decimal(np.spacing(abs(float(exact)) or 1.0)), value


def test_exp_is_within_two_ulps_and_flushes_below_the_normal_range():
    rng = np.random.default_rng(5)
    half_ln2 = math.log(2.0) / 2
    edges = [0.0, -0.0, -1e-300, -half_ln2, np.nextafter(-half_ln2, 0), -half_ln2 * 3, -1.0, -708.0, -708.39,
             1.0, 700.0, 709.0]
    t = np.concatenate([edges, rng.uniform(-708.39, 0.0, 3000), rng.uniform(-2.0, 2.0, 1000)])
    out, scratch = np.empty(t.size), np.empty(t.size, dtype=np.int64)
    elementwise.exp_into(t, out, scratch, t.size)
    with mpmath.workdps(40):
        exact = np.array([float(mpmath.exp(mpmath.mpf(float(v)))) for v in t])
    assert (np.abs(out - exact) <= 2 * np.spacing(exact)).all()
    assert out[0] == out[1] == 1.0
    under = np.array([-708.4, -745.0, -1e4, -np.inf])
    elementwise.exp_into(under, out, scratch, under.size)
    assert (out[:under.size] == 0.0).all()


def test_erfc_is_within_1e_15_relative_and_agrees_with_libm():
    rng = np.random.default_rng(6)
    split = elementwise.ERFC_SPLIT
    edges = [0.0, 1e-300, 1e-8, split, np.nextafter(split, 0), np.nextafter(split, 1), 1.0, 2.0, 6.0, 26.0, 26.5]
    x = np.concatenate([edges, rng.uniform(0.0, 1.5, 3000), rng.uniform(0.0, 27.0, 3000)])
    out, spare, scratch = np.empty(x.size), np.empty((2, x.size)), np.empty(x.size, dtype=np.int64)
    elementwise.erfc_into(x, out, spare, scratch, x.size)
    with mpmath.workdps(40):
        exact = np.array([float(mpmath.erfc(mpmath.mpf(float(v)))) for v in x])
    normal = exact >= np.finfo(np.float64).tiny
    assert (np.abs(out - exact)[normal] <= 1e-15 * exact[normal]).all()
    assert (np.abs(out - exact)[~normal] <= np.finfo(np.float64).tiny).all()
    libm = np.array([math.erfc(v) for v in x])
    assert (np.abs(out - libm)[normal] <= 1.2e-15 * libm[normal]).all()
    assert out[0] == 1.0
    large = np.array([27.0, 40.0, np.inf])
    elementwise.erfc_into(large, out, spare, scratch, large.size)
    assert (out[:large.size] == 0.0).all()


def test_the_polynomials_are_the_chebyshev_fits_their_docs_describe():
    """Fitted again in 50-digit arithmetic, as the module doc says: the tables hold those coefficients."""
    with mpmath.workdps(50):
        scale, split = mpmath.mpf(elementwise.ERFCX_SCALE), mpmath.mpf(elementwise.ERFC_SPLIT)

        def erf_over_x(u):
            return 2 / mpmath.sqrt(mpmath.pi) if u == 0 else mpmath.erf(mpmath.sqrt(u)) / mpmath.sqrt(u)

        def erfcx_over_y(y):
            if y == 0:
                return 1 / (scale * mpmath.sqrt(mpmath.pi))
            x = scale * (1 - y) / y
            return mpmath.exp(x * x) * mpmath.erfc(x) / y

        half_ln2 = mpmath.log(2) / 2
        for table, function, interval in (
            (elementwise.ERF_OVER_X_POLY, erf_over_x, [0, split * split]),
            (elementwise.ERFCX_OVER_Y_POLY, erfcx_over_y, [0, scale / (scale + split)]),
            (elementwise.EXP_POLY, mpmath.exp, [-half_ln2, half_ln2]),
        ):
            fitted, error = mpmath.chebyfit(function, interval, len(table), error=True)
            assert error < 1e-19
            np.testing.assert_allclose(table, [float(c) for c in fitted], rtol=1e-14, atol=0)
