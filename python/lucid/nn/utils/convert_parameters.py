"""parameters_to_vector / vector_to_parameters (torch semantics)."""
import lucid


def parameters_to_vector(parameters):
    return lucid.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    if not isinstance(vec, lucid.Tensor):
        raise TypeError(f"expected lucid.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    with lucid.no_grad():
        for param in parameters:
            n = param.numel()
            chunk = vec[pointer:pointer + n].reshape(param.shape)
            param.copy_(chunk)
            pointer += n
