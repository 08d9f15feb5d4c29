"""lucid.special: the torch.special functions lucid has, under their torch.special names: most are
the lucid functions themselves (expit is sigmoid, erfinv is lucid.erfinv, ...), and the few
special-only ones (ndtr, ndtri, log_ndtr, entr, xlog1py) are composites of lucid ops, so they are
differentiable and compile. gammaln/digamma/psi/polygamma are the engine's ops; the Bessel and
incomplete-gamma functions (i0, i1, gammainc, ...) are not here."""
import math

from lucid import _C
from lucid._ops_math import (erfc, erfinv, exp2, logit, sinc, xlogy, lgamma, digamma, polygamma, mvlgamma,  # noqa: F401
                             _floating_pair, log_times)
from lucid._ops_nn import softmax, log_softmax  # noqa: F401

expit = _C.sigmoid
erf = _C.erf
expm1 = _C.expm1
log1p = _C.log1p
logsumexp = _C.logsumexp
round = _C.round  # noqa: A001
gammaln = lgamma
psi = digamma
multigammaln = mvlgamma


def ndtr(input):
    """The standard normal CDF: erfc(-x / sqrt 2) / 2 (accurate in the lower tail)."""
    return erfc(-input * (1 / math.sqrt(2.0))) * 0.5


def ndtri(input):
    """The standard normal quantile: sqrt 2 * erfinv(2p - 1)."""
    return erfinv(input * 2.0 - 1.0) * math.sqrt(2.0)


def log_ndtr(input):
    return _C.log(ndtr(input))


def entr(input):
    """-x log x for x > 0, 0 at 0, -inf for x < 0 (torch.special.entr)."""
    x = input if input.dtype.is_floating_point else input.to_dtype(_C.get_default_dtype())
    safe = _C.where(x > 0, x, 1.0)
    out = _C.where(x > 0, -x * _C.log(safe), 0.0)
    return _C.where(x < 0, -math.inf, _C.where(_C.isnan(x), x, out))


def xlog1py(input, other):
    """x * log1p(y), 0 where x == 0 (unless y is NaN)."""
    x, y = _floating_pair(input, other, "xlog1py")
    return log_times(x, y, _C.log1p)


__all__ = ["expit", "erf", "erfc", "erfinv", "exp2", "expm1", "log1p", "logit", "logsumexp", "round", "sinc",
           "xlogy", "softmax", "log_softmax", "ndtr", "ndtri", "log_ndtr", "entr", "xlog1py", "gammaln", "digamma", "psi",
           "polygamma", "multigammaln"]
