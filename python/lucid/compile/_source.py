"""Where in the user's code something happened during a trace: the innermost Python frame outside
the lucid package, as "path:line in function: `source line`". The tracer asks for it when a
traced value is read on the host (float(), int(), bool(), .item(), .numpy(), .tolist(), a
boolean mask), so the fallback warning points at the user's line and not at lucid's internals
(the compile machinery, the optimizer substitution, Tensor.__float__)."""
import linecache
import os
import sys

from lucid import _C

__all__ = ["user_site", "host_read_site", "user_stacklevel"]

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # .../python/lucid/


def _short(path):
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive
        return path
    return path if rel.startswith("..") else rel


def user_site(frame):
    """The description of the innermost frame from `frame` outwards whose code is not lucid's (the
    innermost frame itself when all of them are lucid's)."""
    f = frame
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_PKG):
        f = f.f_back
    f = f or frame
    if f is None:
        return ""
    line = linecache.getline(f.f_code.co_filename, f.f_lineno).strip()
    return f"{_short(f.f_code.co_filename)}:{f.f_lineno} in {f.f_code.co_name}" + (f": `{line}`" if line else "")


def user_stacklevel():
    """warnings.warn's stacklevel, for a warning issued by the caller of this function, that
    attributes it to the innermost frame outside lucid (the user's call)."""
    f, level = sys._getframe(1), 1
    while f.f_back is not None and os.path.abspath(f.f_code.co_filename).startswith(_PKG):
        f, level = f.f_back, level + 1
    return level


def host_read_site():
    return user_site(sys._getframe(1))


_C._set_host_read_locator(host_read_site)
