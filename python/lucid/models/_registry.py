"""The name -> constructor table behind lucid.models.create_model / list_models."""
_MODELS = {}


def register_model(fn):
    """Decorator: registers `fn` under its __name__ (a constructor taking keyword configuration)."""
    name = fn.__name__
    if name in _MODELS:
        raise ValueError(f"lucid.models.register_model: a model named {name!r} is already registered")
    _MODELS[name] = fn
    return fn


def list_models():
    """The registered model names, sorted."""
    return sorted(_MODELS)


def create_model(name, **cfg):
    """The model `name` built with the keyword configuration `cfg` (e.g. num_classes=10)."""
    if not isinstance(name, str):
        raise TypeError(f"lucid.models.create_model: argument 'name' must be a str, got {type(name).__name__}")
    if name not in _MODELS:
        raise ValueError(f"lucid.models.create_model: unknown model {name!r}; known models: {', '.join(list_models())}")
    return _MODELS[name](**cfg)
