"""``match`` lowered to ``if`` statements, with Python's semantics (PEP 634); used by ``desugar``.

Output form: plain statements. The subject is evaluated once into a temporary;
each case tests its pattern on it and on its parts, binds the pattern's names
once the whole pattern matched (as CPython does), then tests the guard; the
first case whose pattern and guard hold sets the match's flag and runs its
body, and each later case runs only while the flag is false. The tests are
plain (``isinstance``, ``len``, ``==``, ``is``, ``in``, ``hasattr``), the parts
are reads the transform differentiates (``s[i]``, ``s[k]``, ``s.attr``), so a
name a pattern binds carries its part's derivative::

    match p:                          _ad_m1_s1 = p; _ad_m1_done2 = False
        case (a, b) if a > 0:         if isinstance(_ad_m1_s1, _ad_Sequence) and ... len(_ad_m1_s1) == 2:
            return a * b                  _ad_m1_i3 = _ad_m1_s1[0]; _ad_m1_i4 = _ad_m1_s1[1]
                                          a = _ad_m1_i3; b = _ad_m1_i4
                                          if a > 0: _ad_m1_done2 = True; return a * b

A sequence pattern matches a ``collections.abc.Sequence`` other than ``str``,
``bytes`` and ``bytearray`` (not a numpy array, as in Python); a mapping pattern
a ``collections.abc.Mapping``; a class pattern's positional sub-patterns read
the attributes ``__match_args__`` names (``ad.runtime.control.match_args``); an or-pattern
tries its alternatives in order, each binding the same names into temporaries.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable

__all__ = ["lower_match"]

#: The names a pattern bound so far, each with the temporary holding its value.
Captures = list[tuple[str, str]]
Continuation = Callable[[Captures], list[ast.stmt]]


class _Lower:
    def __init__(self, prefix: str, line: int) -> None:
        self.prefix = prefix
        self.n = 0
        self.line = line

    def fresh(self, what: str) -> str:
        self.n += 1
        return f"{self.prefix}_{what}{self.n}"

    # --- located nodes (anf passes atoms on as they are) -----------------------

    def at(self, node: ast.AST) -> ast.AST:
        node.lineno = self.line  # type: ignore[attr-defined]
        node.col_offset = 0  # type: ignore[attr-defined]
        return node

    def load(self, name: str) -> ast.Name:
        return self.at(ast.Name(name, ast.Load()))  # type: ignore[return-value]

    def const(self, value: object) -> ast.Constant:
        return self.at(ast.Constant(value))  # type: ignore[return-value]

    def assign(self, name: str, value: ast.expr) -> ast.Assign:
        target = self.at(ast.Name(name, ast.Store()))
        return self.at(ast.Assign([target], value))  # type: ignore[return-value]

    def call(self, fn: str, *args: ast.expr) -> ast.Call:
        return self.at(ast.Call(self.load(fn), list(args), []))  # type: ignore[return-value]

    def if_(self, test: ast.expr, body: list[ast.stmt]) -> ast.If:
        return self.at(ast.If(test, body or [self.at(ast.Pass())], []))  # type: ignore[return-value]

    def all_of(self, tests: list[ast.expr]) -> ast.expr:
        if len(tests) == 1:
            return tests[0]
        return self.at(ast.BoolOp(ast.And(), tests))  # type: ignore[return-value]

    def compare(self, left: ast.expr, op: ast.cmpop, right: ast.expr) -> ast.expr:
        return self.at(ast.Compare(left, [op], [right]))  # type: ignore[return-value]

    def item(self, subject: str, index: ast.expr) -> ast.expr:
        return self.at(ast.Subscript(self.load(subject), index, ast.Load()))  # type: ignore[return-value]

    def expr(self, e: ast.expr) -> ast.expr:
        """A copy of a pattern's expression (a value, a key, a class), evaluated
        where the lowering needs it; its nodes keep their own locations."""
        return copy.deepcopy(e)

    # --- patterns ------------------------------------------------------------

    def pattern(self, p: ast.pattern, subj: str, caps: Captures, k: Continuation) -> list[ast.stmt]:
        """Statements that test ``p`` on the value of ``subj`` and, when it matches,
        run ``k`` with the captures extended by ``p``'s."""
        self.line = getattr(p, "lineno", self.line)
        if isinstance(p, ast.MatchAs):
            if p.pattern is None:
                return k(caps + [(p.name, subj)] if p.name else caps)
            name = p.name
            return self.pattern(p.pattern, subj, caps, lambda c: k(c + [(name, subj)]))  # type: ignore[list-item]
        if isinstance(p, ast.MatchValue):
            test = self.compare(self.load(subj), ast.Eq(), self.expr(p.value))
            return [self.if_(test, k(caps))]
        if isinstance(p, ast.MatchSingleton):
            test = self.compare(self.load(subj), ast.Is(), self.const(p.value))
            return [self.if_(test, k(caps))]
        if isinstance(p, ast.MatchSequence):
            return self.sequence(p, subj, caps, k)
        if isinstance(p, ast.MatchMapping):
            return self.mapping(p, subj, caps, k)
        if isinstance(p, ast.MatchClass):
            return self.class_(p, subj, caps, k)
        if isinstance(p, ast.MatchOr):
            return self.or_(p, subj, caps, k)
        raise AssertionError(f"unexpected pattern {type(p).__name__}")  # pragma: no cover

    def sequence(
        self, p: ast.MatchSequence, subj: str, caps: Captures, k: Continuation
    ) -> list[ast.stmt]:
        pats = p.patterns
        n = len(pats)
        stars = [i for i, q in enumerate(pats) if isinstance(q, ast.MatchStar)]
        size = self.call("_ad_len", self.load(subj))
        length = (
            self.compare(size, ast.GtE(), self.const(n - 1))
            if stars
            else self.compare(size, ast.Eq(), self.const(n))
        )
        test = self.all_of(
            [
                self.call("_ad_isinstance", self.load(subj), self.load("_ad_Sequence")),
                self.at(
                    ast.UnaryOp(
                        ast.Not(),
                        self.call(
                            "_ad_isinstance", self.load(subj), self.load("_ad_not_sequences")
                        ),
                    )
                ),  # type: ignore[list-item]
                length,
            ]
        )
        star = stars[0] if stars else n

        def part(j: int, c: Captures) -> list[ast.stmt]:
            if j == n:
                return k(c)
            q = pats[j]
            if isinstance(q, ast.MatchStar):
                if q.name is None:
                    return part(j + 1, c)
                after = n - 1 - j
                upper = self.const(-after) if after else None
                piece = self.at(ast.Slice(self.const(j), upper, None))
                rest = self.at(
                    ast.List([self.at(ast.Starred(self.item(subj, piece), ast.Load()))], ast.Load())
                )
                t = self.fresh("r")
                return [self.assign(t, rest), *part(j + 1, c + [(q.name, t)])]  # type: ignore[arg-type]
            if _is_wildcard(q):
                return part(j + 1, c)
            t = self.fresh("i")
            index = self.const(j if j < star else j - n)
            read = self.assign(t, self.item(subj, index))
            return [read, *self.pattern(q, t, c, lambda c2: part(j + 1, c2))]

        return [self.if_(test, part(0, caps))]

    def mapping(
        self, p: ast.MatchMapping, subj: str, caps: Captures, k: Continuation
    ) -> list[ast.stmt]:
        tests: list[ast.expr] = [
            self.call("_ad_isinstance", self.load(subj), self.load("_ad_Mapping"))
        ]
        if p.keys:
            size = self.call("_ad_len", self.load(subj))
            tests.append(self.compare(size, ast.GtE(), self.const(len(p.keys))))
        tests += [self.compare(self.expr(key), ast.In(), self.load(subj)) for key in p.keys]
        reads: list[ast.stmt] = []
        temps: list[str] = []
        for key, q in zip(p.keys, p.patterns):
            t = self.fresh("v")
            temps.append(t)
            if not _is_wildcard(q):
                reads.append(self.assign(t, self.item(subj, self.expr(key))))
        rest_caps: Captures = []
        if p.rest is not None:
            # {kk: vv for kk, vv in subj.items() if kk not in (key, ...)}
            t, kk, vv = self.fresh("rest"), self.fresh("k"), self.fresh("x")
            items = self.at(ast.Attribute(self.load(subj), "items", ast.Load()))
            keys = self.at(ast.Tuple([self.expr(key) for key in p.keys], ast.Load()))
            target = self.at(
                ast.Tuple(
                    [self.at(ast.Name(kk, ast.Store())), self.at(ast.Name(vv, ast.Store()))],
                    ast.Store(),
                )
            )
            gen = ast.comprehension(
                target=target,
                iter=self.at(ast.Call(items, [], [])),
                ifs=[self.compare(self.load(kk), ast.NotIn(), keys)],
                is_async=0,
            )
            comp = self.at(ast.DictComp(self.load(kk), self.load(vv), [gen]))
            reads.append(self.assign(t, comp))  # type: ignore[arg-type]
            rest_caps = [(p.rest, t)]

        def part(j: int, c: Captures) -> list[ast.stmt]:
            if j == len(temps):
                return k(c + rest_caps)
            q = p.patterns[j]
            if _is_wildcard(q):
                return part(j + 1, c)
            return self.pattern(q, temps[j], c, lambda c2: part(j + 1, c2))

        return [self.if_(self.all_of(tests), [*reads, *part(0, caps)])]

    def class_(
        self, p: ast.MatchClass, subj: str, caps: Captures, k: Continuation
    ) -> list[ast.stmt]:
        test = self.call("_ad_isinstance", self.load(subj), self.expr(p.cls))
        body: list[ast.stmt] = []
        names = ""
        if p.patterns:
            names = self.fresh("args")
            keywords = self.at(ast.Tuple([self.const(a) for a in p.kwd_attrs], ast.Load()))
            body.append(
                self.assign(
                    names,
                    self.call(
                        "_ad_match_args", self.expr(p.cls), self.const(len(p.patterns)), keywords
                    ),
                )
            )
        n_pos = len(p.patterns)
        subs = [*p.patterns, *p.kwd_patterns]

        def part(j: int, c: Captures) -> list[ast.stmt]:
            if j == len(subs):
                return k(c)
            q = subs[j]
            t = self.fresh("a")
            if j < n_pos:
                # The attribute __match_args__ names, or the subject itself (None).
                nm = self.fresh("n")
                out: list[ast.stmt] = [self.assign(nm, self.item(names, self.const(j)))]
                is_self = self.compare(self.load(nm), ast.Is(), self.const(None))
                found = self.at(
                    ast.BoolOp(
                        ast.Or(),
                        [is_self, self.call("_ad_hasattr", self.load(subj), self.load(nm))],
                    )
                )
                value = self.at(
                    ast.IfExp(
                        self.compare(self.load(nm), ast.Is(), self.const(None)),
                        self.load(subj),
                        self.call("_ad_getattr", self.load(subj), self.load(nm)),
                    )
                )
            else:
                attr = p.kwd_attrs[j - n_pos]
                out = []
                found = self.call("_ad_hasattr", self.load(subj), self.const(attr))
                value = self.at(ast.Attribute(self.load(subj), attr, ast.Load()))
            inner = [self.assign(t, value), *self.pattern(q, t, c, lambda c2: part(j + 1, c2))]  # type: ignore[arg-type]
            return [*out, self.if_(found, inner)]  # type: ignore[arg-type]

        return [self.if_(test, [*body, *part(0, caps)])]

    def or_(self, p: ast.MatchOr, subj: str, caps: Captures, k: Continuation) -> list[ast.stmt]:
        flag = self.fresh("or")
        names = sorted(_bound(p.patterns[0]))
        temps = {name: self.fresh("o") for name in names}

        def alternative_matched(c: Captures) -> list[ast.stmt]:
            return [
                *[self.assign(temps[name], self.load(src)) for name, src in c],
                self.assign(flag, self.const(True)),
            ]

        out: list[ast.stmt] = [self.assign(flag, self.const(False))]
        for j, alt in enumerate(p.patterns):
            stmts = self.pattern(alt, subj, [], alternative_matched)
            if j:
                stmts = [self.if_(self.at(ast.UnaryOp(ast.Not(), self.load(flag))), stmts)]  # type: ignore[arg-type]
            out += stmts
        matched = k(caps + [(name, temps[name]) for name in names])
        out.append(self.if_(self.load(flag), matched))
        return out


def _is_wildcard(p: ast.pattern) -> bool:
    return isinstance(p, ast.MatchAs) and p.pattern is None and p.name is None


def _bound(p: ast.pattern) -> set[str]:
    """The names a pattern binds."""
    out: set[str] = set()
    for node in ast.walk(p):
        if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            out.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            out.add(node.rest)
    return out


def lower_match(s: ast.Match, prefix: str) -> list[ast.stmt]:
    """The statements that do what ``s`` does; fresh names start with ``prefix``."""
    low = _Lower(prefix, s.lineno)
    subj, done = low.fresh("s"), low.fresh("done")
    out: list[ast.stmt] = [low.assign(subj, s.subject)]
    several = len(s.cases) > 1
    if several:
        out.append(low.assign(done, low.const(False)))
    for i, case in enumerate(s.cases):
        low.line = case.pattern.lineno

        def matched(c: Captures, case: ast.match_case = case) -> list[ast.stmt]:
            low.line = case.pattern.lineno
            binds: list[ast.stmt] = [low.assign(name, low.load(src)) for name, src in c]
            body = [low.assign(done, low.const(True)), *case.body] if several else case.body
            if case.guard is not None:
                return [*binds, low.if_(case.guard, body)]
            return [*binds, *body]

        stmts = low.pattern(case.pattern, subj, [], matched)
        if i:
            low.line = case.pattern.lineno
            stmts = [low.if_(low.at(ast.UnaryOp(ast.Not(), low.load(done))), stmts)]  # type: ignore[arg-type]
        out += stmts
    return out
