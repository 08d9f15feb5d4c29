"""lucid.autograd.gradcheck / gradgradcheck: torch's check of analytical gradients against
central finite differences. For each output element the VJP with a unit vector gives one row of
the analytical Jacobian; perturbing each input element by +-eps gives the numerical one. Inputs
should be float64 for the default tolerances, as in torch. A mismatch raises GradcheckError (a
RuntimeError, as torch.autograd.gradcheck.GradcheckError) or returns False."""
import numpy as np

import lucid
from lucid._C import Tensor

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Analytical and numerical gradients differ (or the function is not differentiable)."""


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _outputs(func, inputs):
    return [o for o in _as_tuple(func(*inputs)) if isinstance(o, Tensor) and o.dtype.is_floating_point]


def _jacobians(func, inputs, eps):
    diff = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    outs = _outputs(func, inputs)
    sizes = [o.numel() for o in outs]
    analytical = {i: np.zeros((inputs[i].numel(), sum(sizes))) for i in diff}
    col = 0
    for o in outs:
        for k in range(o.numel()):
            v = lucid.zeros(o.numel(), dtype=o.dtype, device=o.device)
            v[k] = 1.0
            gs = lucid.autograd.grad([o], [inputs[i] for i in diff], [v.reshape(tuple(o.shape))], retain_graph=True,
                                     allow_unused=True)
            for i, g in zip(diff, gs):
                if g is not None:
                    analytical[i][:, col] = g.detach().double().cpu().numpy().reshape(-1)
            col += 1
    numerical = {}
    for i in diff:
        base = inputs[i].detach().double().cpu().numpy()
        jac = np.zeros((base.size, sum(sizes)))
        for e in range(base.size):
            vals = []
            for sign in (1.0, -1.0):
                b = base.copy().reshape(-1)
                b[e] += sign * eps
                x = list(inputs)
                # grad mode stays on and the input keeps requires_grad: the function may itself take
                # gradients (gradgradcheck's VJP does)
                x[i] = lucid.tensor(b.reshape(base.shape), dtype=inputs[i].dtype, device=inputs[i].device,
                                    requires_grad=True)
                vals.append(np.concatenate([o.detach().double().cpu().numpy().reshape(-1) for o in _outputs(func, x)]
                                           or [np.zeros(0)]))
            jac[e] = (vals[0] - vals[1]) / (2 * eps)
        numerical[i] = jac
    return analytical, numerical


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, **kwargs):
    """True when func's analytical gradients match finite differences for every input that
    requires grad; otherwise raises GradcheckError (or returns False)."""
    inputs = _as_tuple(inputs)
    if not any(isinstance(x, Tensor) and x.requires_grad for x in inputs):
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them "
                         "have requires_grad=True.")
    analytical, numerical = _jacobians(func, inputs, eps)
    for i in analytical:
        a, n = analytical[i], numerical[i]
        if not np.allclose(a, n, rtol=rtol, atol=atol):
            if raise_exception:
                raise GradcheckError(f"Jacobian mismatch for output 0 with respect to input {i},\n"
                                     f"numerical:{n}\nanalytical:{a}\n")
            return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
                  **kwargs):
    """gradcheck of the function (inputs, grad_outputs) -> the VJP of func: second derivatives.
    grad_outputs default to random float64 tensors requiring grad, as torch's."""
    inputs = _as_tuple(inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(lucid.tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype, device=o.device,
                                          requires_grad=True)
                             for o in _outputs(func, inputs))
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]

    def vjp(*args):
        xs, gos = args[:n_in], args[n_in:]
        outs = _outputs(func, xs)
        gs = lucid.autograd.grad(outs, [xs[i] for i in diff], list(gos), create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(vjp, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception)
