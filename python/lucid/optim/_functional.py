"""Small in-place building blocks shared by the optimizers, written with plain tensor arithmetic so
they only need the core ops (+ - * /, add_, mul_, copy_) and keep torch's evaluation order
(addcmul: self + value*t1*t2, addcdiv: self + value*(t1/t2), lerp: torch's two-branch formula)."""
import lucid


def zeros_like(p):
    return lucid.full(tuple(p.shape), 0.0, dtype=p.dtype)


def copy_(dst, src):
    if hasattr(dst, "copy_"):
        return dst.copy_(src)
    dst.zero_()
    return dst.add_(src)


def add_(x, y, alpha=1.0):
    """x += alpha * y."""
    return x.add_(y if (not isinstance(alpha, lucid.Tensor) and alpha == 1) else y * alpha)


def addcmul_(x, t1, t2, value=1.0):
    return x.add_((t1 * value) * t2 if (isinstance(value, lucid.Tensor) or value != 1) else t1 * t2)


def addcdiv_(x, t1, t2, value=1.0):
    return x.add_((t1 / t2) * value if (isinstance(value, lucid.Tensor) or value != 1) else t1 / t2)


def lerp_(x, end, weight):
    """x = lerp(x, end, weight) with a Python-number weight (torch's formula)."""
    if abs(weight) < 0.5:
        return x.add_((end - x) * weight)
    return copy_(x, end - (end - x) * (1.0 - weight))


def as_scalar_tensor(step_t):
    """The float64 view of a 0-d step counter, for bias-correction math done on the device."""
    return step_t.to(lucid.float64)
