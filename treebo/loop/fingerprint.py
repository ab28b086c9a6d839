r"""What a checkpoint records of what a run evaluates, so that a resumed run refuses
another objective or pool, and only those.

The objective's fingerprint is a hash of what decides its values, not of its source
text:

- its compiled code (bytecode, constants, names; nested functions and lambdas
  included), without line numbers or docstrings: a comment, a blank line or a moved
  definition changes nothing, and an objective defined by ``exec`` or at a prompt
  (no source file) is still fingerprinted;
- what that code reads: the functions it calls that are defined in the user's code
  (not in the standard library or installed packages), followed to any depth, and
  the values of the global constants, default arguments and closure variables it
  reads (numbers, strings, and tuples and frozensets of them); a value of any other
  kind counts by its type only: a list, dict or object may hold state that changes
  while the run goes on (a counter, a cache), which must not refuse the resume;
- its qualified name, with ``__mp_main__`` (the main module as a spawned process
  sees it) read as ``__main__``.

The pool's fingerprint is a hash of its rows in sorted order: the same pool read in
another order is the same pool.

Example:
    >>> def f(params):
    ...     return params["x"] ** 2  # a comment
    >>> def g(params):
    ...     return params["x"] ** 2
    >>> g.__qualname__ = f.__qualname__
    >>> objective_fingerprint(f) == objective_fingerprint(g)
    True
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import sysconfig
import types
from pathlib import Path
from typing import Any

import numpy as np
import torch

#: Where the standard library and installed packages live: functions defined there
#: are not followed (their code changes with a package's version, not a run).
_LIBRARY_PATHS = tuple(
    {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib")}
    | {str(Path(__file__).resolve().parents[1])}  # treebo's own
)
#: How deep calls into user code are followed.
MAX_DEPTH = 32


def objective_fingerprint(objective: Any) -> dict[str, str]:
    """The objective's qualified name and a hash of its code and what it reads
    (module docstring).

    Example:
        >>> def f(params):
        ...     return 0.0
        >>> sorted(objective_fingerprint(f))
        ['code_sha256', 'name']
    """
    target = inspect.unwrap(objective)
    name = _qualified_name(getattr(target, "func", target))
    digest = hashlib.sha256()
    _feed(digest, target, set(), 0)
    return {"name": name, "code_sha256": digest.hexdigest()[:16]}


def pool_fingerprint(pool: Any) -> str:
    """A hash of a candidate pool's ``m x d`` encoding (shape and values), whatever
    the order of its rows."""
    array = pool.detach().to("cpu", dtype=torch.float64).numpy()
    array = np.ascontiguousarray(array[np.lexsort(array.T[::-1])])
    return hashlib.sha256(repr(array.shape).encode() + array.tobytes()).hexdigest()[:16]


def _qualified_name(target: Any) -> str:
    if not (inspect.isfunction(target) or inspect.ismethod(target)):
        target = type(target)  # a callable object: its class
    module = getattr(target, "__module__", "?")
    module = "__main__" if module == "__mp_main__" else module
    return f"{module}.{getattr(target, '__qualname__', '?')}"


def _feed(digest: Any, value: Any, seen: set[int], depth: int) -> None:
    """Add what decides ``value``'s behaviour to ``digest``."""
    if isinstance(value, functools.partial):
        _feed(digest, value.func, seen, depth)
        _feed_value(digest, value.args, seen, depth)
        _feed_value(digest, value.keywords, seen, depth)
        return
    if inspect.ismethod(value):
        _feed(digest, value.__func__, seen, depth)
        return
    if not inspect.isfunction(value):
        call = getattr(type(value), "__call__", None)  # noqa: B004
        if inspect.isfunction(call):  # a callable object: its class's __call__
            digest.update(_qualified_name(value).encode())
            _feed(digest, call, seen, depth)
        else:
            digest.update(type(value).__qualname__.encode())
        return
    if id(value) in seen or depth > MAX_DEPTH:
        return
    seen.add(id(value))
    code = value.__code__
    _feed_code(digest, code, skip_first=True)
    _feed_value(digest, value.__defaults__, seen, depth)
    _feed_value(digest, value.__kwdefaults__, seen, depth)
    for cell in value.__closure__ or ():
        try:
            _feed_value(digest, cell.cell_contents, seen, depth)
        except ValueError:  # an empty cell
            digest.update(b"<empty>")
    for name in sorted(_global_names(code)):
        if name in value.__globals__:
            digest.update(name.encode())
            _feed_value(digest, value.__globals__[name], seen, depth)


def _feed_value(digest: Any, value: Any, seen: set[int], depth: int) -> None:
    """A value the code reads: a constant by its value, a user function by its
    code, anything else by its type."""
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        digest.update(repr(value).encode())
    elif isinstance(value, (tuple, frozenset)):
        digest.update(type(value).__name__.encode())
        unordered = isinstance(value, frozenset)
        for item in sorted(value, key=repr) if unordered else value:
            _feed_value(digest, item, seen, depth)
    elif inspect.isfunction(value) and _is_user_code(value.__code__):
        _feed(digest, value, seen, depth + 1)
    elif isinstance(value, types.ModuleType):
        digest.update(value.__name__.encode())
    else:
        digest.update(getattr(value, "__qualname__", type(value).__qualname__).encode())


def _feed_code(digest: Any, code: types.CodeType, skip_first: bool = False) -> None:
    """Bytecode, names and constants, nested code included; no line numbers or file
    names. ``skip_first``: leave out the first constant, a function's docstring
    slot (its docstring, or ``None`` without one)."""
    digest.update(code.co_code)
    for names in (code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars):
        digest.update(repr(names).encode())
    digest.update(repr((code.co_argcount, code.co_kwonlyargcount)).encode())
    consts = code.co_consts
    if skip_first and consts and (consts[0] is None or isinstance(consts[0], str)):
        consts = consts[1:]
    for const in consts:
        if isinstance(const, types.CodeType):
            _feed_code(digest, const)
        else:
            digest.update(repr(const).encode())


def _global_names(code: types.CodeType) -> set[str]:
    """The names ``code`` and its nested code look up (globals among them)."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _is_user_code(code: types.CodeType) -> bool:
    """Whether ``code`` was defined outside the standard library and installed
    packages (in the user's modules, a notebook, a prompt or ``exec``)."""
    return not code.co_filename.startswith(_LIBRARY_PATHS)
