"""lucid.optim.Optimizer: the base class, with torch's param_groups / state / state_dict format.

Hyper-parameters stay in `param_groups` and are read at every step (schedulers write them there);
per-parameter counters ('step', NAdam's 'mu_product') are 0-d float tensors in `state`, as in
torch, so a compiled step reads them at run time instead of baking them in.
"""
from collections import OrderedDict, defaultdict
from copy import deepcopy
import functools
from itertools import chain

import lucid
from lucid._C import Tensor

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _scalar_dtype():
    return lucid.float64 if lucid.get_default_dtype() == lucid.float64 else lucid.float32


def _closure_loss(closure):
    """Evaluates an optimizer closure with grad enabled (step() itself runs under no_grad)."""
    if closure is None:
        return None
    with lucid.enable_grad():
        return closure()


def _use_grad(fn):
    """Run an optimizer step under no_grad (torch's _use_grad_for_differentiable, minus differentiable)."""
    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        with lucid.no_grad():
            return fn(self, *args, **kwargs)
    return wrapper


class Optimizer:
    """Base class for all optimizers (same contract as torch.optim.Optimizer)."""

    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = defaultdict(dict)
        self.param_groups = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {type(params).__name__}")
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __repr__(self):
        format_string = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            format_string += "\n"
            format_string += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    format_string += f"    {key}: {group[key]}\n"
        format_string += ")"
        return format_string

    def add_param_group(self, param_group):
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of "
                            "tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)
        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + type(param).__name__)
            if not param.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            raise ValueError("optimizer contains a parameter group with duplicate parameters")
        param_set = set()
        for group in self.param_groups:
            param_set.update(id(p) for p in group["params"])
        if not param_set.isdisjoint(id(p) for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    if set_to_none:
                        p.grad = None
                    else:
                        g = p.grad
                        if g.grad_fn is not None:
                            g = g.detach()
                            p.grad = g
                        g.zero_()

    def step(self, closure=None):
        raise NotImplementedError

    # ------------------------------------------------------------------ state dict
    def state_dict(self):
        """{'state': {int id: {...}}, 'param_groups': [{..., 'params': [int ids]}]} (torch's layout)."""
        param_mappings = {}
        start_index = 0

        def pack_group(group):
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update({id(p): i for i, p in enumerate(group["params"], start_index)
                                   if id(p) not in param_mappings})
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {}
        for group in self.param_groups:
            for p in group["params"]:
                if p in self.state:
                    packed_state[param_mappings[id(p)]] = self.state[p]
        return {"state": packed_state, "param_groups": param_groups}

    @staticmethod
    def _process_value_according_to_param_policy(param, value, key):
        # torch: 'step' keeps its own dtype and device (a CPU counter); other tensors move to the
        # parameter's device, floating ones also to its dtype.
        if key == "step" or key == "mu_product":
            return value.clone()
        if value.is_floating_point():
            return value.to(param.device, param.dtype).clone()
        return value.to(param.device).clone()

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        groups = self.param_groups
        saved_groups = deepcopy_groups(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        param_lens = (len(g["params"]) for g in groups)
        saved_lens = (len(g["params"]) for g in saved_groups)
        if any(p_len != s_len for p_len, s_len in zip(param_lens, saved_lens)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def _cast(param, value, key=None):
            if isinstance(value, Tensor):
                return Optimizer._process_value_according_to_param_policy(param, value, key)
            if isinstance(value, dict):
                return {k: _cast(param, v, key=k) for k, v in value.items()}
            if isinstance(value, (list, tuple)) and not isinstance(value, str):
                return type(value)(_cast(param, v, key=key) for v in value)
            return deepcopy(value)

        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            k = int(k) if isinstance(k, str) and k.isdigit() else k
            if k in id_map:
                param = id_map[k]
                state[param] = _cast(param, v)
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            return new_group

        self.__setstate__({"state": state,
                           "param_groups": [update_group(g, ng) for g, ng in zip(groups, saved_groups)]})

    # ------------------------------------------------------------------ helpers for subclasses
    def _params_with_grad(self, group, *state_keys):
        """(p, grad, state) for each parameter of `group` that has a gradient, as torch's loops
        do: parameters without .grad are skipped, grad is negated under maximize, and the first
        visit creates state['step'] and a zero tensor like p for each name in state_keys."""
        maximize = group.get("maximize", False)
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if len(state) == 0:
                self._init_step(state)
                for key in state_keys:
                    state[key] = lucid.zeros_like(p)
            yield p, (-p.grad if maximize else p.grad), state

    def _init_step(self, state):
        if "step" not in state:
            state["step"] = lucid.full((), 0.0, dtype=_scalar_dtype())
        return state["step"]


def deepcopy_groups(groups):
    """Copy saved param_groups (plain Python values; tensors are cloned)."""
    out = []
    for g in groups:
        ng = {}
        for k, v in g.items():
            ng[k] = v.clone() if isinstance(v, Tensor) else deepcopy(v)
        out.append(ng)
    return out


_ = OrderedDict
