"""lucid.einsum: torch.einsum, lowered to diagonal / sum / permute / reshape / bmm.

One function, no op of its own: the equation is parsed (and checked) once per (equation,
operand ndims), then each call runs ordinary ops, so einsum differentiates and compiles like
any composite. Operands are contracted left to right; each pairwise contraction is one batched
matmul over [batch, kept-left, contracted] x [batch, contracted, kept-right], and labels needed
by no later operand nor the output are summed out as early as possible. Repeated labels in one
operand take a diagonal; '...' spans broadcast dims (right-aligned, as torch); a dim of size 1
broadcasts against the same label's size elsewhere.
"""
from lucid._C import ArgumentError  # a ValueError and a RuntimeError, as torch raises
import functools

import lucid

_ELL = "."  # label prefix of ellipsis dims: (".", k) for the k-th broadcast dim from the left


def _err(msg):
    return ValueError(f"einsum(): argument 'equation' {msg}")


@functools.lru_cache(maxsize=256)
def _parse(equation, ndims):
    eq = equation.replace(" ", "")
    if eq.count("->") > 1:
        raise _err(f"has more than one '->': {equation!r}")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ndims):
        raise _err(f"{equation!r} names {len(terms)} operand(s) but {len(ndims)} operand(s) were given")

    def letters(term, where):
        if term.count("...") > 1:
            raise _err(f"has more than one '...' in {where} subscripts {term!r}")
        out, rest = [], term.replace("...", "\0")
        for ch in rest:
            if ch == "\0":
                out.append(None)
            elif not (ch.isascii() and ch.isalpha()):
                raise _err(f"has an invalid subscript {ch!r} in {where} subscripts {term!r} "
                           f"(expected letters a-z, A-Z and '...')")
            else:
                out.append(ch)
        return out

    ell_ndim = 0
    ops = []
    for i, (term, nd) in enumerate(zip(terms, ndims)):
        labs = letters(term, f"operand {i}'s")
        named = len(labs) - (1 if None in labs else 0)
        if None in labs:
            if nd < named:
                raise _err(f"gives operand {i} subscripts {term!r} for {named} or more dims, but it has {nd}")
            k = nd - named
            ell_ndim = max(ell_ndim, k)
        elif nd != named:
            raise _err(f"gives operand {i} subscripts {term!r} for {named} dims, but it has {nd}")
        ops.append(labs)
    # Expand '...' into ellipsis labels, right-aligned across operands.
    expanded = []
    for labs, nd in zip(ops, ndims):
        named = len(labs) - (1 if None in labs else 0)
        k = nd - named
        out = []
        for lab in labs:
            out.extend([(_ELL, ell_ndim - k + j) for j in range(k)] if lab is None else [lab])
        expanded.append(tuple(out))
    seen = [lab for labs in expanded for lab in labs]
    ell = [(_ELL, j) for j in range(ell_ndim)]
    if arrow:
        out_labs = letters(rhs, "the output")
        res = []
        for lab in out_labs:
            if lab is None:
                res.extend(ell)
            else:
                if lab not in seen:
                    raise _err(f"has output subscript {lab!r}, which appears in no input")
                if lab in res:
                    raise _err(f"has output subscript {lab!r} more than once")
                res.append(lab)
        out = tuple(res)
    else:  # implicit: '...' first, then the letters used exactly once, sorted
        once = sorted(lab for lab in set(seen) if isinstance(lab, str) and seen.count(lab) == 1)
        out = tuple(ell) + tuple(once)
    return tuple(expanded), out


def _take_diagonals(x, labs):
    """Repeated labels of one operand -> their diagonal (moved to the end, as diagonal() does)."""
    labs = list(labs)
    while True:
        dup = next((lab for lab in labs if labs.count(lab) > 1), None)
        if dup is None:
            return x, labs
        i = labs.index(dup)
        j = labs.index(dup, i + 1)
        x = x.diagonal(0, i, j)
        labs = [lab for k, lab in enumerate(labs) if k not in (i, j)] + [dup]


def _sum_out(x, labs, keep):
    dims = [i for i, lab in enumerate(labs) if lab not in keep]
    if not dims:
        return x, labs
    return x.sum(dim=tuple(dims)), [lab for lab in labs if lab in keep]


def _contract(a, la, b, lb, keep, sizes):
    """Pairwise contraction; `keep` is the set of labels needed afterwards."""
    batch = [lab for lab in la if lab in lb and lab in keep]
    contr = [lab for lab in la if lab in lb and lab not in keep]
    left = [lab for lab in la if lab not in lb]
    right = [lab for lab in lb if lab not in la]

    def arrange(x, labs, order):
        x = x.permute([labs.index(lab) for lab in order]) if order != labs else x
        shape = [sizes[lab] for lab in order]
        return x.expand(shape) if list(x.shape) != shape else x

    def prod(ls):
        n = 1
        for lab in ls:
            n *= sizes[lab]
        return n

    nb, nl, nc, nr = prod(batch), prod(left), prod(contr), prod(right)
    a3 = arrange(a, la, batch + left + contr).reshape(nb, nl, nc)
    b3 = arrange(b, lb, batch + contr + right).reshape(nb, nc, nr)
    out = lucid.matmul(a3, b3).reshape([sizes[lab] for lab in batch + left + right])
    return out, batch + left + right


def einsum(equation, *operands):
    """torch.einsum(equation, *operands), operands also as one list or tuple."""
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): argument 'equation' expected a str, got {type(equation).__name__}")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    for i, t in enumerate(operands):
        if not isinstance(t, lucid.Tensor):
            raise TypeError(f"einsum(): operand {i} expected a Tensor, got {type(t).__name__}")
    if not operands:
        raise ArgumentError("einsum(): at least one operand is required")
    labels, out = _parse(equation, tuple(t.ndim for t in operands))
    sizes = {}
    for i, (t, labs) in enumerate(zip(operands, labels)):
        for lab, n in zip(labs, t.shape):
            prev = sizes.get(lab)
            if prev is None or prev == 1:
                sizes[lab] = n
            elif n != 1 and n != prev:
                name = "'...'" if isinstance(lab, tuple) else repr(lab)
                raise ArgumentError(f"einsum(): operand {i} has size {n} for subscript {name}, "
                                 f"which has size {prev} in an earlier operand")
    xs = []
    for t, labs in zip(operands, labels):
        x, ls = _take_diagonals(t, labs)
        xs.append((x, ls))
    later = [set(out)]  # later[i]: labels the output or the operands after i use
    for _, ls in reversed(xs[1:]):
        later.insert(0, later[0] | set(ls))
    x, ls = _sum_out(*xs[0], later[0])
    for i in range(1, len(xs)):
        y, ly = _sum_out(*xs[i], later[i] | set(ls))
        x, ls = _contract(x, ls, y, ly, later[i], sizes)
    if list(ls) != list(out):
        x = x.permute([ls.index(lab) for lab in out])
    shape = [sizes[lab] for lab in out]
    if list(x.shape) != shape:  # a label of size 1 here, broadcast elsewhere but never multiplied
        x = x.expand(shape)
    return x
