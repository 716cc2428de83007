"""Pass 4, activity: which variables can carry a derivative.

Input: an ANF ``FunctionDef`` (see ``anf``). Output: the set of *active*
names — those whose value may depend on a differentiated input (the
parameters, and with ``closure_active`` the captured variables). A statement
none of whose inputs is active runs as plain Python in the generated primal:
no rule lookup, no pullback, no tape. The analysis is flow-insensitive and
iterated to a fixed point, so loops are covered. A nested ``def`` or lambda
reads what it captures (``free_names``: Python's scoping, so its own
parameters and locals are not the enclosing function's variables), and is
active when that includes an active name; ``capture_errors`` says which
captures neither mode can differentiate.
"""

from __future__ import annotations

import ast

__all__ = [
    "active_names",
    "all_nodes",
    "bound_later",
    "capture_errors",
    "closure_contexts",
    "rebinds",
    "definition_reads",
    "free_names",
    "loaded_names",
    "param_names",
    "read_and_stored",
    "scope_bound",
    "statements",
    "stored_names",
    "value_is_active",
    "value_reads",
]

#: Builtins whose results never carry a derivative; a call of one (when the
#: name really is the builtin) runs as plain Python and its result is inactive.
NONDIFF_BUILTINS = frozenset(
    [
        "range",
        "len",
        "isinstance",
        "issubclass",
        "type",
        "id",
        "bool",
        "str",
        "repr",
        "hash",
        "print",
        "int",
        "callable",
        "hasattr",
        "ord",
        "chr",
        "format",
    ]
)


_Name, _Load, _Store, _AST = ast.Name, ast.Load, ast.Store, ast.AST
_Call, _Constant = ast.Call, ast.Constant

#: Attributes that describe an array or object rather than hold its values.
NONDIFF_ATTRIBUTES = frozenset(["shape", "ndim", "dtype", "size", "__class__", "__name__"])


def _never_active(value: ast.expr, plain_funcs: frozenset[str]) -> bool:
    """An ANF right-hand side that carries no derivative whatever its inputs."""
    if isinstance(value, (ast.Compare, ast.JoinedStr, ast.Constant)):
        return True
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not):
        return True
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and (value.func.id in plain_funcs or value.func.id in _CHECKS)
    )


#: Checks the transform inserts (``holders``) that run as plain Python, whatever they
#: are given, so that they see the differentiation they check.
_CHECKS = frozenset(
    ["_ad_unfollowed_parameter", "_ad_global_set", "_ad_global_set_active", "_ad_unfollowed_global"]
)


def value_is_active(value: ast.expr, active: set[str], plain_funcs: frozenset[str]) -> bool:
    """Whether an ANF right-hand side can carry a derivative."""
    if _never_active(value, plain_funcs):
        return False
    return not active.isdisjoint(value_reads(value))


def value_reads(value: ast.expr) -> set[str]:
    """``loaded_names(value)`` for an ANF right-hand side: a call of atoms, the
    common case, is read off its fields without a walk."""
    kind = type(value)
    if kind is _Name:
        return {value.id}  # type: ignore[attr-defined]
    if kind is _Call and type(value.func) is _Name:  # type: ignore[attr-defined]
        out = {value.func.id}  # type: ignore[attr-defined]
        for a in value.args:  # type: ignore[attr-defined]
            ka = type(a)
            if ka is _Name:
                out.add(a.id)
            elif ka is not _Constant:
                return loaded_names(value)
        for k in value.keywords:  # type: ignore[attr-defined]
            ka = type(k.value)
            if ka is _Name:
                out.add(k.value.id)
            elif ka is not _Constant:
                return loaded_names(value)
        return out
    if kind is ast.Lambda:  # its own parameters are no reads of this scope
        return free_names(value)
    return loaded_names(value)


def param_names(fn: ast.FunctionDef) -> list[str]:
    """Parameter names in signature order: positional, *args, keyword-only, **kwargs."""
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args]
    if a.vararg:
        names.append(a.vararg.arg)
    names += [x.arg for x in a.kwonlyargs]
    if a.kwarg:
        names.append(a.kwarg.arg)
    return names


def loaded_names(node: ast.AST) -> set[str]:
    """Every name read anywhere inside ``node`` (nested functions included)."""
    return read_and_stored(node)[0]


def all_nodes(node: ast.AST) -> list[ast.AST]:
    """Every node inside ``node`` (itself included), in no particular order:
    ``ast.walk`` without its generators, for the analyses that build sets."""
    out = [node]
    i = 0
    append = out.append
    while i < len(out):
        n = out[i]
        i += 1
        for field in n._fields:
            v = getattr(n, field, None)
            if type(v) is list:
                for x in v:
                    if isinstance(x, _AST):
                        append(x)
            elif isinstance(v, _AST):
                append(v)
    return out


def read_and_stored(node: ast.AST) -> tuple[set[str], set[str]]:
    """The names read and the names written anywhere inside ``node`` (nested
    functions included), in one walk.

    An explicit stack over ``_fields``: this runs for every statement of every
    transformed function, and ``ast.walk`` is several times slower.
    """
    read: set[str] = set()
    stored: set[str] = set()
    stack = [node]
    pop, push, extend = stack.pop, stack.append, stack.extend
    while stack:
        n = pop()
        if type(n) is _Name:
            ctx = type(n.ctx)
            if ctx is _Load:
                read.add(n.id)
            elif ctx is _Store:
                stored.add(n.id)
            continue
        for field in n._fields:
            v = getattr(n, field, None)
            if type(v) is list:
                extend([x for x in v if isinstance(x, _AST)])
            elif isinstance(v, _AST):
                push(v)
    return read, stored


_FUNCTION_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


def free_names(node: ast.AST) -> set[str]:
    """The names a nested ``def``, lambda, class or comprehension reads from the
    scope around it: what its body reads and does not bind itself (its parameters,
    its locals, its own nested scopes' locals), plus what its defaults, decorators
    and annotations read (those are evaluated outside it).

    ``loaded_names`` over-approximates a closure's captures: in
    ``lambda v: v * v`` beside an outer ``v``, the lambda reads only its own
    parameter, and reporting the outer ``v`` as captured would refuse a correct
    program (or, in forward mode, read a tangent that was never bound).
    """
    kind = type(node)
    if kind in _FUNCTION_SCOPES:
        a = node.args  # type: ignore[attr-defined]
        outside: list[ast.AST] = [*a.defaults, *(d for d in a.kw_defaults if d is not None)]
        params = a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]
        outside += [p.annotation for p in params if p.annotation is not None]
        if kind is not ast.Lambda:
            outside += node.decorator_list  # type: ignore[attr-defined]
            if node.returns is not None:  # type: ignore[attr-defined]
                outside.append(node.returns)  # type: ignore[attr-defined]
        body = node.body if type(node.body) is list else [node.body]  # type: ignore[attr-defined]
        reads, nested, bound, declared_global, declared_nonlocal = _scope(body)
        bound = (bound | {p.arg for p in params}) - declared_nonlocal
        return _outer_reads(outside) | ((reads | nested) - bound - declared_global)
    if kind in _COMPREHENSIONS:
        gens = node.generators  # type: ignore[attr-defined]
        # The first iterable is evaluated in the enclosing scope; the rest inside.
        inner: list[ast.AST] = []
        for i, g in enumerate(gens):
            inner += [g.target, *g.ifs] + ([g.iter] if i else [])
        inner += (
            [node.key, node.value] if kind is ast.DictComp else [node.elt]  # type: ignore[attr-defined]
        )
        reads, nested, bound, _global, _nonlocal = _scope(inner)
        return _outer_reads([gens[0].iter]) | ((reads | nested) - bound)
    if kind is ast.ClassDef:
        outside = [*node.bases, *(k.value for k in node.keywords), *node.decorator_list]  # type: ignore[attr-defined]
        reads, nested, bound, declared_global, declared_nonlocal = _scope(node.body)  # type: ignore[attr-defined]
        # The methods of a class do not see the names its body binds.
        own = (reads - (bound - declared_nonlocal)) | nested
        return _outer_reads(outside) | (own - declared_global)
    return loaded_names(node)


def definition_reads(node: ast.AST) -> set[str]:
    """The names a ``def`` or lambda reads where it is defined, not when called:
    its default values, decorators and annotations."""
    a = node.args  # type: ignore[attr-defined]
    outside: list[ast.AST] = [*a.defaults, *(d for d in a.kw_defaults if d is not None)]
    if type(node) is not ast.Lambda:
        outside += node.decorator_list  # type: ignore[attr-defined]
    return _outer_reads(outside)


def closure_contexts(body: list[ast.stmt]) -> dict[int, frozenset[str] | None]:
    """For each nested ``def`` or lambda (an ANF assignment's value) in ``body``, by
    ``id``: the names that statements after its definition bind, in program order,
    or None when it is defined in a loop (a later iteration may rebind anything).
    A capture of a name bound again after the definition sees the later value."""
    out: dict[int, frozenset[str] | None] = {}

    def walk(stmts: list[ast.stmt], frames: list, in_loop: bool) -> None:
        for i, s in enumerate(stmts):
            here = [*frames, (stmts, i)]
            kind = type(s)
            node = s.value if kind is ast.Assign and type(s.value) is ast.Lambda else s  # type: ignore[attr-defined]
            if kind is ast.FunctionDef or node is not s:
                out[id(node)] = (
                    None
                    if in_loop
                    else frozenset(
                        n for st, j in here for later in st[j + 1 :] for n in rebinds(later)
                    )
                )
            if kind is ast.FunctionDef or kind is ast.AsyncFunctionDef or kind is ast.ClassDef:
                continue  # another scope
            loop = kind is ast.For or kind is ast.While
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                inner = getattr(s, field, None)
                if type(inner) is list and inner:
                    if field in ("handlers", "cases"):
                        for h in inner:
                            walk(h.body, here, in_loop)
                    else:
                        walk(inner, here, in_loop or (loop and field == "body"))

    walk(body, [], False)
    return out


def rebinds(s: ast.stmt) -> list[str]:
    """``stored_names(s)`` less the bindings of a name to the object it holds:
    ``x = _ad_follow(x)`` (see ``holders``) rebinds nothing a closure could see."""
    follows = {
        id(n.targets[0])
        for n in all_nodes(s)
        if type(n) is ast.Assign
        and type(n.targets[0]) is _Name
        and type(n.value) is _Call
        and type(n.value.func) is _Name
        and n.value.func.id == "_ad_follow"
        and n.value.args
        and type(n.value.args[0]) is _Name
        and n.value.args[0].id == n.targets[0].id
    }
    return [
        n.id
        for n in all_nodes(s)
        if type(n) is _Name and type(n.ctx) is _Store and id(n) not in follows
    ]


def bound_later(body: list[ast.stmt]) -> dict[int, set[str]]:
    """For each nested ``def`` or lambda (an ANF assignment's value) in ``body``, by
    ``id``: the names that the statements after it bind in this scope, in program
    order (in a loop body: the rest of the body, and what follows the loop). A
    closure capturing one of them sees it only once that statement has run."""
    out: dict[int, set[str]] = {}

    def walk(stmts: list[ast.stmt], frames: list) -> None:
        for i, s in enumerate(stmts):
            here = [*frames, (stmts, i)]
            kind = type(s)
            node = s.value if kind is ast.Assign and type(s.value) is ast.Lambda else s  # type: ignore[attr-defined]
            if kind is ast.FunctionDef or node is not s:
                out[id(node)] = {
                    n for st, j in here for later in st[j + 1 :] for n in _scope([later])[2]
                }
            if kind is ast.FunctionDef or kind is ast.AsyncFunctionDef or kind is ast.ClassDef:
                continue  # another scope
            for f in ("body", "orelse", "finalbody", "handlers", "cases"):
                inner = getattr(s, f, None)
                if type(inner) is list and inner:
                    if f in ("handlers", "cases"):
                        for h in inner:
                            walk(h.body, here)
                    else:
                        walk(inner, here)

    walk(body, [])
    return out


def capture_errors(
    name: str,
    node: ast.AST,
    active: set[str],
    rebound: frozenset[str],
    after: frozenset[str] | None,
    recursion_ok: bool = False,
) -> tuple[list[str], str | None]:
    """The active names the closure ``node`` (bound to ``name``) captures, and why it
    cannot be differentiated, if it cannot (shared by reverse and forward mode).

    Refused: a capture of a name bound again after the definition (``after``, see
    ``closure_contexts``; ``rebound``: the names bound more than once), whose
    derivative would go to the wrong value; and a default value or decorator that
    carries a derivative, which no derivative follows (a default is stored on the
    function object, not captured). ``recursion_ok``: a function that calls itself
    is differentiated (reverse mode: its adjoint follows the recursive calls'
    cotangents to a fixed point, see ``reverse._Gen.closure_flow``)."""
    free = free_names(node)
    captured = sorted((free & active) - {name})
    label = _closure_label(name, node)
    if captured and name in free and not name.startswith("_ad_") and not recursion_ok:
        # Recursion: the inner calls read the closure's own derivative, taken when it
        # is defined, before its own name is bound: what they capture would be lost.
        return captured, (
            f"{label} calls itself and captures {', '.join(map(repr, captured))}, which "
            f"{_carry(captured)} a derivative: the AD takes a nested function's derivative "
            "where it is defined, and its recursive calls would lose it. To fix: pass "
            f"{', '.join(captured)} to it as {_argument(captured)} (def {name}(..., "
            f"{', '.join(captured)}) and {name}(..., {', '.join(captured)}) in the recursive "
            "call), or define it at module level"
        )
    late = [c for c in captured if c in rebound and (after is None or c in after)]
    if late:
        return captured, (
            f"{label} captures {', '.join(map(repr, late))}, which is assigned again in this "
            "function (or in a loop): Python's closures see the latest value, and the "
            "derivative would go to the wrong one. To fix: pass the value as an argument "
            "(lambda v, k: ... called with k), or define the function after the last "
            "assignment"
        )
    if type(node) in _FUNCTION_SCOPES:
        early = sorted(definition_reads(node) & active)
        if early:
            return captured, (
                f"{label} has a default value or decorator that reads "
                f"{', '.join(map(repr, early))}, which carries a derivative: a default is "
                "evaluated once, when the function is defined, and no derivative flows "
                "through it. To fix: pass the value as an argument at the call, or capture "
                "it (use the variable in the body without a default)"
            )
    return captured, None


def scope_bound(s: ast.stmt) -> set[str]:
    """The names statement ``s`` binds in its own scope (a nested ``def`` binds its
    name, not its locals)."""
    return _scope([s])[2]


def _carry(names: list[str]) -> str:
    return "carries" if len(names) == 1 else "carry"


def _argument(names: list[str]) -> str:
    return "an argument" if len(names) == 1 else "arguments"


def _closure_label(name: str, node: ast.AST) -> str:
    """How an error names a nested function: a lambda has only the temporary the
    normaliser bound it to, which the user never wrote."""
    if type(node) is ast.Lambda or name.startswith("_ad_"):
        return f"the lambda at line {getattr(node, 'lineno', '?')}"
    return f"the nested function {name!r}"


def _outer_reads(nodes: list[ast.AST]) -> set[str]:
    """The names that expressions evaluated in the enclosing scope read."""
    reads, nested, _bound, _global, _nonlocal = _scope(nodes)
    return reads | nested


def _scope(nodes: list[ast.AST]) -> tuple[set[str], set[str], set[str], set[str], set[str]]:
    """For code in one scope: the names it reads itself; the ``free_names`` of the
    scopes nested in it; the names it binds; those it declares global and nonlocal."""
    reads: set[str] = set()
    nested: set[str] = set()
    bound: set[str] = set()
    declared_global: set[str] = set()
    declared_nonlocal: set[str] = set()
    stack = list(nodes)
    while stack:
        n = stack.pop()
        kind = type(n)
        if kind is _Name:
            if type(n.ctx) is _Load:  # type: ignore[attr-defined]
                reads.add(n.id)  # type: ignore[attr-defined]
            else:
                bound.add(n.id)  # type: ignore[attr-defined]
            continue
        if kind in _FUNCTION_SCOPES or kind in _COMPREHENSIONS or kind is ast.ClassDef:
            nested |= free_names(n)
            if kind is not ast.Lambda and kind not in _COMPREHENSIONS:
                bound.add(n.name)  # type: ignore[attr-defined]
            if kind in _COMPREHENSIONS:
                # A walrus in a comprehension binds in the enclosing scope.
                bound.update(
                    w.target.id  # type: ignore[attr-defined]
                    for w in ast.walk(n)
                    if type(w) is ast.NamedExpr
                )
            continue
        if kind is ast.Global:
            declared_global.update(n.names)  # type: ignore[attr-defined]
        elif kind is ast.Nonlocal:
            declared_nonlocal.update(n.names)  # type: ignore[attr-defined]
        elif kind is ast.Import or kind is ast.ImportFrom:
            bound.update((al.asname or al.name).split(".")[0] for al in n.names)  # type: ignore[attr-defined]
        elif kind is ast.ExceptHandler and n.name:  # type: ignore[attr-defined]
            bound.add(n.name)  # type: ignore[attr-defined]
        elif kind in _MATCH_BINDERS and getattr(n, "name", None):
            bound.add(n.name)  # type: ignore[attr-defined]
        elif kind is _MATCH_MAPPING and n.rest:  # type: ignore[attr-defined]
            bound.add(n.rest)  # type: ignore[attr-defined]
        for field in n._fields:
            v = getattr(n, field, None)
            if type(v) is list:
                stack.extend([x for x in v if isinstance(x, _AST)])
            elif isinstance(v, _AST):
                stack.append(v)
    return reads, nested, bound, declared_global, declared_nonlocal


_MATCH_BINDERS = tuple(getattr(ast, k) for k in ("MatchAs", "MatchStar") if hasattr(ast, k))
_MATCH_MAPPING = getattr(ast, "MatchMapping", None)


def stored_names(node: ast.AST) -> list[str]:
    """Every name written anywhere inside ``node`` (with repeats, in no particular order)."""
    return [n.id for n in all_nodes(node) if type(n) is _Name and type(n.ctx) is _Store]


def _targets(t: ast.expr) -> list[str]:
    if type(t) is _Name:
        return [t.id]
    return [n.id for n in ast.walk(t) if isinstance(n, ast.Name)]


def statements(body: list[ast.stmt]):
    """Every statement of a body, nested blocks included (not nested functions)."""
    for s in body:
        yield s
        # A try's handlers (each with its own body) and finally block too.
        for field in ("body", "orelse", "handlers", "finalbody"):
            inner = getattr(s, field, None)
            if isinstance(inner, list) and not isinstance(s, ast.FunctionDef):
                yield from statements(inner)


def _follows_in_pushforward(value: ast.expr) -> bool:
    """``_ad_fcall(_ad_follow, ...)`` in a generated pushforward differentiated again:
    the object may have been written by a call through another name (a method of
    an object built from constants, ``c = C(); c.add(x)``), so it may carry a
    derivative whatever its inputs."""
    return (
        type(value) is _Call
        and type(value.func) is _Name
        and value.func.id == "_ad_fcall"
        and bool(value.args)
        and type(value.args[0]) is _Name
        and value.args[0].id == "_ad_follow"
    )


def active_names(
    fn: ast.FunctionDef, seeds: set[str], plain_funcs: frozenset[str] = frozenset()
) -> set[str]:
    """The names that may carry a derivative, starting from ``seeds``."""
    # Each statement reduces to (names it reads that could activate it, names
    # it binds); the fixed point then iterates over these small sets only.
    edges: list[tuple[set[str], list[str]]] = []
    for s in statements(fn.body):
        if isinstance(s, ast.Assign):
            value = s.value
            # value_is_active(value, <everything>, plain_funcs), reading the names once
            if _never_active(value, plain_funcs):
                continue
            if _follows_in_pushforward(value):
                seeds = {*seeds, *_targets(s.targets[0])}  # written through another name
                continue
            reads = value_reads(value)
            if reads:
                edges.append((reads, _targets(s.targets[0])))
        elif isinstance(s, ast.For):
            edges.append((loaded_names(s.iter), _targets(s.target)))
        elif isinstance(s, ast.FunctionDef):
            edges.append((free_names(s), [s.name]))
    active = set(seeds)
    changed = True
    while changed:
        changed = False
        for reads, binds in edges:
            if reads & active:
                for name in binds:
                    if name not in active:
                        active.add(name)
                        changed = True
    return active
