"""The strong-Wolfe line search LBFGS uses (Nocedal & Wright, Numerical Optimization, 2nd ed., §3.5,
Algorithms 3.5 and 3.6), with the safeguards of minFunc / torch.optim.LBFGS, whose choices it follows."""
from __future__ import annotations

import math
from collections.abc import Callable


def cubic_minimizer(a: float, fa: float, ga: float, b: float, fb: float, gb: float,
                    bounds: tuple[float, float] | None = None) -> float:
    """The minimizer of the cubic through (a, f(a)) and (b, f(b)) with slopes ga and gb (N&W eq. 3.59),
    clipped to `bounds` (default: the interval between a and b); the bounds' midpoint when the cubic has
    no minimizer there (its derivative has no real root).

        d1 = ga + gb − 3 (fa − fb) / (a − b);   d2 = √(d1² − ga gb)
        x  = hi − (hi − lo) (g_hi + d2 − d1) / (g_hi − g_lo + 2 d2)    (lo ≤ hi: a and b in order)
    """
    lower, upper = bounds if bounds is not None else (min(a, b), max(a, b))
    d1 = ga + gb - 3 * (fa - fb) / (a - b)
    d2_square = d1 * d1 - ga * gb
    if d2_square < 0:
        return (lower + upper) / 2.0
    d2 = math.sqrt(d2_square)
    (lo, g_lo), (hi, g_hi) = ((a, ga), (b, gb)) if a <= b else ((b, gb), (a, ga))
    x = hi - (hi - lo) * ((g_hi + d2 - d1) / (g_hi - g_lo + 2 * d2))
    return min(max(x, lower), upper)


def strong_wolfe(evaluate: Callable, t: float, d, f: float, g, gtd: float, c1: float = 1e-4, c2: float = 0.9,
                 tolerance_change: float = 1e-9, max_ls: int = 25):
    """A step t along d that satisfies the strong Wolfe conditions (N&W eq. 3.7)

        f(x + t d) ≤ f(x) + c1 t ∇f·d          (sufficient decrease, Armijo)
        |∇f(x + t d)·d| ≤ c2 |∇f·d|            (curvature)

    `evaluate(t)` returns (f, flat gradient) at x + t d; f, g and gtd = g·d are those at t = 0. First
    (Algorithm 3.5) the step grows, each new trial the cubic minimizer through the last two trials kept in
    [t + 0.01 (t − t_prev), 10 t], until a trial satisfies both conditions or an interval is known to hold
    one; then (Algorithm 3.6, "zoom") the interval shrinks by cubic interpolation, a trial that lands within
    a tenth of the interval's length of an end being moved to that distance when the previous trial did so
    too. At most `max_ls` evaluations after the first; the search stops early when the interval is shorter
    than tolerance_change / max|d|. Returns (f, g, t, evaluations) at the best point found.
    """
    d_norm = float(abs(d).max())
    f_new, g_new = evaluate(t)
    evals = 1
    gtd_new = _dot(g_new, d)
    # a point of the search: [step, f, flat gradient, directional derivative]
    prev = [0, f, g, gtd]
    bracket = None
    done = False
    n = 0
    while n < max_ls:                                      # Algorithm 3.5: bracket
        new = [t, f_new, g_new, gtd_new]
        if f_new > f + c1 * t * gtd or (n > 1 and f_new >= prev[1]):
            bracket = [prev, new]                          # too high: a minimum lies in between
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, done = [new], True                    # both conditions hold at t
            break
        if gtd_new >= 0:
            bracket = [prev, new]                          # the slope turned: a minimum lies in between
            break
        t_next = cubic_minimizer(prev[0], prev[1], prev[3], t, f_new, gtd_new,
                                 bounds=(t + 0.01 * (t - prev[0]), t * 10))
        prev, t = new, t_next
        f_new, g_new = evaluate(t)
        evals += 1
        gtd_new = _dot(g_new, d)
        n += 1
    if bracket is None:                                    # out of evaluations: the best of 0 and t
        bracket = [[0, f, g, None], [t, f_new, g_new, None]]

    low, high = (0, 1) if bracket[0][1] <= bracket[-1][1] else (1, 0)
    insufficient = False
    while not done and n < max_ls:                         # Algorithm 3.6: zoom
        (a, fa, _, ga), (b, fb, _, gb) = bracket
        if abs(b - a) * d_norm < tolerance_change:
            break
        t = cubic_minimizer(a, fa, ga, b, fb, gb)
        lo, hi = min(a, b), max(a, b)
        margin = 0.1 * (hi - lo)
        if min(hi - t, t - lo) < margin:                   # close to an end of the interval
            if insufficient or t >= hi or t <= lo:
                t = hi - margin if abs(t - hi) < abs(t - lo) else lo + margin
                insufficient = False
            else:
                insufficient = True
        else:
            insufficient = False
        f_new, g_new = evaluate(t)
        evals += 1
        gtd_new = _dot(g_new, d)
        n += 1
        new = [t, f_new, g_new, gtd_new]
        if f_new > f + c1 * t * gtd or f_new >= bracket[low][1]:
            bracket[high] = new                            # no sufficient decrease: the new high end
            low, high = (0, 1) if bracket[0][1] <= bracket[1][1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high][0] - bracket[low][0]) >= 0:
                bracket[high] = bracket[low]               # keep a minimum between low and high
            bracket[low] = new
    t, f_new, g_new, _ = bracket[low]
    return f_new, g_new, t, evals


def _dot(a, b) -> float:
    return float(a.dot(b))
