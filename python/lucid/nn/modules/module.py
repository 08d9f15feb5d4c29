"""lucid.nn.Module: the base class of every layer, with torch's bookkeeping.

Parameters, buffers and submodules live in three ordered dicts and are found through
__getattr__/__setattr__/__delattr__ exactly like torch.nn.Module, so names, state_dict keys,
iteration order and error messages match PyTorch. Tensor conversion (to/float/double/...) builds
new Parameter objects (lucid tensors have no `.data` setter); construct optimizers after `.to()`.
A Parameter shared by several modules (tied weights) stays shared: it is converted once.
The layers' `device=` constructor argument is honoured as torch's: the constructor runs with it as
the factory device (_on_device_argument).
"""
from collections import OrderedDict, namedtuple
import copy
import functools
import inspect
import itertools
import threading

import lucid
from lucid._C import Tensor
from lucid.nn.parameter import Parameter, Buffer
from lucid.nn.modules._backward_hooks import _BackwardHooks

__all__ = ["Module"]

# lucid.compile support. _epoch_bump tells compiled modules that something that can change a
# traced computation happened (a mode switch, a parameter/buffer/submodule (re)assignment, any
# attribute write or hook change on a module a compiled module watches); while a trace records
# on this thread, _call_record.rec (a _TraceRecord) collects what the traced code did to modules.
_epoch_bump = lucid._C._compile_epoch_bump
_call_record = threading.local()
_apply_memo = threading.local()  # Module._apply: id(old Parameter) -> (old, new) during one conversion


class _TraceRecord:
    """What a traced call did to modules: which it called, which ran forward hooks, which it
    created, and every attribute write (module, name, old value, new value), in order."""

    def __init__(self):
        self.mods, self.hooked, self.writes, self.created = [], [], [], set()


_MISSING = object()


def _attr_of(m, name):
    d = m.__dict__
    for store in (d.get("_parameters", {}), d.get("_buffers", {}), d.get("_modules", {}), d):
        if name in store:
            return store[name]
    return _MISSING


class _StateDict(OrderedDict):
    """The parameter/buffer/submodule dicts: any (re)assignment or removal bumps the compile epoch."""

    def __setitem__(self, key, value):
        _epoch_bump()
        super().__setitem__(key, value)

    def __delitem__(self, key):
        _epoch_bump()
        super().__delitem__(key)


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(s_, num_spaces):
    s = s_.split("\n")
    if len(s) == 1:
        return s_
    first = s.pop(0)
    s = [(num_spaces * " ") + line for line in s]
    return first + "\n" + "\n".join(s)


class _RemovableHandle:
    _next_id = 0

    def __init__(self, hooks_dict, extra=None):
        self.hooks_dict = hooks_dict
        self.extra = extra  # the with_kwargs id set of the hook, if any
        self.id = _RemovableHandle._next_id
        _RemovableHandle._next_id += 1

    def remove(self):
        if self.hooks_dict.pop(self.id, None) is not None:
            _epoch_bump()
        if self.extra is not None:
            self.extra.discard(self.id)

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.remove()


def _on_device_argument(init):
    """A lucid.nn constructor taking torch's `device=` argument, run with that device as the factory
    device (`with lucid.device(device):`), so the parameters and buffers it creates are born there,
    as torch's `nn.Linear(4, 3, device="cuda")`; device=None keeps the current factory device."""
    sig = inspect.signature(init)

    @functools.wraps(init)
    def constructor(self, *args, **kwargs):
        dev = kwargs.get("device")
        if dev is None and args:
            try:
                dev = sig.bind_partial(self, *args, **kwargs).arguments.get("device")
            except TypeError:  # the constructor itself reports the bad call
                dev = None
        if dev is None:
            return init(self, *args, **kwargs)
        with lucid.device(dev):
            return init(self, *args, **kwargs)
    return constructor


class Module:
    """Base class for all neural-network modules (same contract as torch.nn.Module)."""

    training: bool
    _version = 1

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if (init is not None and cls.__module__.startswith("lucid.nn.")
                and "device" in inspect.signature(init).parameters):
            cls.__init__ = _on_device_argument(init)

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments")
        d = self.__dict__
        rec = _call_record.__dict__.get("rec")
        if rec is not None:
            rec.created.add(id(self))
        d["training"] = True
        d["_parameters"] = _StateDict()
        d["_buffers"] = _StateDict()
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = _StateDict()
        d["_forward_hooks"] = OrderedDict()
        d["_forward_pre_hooks"] = OrderedDict()
        d["_forward_hooks_with_kwargs"] = set()      # handle ids of hooks taking kwargs
        d["_forward_pre_hooks_with_kwargs"] = set()
        d["_backward_hooks"] = OrderedDict()         # register_full_backward_hook
        d["_backward_pre_hooks"] = OrderedDict()     # register_full_backward_pre_hook

    # ------------------------------------------------------------------ forward
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args, **kwargs):
        d = self.__dict__
        backward_hooked = bool(d.get("_backward_hooks") or d.get("_backward_pre_hooks"))
        rec = _call_record.__dict__.get("rec")
        if rec is not None:
            rec.mods.append(self)
            if self._forward_pre_hooks or self._forward_hooks or backward_hooked:
                rec.hooked.append(self)
        with_kw = d.get("_forward_pre_hooks_with_kwargs", ())
        for hid, hook in list(self._forward_pre_hooks.items()):
            if hid in with_kw:
                r = hook(self, args, kwargs)
                if r is not None:
                    if not (isinstance(r, tuple) and len(r) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                           f"but got {r}.")
                    args, kwargs = r
            else:
                r = hook(self, args)
                if r is not None:
                    args = r if isinstance(r, tuple) else (r,)
        bw = _BackwardHooks(self) if backward_hooked and lucid.is_grad_enabled() else None
        if bw is not None:
            args = bw.wrap_inputs(args)
        out = self.forward(*args, **kwargs)
        with_kw = d.get("_forward_hooks_with_kwargs", ())
        for hid, hook in list(self._forward_hooks.items()):
            r = hook(self, args, kwargs, out) if hid in with_kw else hook(self, args, out)
            if r is not None:
                out = r
        if bw is not None:
            out = bw.wrap_outputs(out)
        return out

    def _add_hook(self, store, hook, prepend, kw_set=None, with_kwargs=False):
        _epoch_bump()
        d = self.__dict__[store]
        h = _RemovableHandle(d, kw_set)
        d[h.id] = hook
        if prepend:
            d.move_to_end(h.id, last=False)
        if with_kwargs:
            kw_set.add(h.id)
        return h

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """hook(module, args, output), or hook(module, args, kwargs, output) with_kwargs; a
        returned value replaces the output. always_call is accepted (a forward that raises does
        not run hooks here)."""
        return self._add_hook("_forward_hooks", hook, prepend, self.__dict__["_forward_hooks_with_kwargs"], with_kwargs)

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args) returning None or new args, or with_kwargs hook(module, args, kwargs)
        returning None or (new_args, new_kwargs)."""
        return self._add_hook("_forward_pre_hooks", hook, prepend, self.__dict__["_forward_pre_hooks_with_kwargs"],
                              with_kwargs)

    def register_full_backward_hook(self, hook, prepend=False):
        """hook(module, grad_input, grad_output), called when the gradients with respect to the
        module's inputs are computed; a returned tuple replaces grad_input."""
        return self._add_hook("_backward_hooks", hook, prepend)

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """hook(module, grad_output), called when the gradients with respect to the module's
        outputs are computed; a returned tuple replaces grad_output."""
        return self._add_hook("_backward_pre_hooks", hook, prepend)

    def register_backward_hook(self, hook):
        raise NotImplementedError("Module.register_backward_hook (torch's deprecated non-full hook) is not "
                                  "implemented in lucid; use register_full_backward_hook")

    # ------------------------------------------------------------------ registration
    def register_buffer(self, name, tensor, persistent=True):
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' (lucid Tensor or None required)")
        if isinstance(tensor, Buffer):
            persistent = tensor.persistent
            tensor = tensor.detach()
        _epoch_bump()
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        _epoch_bump()
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                            "(lucid.nn.Parameter or None required)")
        if param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                             "created explicitly. To express '{name}' as a function of another Tensor, compute "
                             "the value in the forward() method.")
        self._parameters[name] = param

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {type(name).__name__}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target):
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def get_parameter(self, target):
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        p = getattr(mod, name)
        if not isinstance(p, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return p

    def get_buffer(self, target):
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return mod._buffers[name]

    # ------------------------------------------------------------------ attribute protocol
    def __getattr__(self, name):
        d = self.__dict__
        if "_parameters" in d and name in d["_parameters"]:
            return d["_parameters"][name]
        if "_buffers" in d and name in d["_buffers"]:
            return d["_buffers"][name]
        if "_modules" in d and name in d["_modules"]:
            return d["_modules"][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        rec = _call_record.__dict__.get("rec")
        if rec is not None and id(self) not in rec.created:
            rec.writes.append((self, name, _attr_of(self, name), value))
        if (name == "training" or value is None or isinstance(value, (Tensor, Module))
                or "_compile_watched" in self.__dict__):
            _epoch_bump()
        def remove_from(*dicts_or_sets):
            for d in dicts_or_sets:
                if name in d:
                    if isinstance(d, dict):
                        del d[name]
                    else:
                        d.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(lucid.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = self.__dict__.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(self.__dict__, self._parameters, self._buffers, self._non_persistent_buffers_set)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' "
                                    "(lucid.nn.Module or None expected)")
                modules[name] = value
            else:
                buffers = self.__dict__.get("_buffers")
                if isinstance(value, Buffer) or (buffers is not None and name in buffers):
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                        "(lucid.Tensor or None expected)")
                    if isinstance(value, Buffer):
                        persistent = value.persistent
                    else:
                        persistent = name not in self._non_persistent_buffers_set
                    remove_from(self.__dict__, self._parameters, self._modules)
                    self.register_buffer(name, value, persistent)
                else:
                    object.__setattr__(self, name, value)

    def __delattr__(self, name):
        _epoch_bump()
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = list(dir(self.__class__)) + list(self.__dict__.keys())
        keys += list(self._parameters) + list(self._modules) + list(self._buffers)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    def __deepcopy__(self, memo):
        # lucid tensors are not picklable; pre-seed the memo with clones of plain-tensor buffers and
        # attributes so the default recursive copy handles everything else (Parameters copy themselves).
        for m in self.modules():
            for t in itertools.chain(m._buffers.values(), m.__dict__.values()):
                if isinstance(t, Tensor) and not isinstance(t, Parameter) and id(t) not in memo:
                    c = t.detach().clone()
                    if t.requires_grad:
                        c.requires_grad_(True)
                    memo[id(t)] = c
        cls = self.__class__
        new = cls.__new__(cls)
        memo[id(self)] = new
        for k, v in self.__dict__.items():
            new.__dict__[k] = copy.deepcopy(v, memo)
        return new

    def __setstate__(self, state):
        self.__dict__.update(state)

    # ------------------------------------------------------------------ iteration
    def _named_members(self, get_members_fn, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or id(v) in memo:
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                name = module_prefix + ("." if module_prefix else "") + k
                yield name, v

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._parameters.items(), prefix=prefix, recurse=recurse,
                                       remove_duplicate=remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._buffers.items(), prefix=prefix, recurse=recurse,
                                       remove_duplicate=remove_duplicate)

    def children(self):
        for _, m in self.named_children():
            yield m

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if id(self) not in memo:
            if remove_duplicate:
                memo.add(id(self))
            yield prefix, self
            for name, module in self._modules.items():
                if module is None:
                    continue
                submodule_prefix = prefix + ("." if prefix else "") + name
                yield from module.named_modules(memo, submodule_prefix, remove_duplicate)

    # ------------------------------------------------------------------ modes
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    g = p.grad
                    if g.grad_fn is not None:
                        g = g.detach()
                        p.grad = g
                    g.zero_()

    # ------------------------------------------------------------------ conversion
    def apply(self, fn):
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def _apply(self, fn):
        # A Parameter held by several modules (tied weights: GPT-2's lm_head and wte) is converted
        # once and the one new Parameter is given to every holder, so the tie survives .to().
        memo = getattr(_apply_memo, "params", None)
        if memo is None:  # the outermost call: its conversion's memo lives until it returns
            _apply_memo.params = {}
            try:
                return self._apply_converting(fn, _apply_memo.params)
            finally:
                _apply_memo.params = None
        return self._apply_converting(fn, memo)

    def _apply_converting(self, fn, memo):
        _epoch_bump()
        for m in self.children():
            m._apply(fn)
        for key, param in list(self._parameters.items()):
            if param is None:
                continue
            if id(param) in memo:
                self._parameters[key] = memo[id(param)][1]
                continue
            with lucid.no_grad():
                new = fn(param)
            p = param
            if not new._is_same(param):
                p = Parameter(new, param.requires_grad)
                if param.grad is not None:
                    with lucid.no_grad():
                        p.grad = fn(param.grad)
                self._parameters[key] = p
            memo[id(param)] = (param, p)  # holding param keeps its id from being reused meanwhile
        for key, buf in list(self._buffers.items()):
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def to(self, *args, **kwargs):
        """Module.to(device) / to(dtype) / to(device, dtype) / to(tensor), as torch: parameters and
        buffers move to the device (all of them) and floating ones take the dtype."""
        dtype = kwargs.get("dtype")
        device = kwargs.get("device")
        non_blocking = kwargs.get("non_blocking", False)
        for a in args:
            if isinstance(a, lucid.dtype):
                dtype = a
            elif isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
            elif isinstance(a, bool):
                non_blocking = a
            else:
                device = a
        if device is not None:
            device = lucid.device(lucid._C._parse_device(f"cuda:{device}" if isinstance(device, int) else str(device)))
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point dtypes, but got desired dtype={dtype}")
        if dtype is None and device is None:
            return self

        def convert(t):
            if dtype is not None and t.is_floating_point():
                return t.to(device, dtype, non_blocking) if device is not None else t.to(dtype)
            return t.to(device, non_blocking=non_blocking) if device is not None else t
        return self._apply(convert)

    def cuda(self, device=None):
        return self.to("cuda" if device is None else device)

    def float(self):
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self):
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self):
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self):
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    def cpu(self):
        return self.to("cpu")

    def type(self, dst_type):
        return self._apply(lambda t: t.to(dst_type))

    # ------------------------------------------------------------------ state dict
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        extra = getattr(type(self), "get_extra_state", None)
        if extra is not None and extra is not Module.get_extra_state:
            destination[prefix + "_extra_state"] = self.get_extra_state()

    def get_extra_state(self):
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called.")

    def set_extra_state(self, state):
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called.")

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        if args:
            # torch's deprecated positional form: state_dict(destination, prefix, keep_vars)
            destination = args[0]
            if len(args) > 1:
                prefix = args[1]
            if len(args) > 2:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        persistent_buffers = {k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(), persistent_buffers.items())
                       if v is not None}
        for name, param in local_state.items():
            key = prefix + name
            if key in state_dict:
                input_param = state_dict[key]
                if not isinstance(input_param, Tensor):
                    error_msgs.append(f'While copying the parameter named "{key}", expected lucid.Tensor or '
                                      f"Tensor-like object from checkpoint but received {type(input_param)}")
                    continue
                if tuple(input_param.shape) != tuple(param.shape):
                    error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                      f"{_shape_str(input_param.shape)} from checkpoint, the shape in current model "
                                      f"is {_shape_str(param.shape)}.")
                    continue
                try:
                    if local_metadata.get("assign_to_params_buffers", False):
                        if name in self._parameters:
                            self._parameters[name] = Parameter(input_param, requires_grad=param.requires_grad)
                        else:
                            self._buffers[name] = input_param
                        continue
                    with lucid.no_grad():
                        _copy_into(param, input_param)
                except Exception as ex:  # noqa: BLE001
                    error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                                      f"{_shape_str(param.shape)} and whose dimensions in the checkpoint are "
                                      f"{_shape_str(input_param.shape)}, an exception occurred : {ex.args}.")
            elif strict:
                missing_keys.append(key)
        extra_key = prefix + "_extra_state"
        has_extra = getattr(type(self), "set_extra_state", Module.set_extra_state) is not Module.set_extra_state
        if has_extra:
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if strict:
            for key in state_dict.keys():
                if key.startswith(prefix) and key != extra_key:
                    input_name = key[len(prefix):].split(".", 1)
                    if input_name[0] not in self._modules and input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys, unexpected_keys, error_msgs = [], [], []
        state_dict = OrderedDict(state_dict)

        def load(module, local_state_dict, prefix=""):
            module._load_from_state_dict(local_state_dict, prefix, {"assign_to_params_buffers": assign}, True,
                                         missing_keys, unexpected_keys, error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    child_state_dict = {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)}
                    load(child, child_state_dict, child_prefix)

        load(self, state_dict)
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self.__class__.__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    # ------------------------------------------------------------------ repr
    def extra_repr(self):
        return ""

    def _get_name(self):
        return self.__class__.__name__

    def __repr__(self):
        extra_lines = []
        extra_repr = self.extra_repr()
        if extra_repr:
            extra_lines = extra_repr.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            mod_str = _addindent(repr(module), 2)
            child_lines.append("(" + key + "): " + mod_str)
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        main_str += ")"
        return main_str


def _shape_str(shape):
    return "lucid.Size([" + ", ".join(str(int(s)) for s in shape) + "])"


def _copy_into(dst, src):
    """dst[...] = src (same shape), casting to dst's dtype, in place (so optimizers keep their references)."""
    dst.copy_(src)
