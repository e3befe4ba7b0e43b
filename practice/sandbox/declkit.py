"""Parameter declarations: each function's argument domains and return type, declared once.

A problem's ``declare.py`` builds ``FUNCTIONS = {name: Fn(...)}`` from the specs below. From that one
declaration the judge derives three things, so that they cannot disagree:

- the statement's ``### 输入检查`` block (rendered from the specs' ``rule`` texts by
  ``practice/declaration.py``; ``judge.py declare`` writes it, ``judge.py check`` fails a problem
  whose block differs);
- the hidden invalid-input cases (``cases``): both sides of every bound, wrong types, bools where
  numbers are wanted, NaN and infinities where finite is required, wrong sequence kinds, missing and
  extra keys; the valid side must be accepted, the invalid side must raise ``ValueError`` naming the
  field;
- the return type printed in every signature.

This file is copied into the judge's trusted folder (next to ``judgekit.py``); the learner's code
never sees it. It imports nothing but the standard library and ``judgekit``.
"""
from __future__ import annotations

import math
import numbers
import re

__all__ = ["Int", "Real", "Bool", "Str", "Optional", "Either", "List", "Tuple", "Dict", "Map", "Any", "Fn",
           "cases", "run_case", "rule_for", "Case"]

# --- specs ------------------------------------------------------------------------------------


def _fmt(x) -> str:
    if isinstance(x, int) and not isinstance(x, bool) and x >= 1 << 16 and (x & (x - 1)) == 0:
        return f"2^{x.bit_length() - 1}"
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return f"{x:.1f}"
    return repr(x)


class Spec:
    """One domain. ``note`` adds words to the rendered rule (not generated: hand-written cases
    cover it); ``report`` is the field the ``ValueError`` names when not the argument itself."""

    def __init__(self, note: str = "", note_en: str = "", report: str | None = None):
        self.note, self.note_en, self.report = note, note_en or note, report

    def conforms(self, v) -> bool:
        raise NotImplementedError

    def phrase(self, lang: str) -> str:
        raise NotImplementedError

    def rule(self, lang: str) -> str:
        text = self.phrase(lang)
        note = self.note_en if lang == "en" else self.note
        if note:
            text += ("; " if lang == "en" else "；") + note
        return text

    def invalid(self, base) -> list[tuple[str, object]]:
        """(where, value) pairs that break the rule; ``where`` is a path suffix such as ``[0]``."""
        return []

    def edges(self, base) -> list[tuple[str, object]]:
        """(where, value) pairs on the valid side of each rule (the judge checks they are accepted)."""
        return []

    def children(self):
        return []

    def type_name(self) -> str:
        raise NotImplementedError

    def same(self, other) -> bool:
        return type(self) is type(other) and vars(self) == vars(other)


def _num(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


class _Bounded(Spec):
    def __init__(self, ge=None, gt=None, le=None, lt=None, **kw):
        super().__init__(**kw)
        if ge is not None and gt is not None or le is not None and lt is not None:
            raise ValueError("give at most one lower bound (ge/gt) and one upper bound (le/lt)")
        self.ge, self.gt, self.le, self.lt = ge, gt, le, lt

    def in_bounds(self, v) -> bool:
        return ((self.ge is None or v >= self.ge) and (self.gt is None or v > self.gt)
                and (self.le is None or v <= self.le) and (self.lt is None or v < self.lt))

    def bound_text(self, noun: str, lang: str) -> str:
        lo = (f"[{_fmt(self.ge)}" if self.ge is not None else f"({_fmt(self.gt)}" if self.gt is not None else None)
        hi = (f"{_fmt(self.le)}]" if self.le is not None else f"{_fmt(self.lt)})" if self.lt is not None else None)
        if lo and hi:
            return f"{noun} in {lo}, {hi}" if lang == "en" else f"{lo}, {hi} 内的{noun}"
        op, x = ((">=", self.ge) if self.ge is not None else (">", self.gt) if self.gt is not None else
                 ("<=", self.le) if self.le is not None else ("<", self.lt) if self.lt is not None else (None, None))
        if op is None:
            return noun if lang == "en" else noun
        sym = {">=": "≥", ">": ">", "<=": "≤", "<": "<"}[op]
        return f"{noun} {sym} {_fmt(x)}" if lang == "en" else f"{sym} {_fmt(x)} 的{noun}"


class Int(_Bounded):
    """An ``int`` (not ``bool``, not ``2.0``) within the bounds."""

    def conforms(self, v) -> bool:
        return isinstance(v, numbers.Integral) and not isinstance(v, bool) and self.in_bounds(v)

    def phrase(self, lang):
        return self.bound_text("integer" if lang == "en" else "整数", lang)

    def _valid_edges(self):
        out = []
        if self.ge is not None:
            out.append(self.ge)
        if self.gt is not None:
            out.append(self.gt + 1)
        if self.le is not None:
            out.append(self.le)
        if self.lt is not None:
            out.append(self.lt - 1)
        return out

    def invalid(self, base):
        out = []
        if self.ge is not None:
            out.append(self.ge - 1)
        if self.gt is not None:
            out.append(self.gt)
        if self.le is not None:
            out.append(self.le + 1)
        if self.lt is not None:
            out.append(self.lt)
        good = base if self.conforms(base) else 1
        out += [float(good), _bool_like(self, good), str(good), None]
        return [("", v) for v in out]

    def edges(self, base):
        return [("", v) for v in self._valid_edges()]

    def type_name(self):
        return "int"


def _bool_like(spec, good):
    """The bool that equals a valid value where there is one (so only the bool rule is broken)."""
    for b in (True, False):
        if spec.conforms(int(b)) or spec.conforms(float(b)):
            return b
    return bool(good)


class Real(_Bounded):
    """An ``int`` or ``float`` (not ``bool``) within the bounds, finite unless ``finite=False``
    (then +inf/-inf may be given where the bounds allow it; NaN never)."""

    def __init__(self, ge=None, gt=None, le=None, lt=None, finite: bool = True, **kw):
        super().__init__(ge, gt, le, lt, **kw)
        self.finite = finite

    def conforms(self, v) -> bool:
        if not _num(v) or math.isnan(v) or (self.finite and math.isinf(v)):
            return False
        return self.in_bounds(v)

    def phrase(self, lang):
        bounded = self.bound_text("number" if lang == "en" else "数", lang)
        two = (self.ge is not None or self.gt is not None) and (self.le is not None or self.lt is not None)
        if self.finite:
            if two:
                return bounded
            return bounded.replace("number", "finite number") if lang == "en" else \
                bounded[:-1] + "有限数"
        return bounded + (" (inf allowed)" if lang == "en" else "（可以是 inf）")

    def _step(self, x, up: bool) -> float:
        """The valid side of an open bound: a millionth of max(1, |x|) inside it (not the next
        float, whose extreme results would test overflow rather than the rule)."""
        step = max(1.0, abs(x)) * 1e-6
        return x + step if up else x - step

    def invalid(self, base):
        out = []
        if self.ge is not None:
            out.append(math.nextafter(self.ge, -math.inf))
        if self.gt is not None:
            out.append(self.gt)
        if self.le is not None:
            out.append(math.nextafter(self.le, math.inf))
        if self.lt is not None:
            out.append(self.lt)
        out.append(math.nan)
        if self.finite:
            out += [math.inf, -math.inf]
        good = base if self.conforms(base) else 1.0
        out += [_bool_like(self, good), str(good), None]
        return [("", v) for v in out if not self.conforms(v)]

    def edges(self, base):
        out = []
        if self.ge is not None:
            out.append(self.ge)
        if self.gt is not None:
            out.append(self._step(self.gt, True))
        if self.le is not None:
            out.append(self.le)
        if self.lt is not None:
            out.append(self._step(self.lt, False))
        if not self.finite:
            out += [v for v in (math.inf, -math.inf) if self.in_bounds(v)]
        return [("", v) for v in out if self.conforms(v)]

    def type_name(self):
        return "float"


class Bool(Spec):
    """``True`` or ``False`` (not ``0``/``1``)."""

    def conforms(self, v):
        return isinstance(v, bool)

    def phrase(self, lang):
        return "a bool (True or False)" if lang == "en" else "布尔值（True 或 False）"

    def invalid(self, base):
        return [("", 1), ("", 0), ("", "True"), ("", None)]

    def edges(self, base):
        return [("", True), ("", False)]

    def type_name(self):
        return "bool"


class Str(Spec):
    """A ``str``; with ``choices``, one of them exactly; ``nonempty`` forbids ``""``."""

    def __init__(self, choices=None, nonempty: bool = False, **kw):
        super().__init__(**kw)
        self.choices = list(choices) if choices is not None else None
        self.nonempty = nonempty

    def conforms(self, v):
        if not isinstance(v, str):
            return False
        if self.choices is not None:
            return v in self.choices
        return bool(v) or not self.nonempty

    def phrase(self, lang):
        if self.choices is not None and len(self.choices) == 1:
            return f'`"{self.choices[0]}"`'
        if self.choices is not None:
            items = "、".join(f'`"{c}"`' for c in self.choices) if lang != "en" else \
                ", ".join(f'`"{c}"`' for c in self.choices)
            return f"one of {items}" if lang == "en" else f"{items} 之一"
        if self.nonempty:
            return "a non-empty string" if lang == "en" else "非空字符串"
        return "a string" if lang == "en" else "字符串"

    def invalid(self, base):
        out = [1, None]
        if self.choices is not None:
            first = self.choices[0]
            out += [v for v in (first.upper(), first + " ", "") if v not in self.choices]
        elif self.nonempty:
            out.append("")
        return [("", v) for v in out]

    def edges(self, base):
        if self.choices is not None:
            return [("", c) for c in self.choices]
        return [] if self.nonempty else [("", "")]

    def type_name(self):
        return "str"


class Optional(Spec):
    """``None`` or the inner spec."""

    def __init__(self, inner: Spec, **kw):
        super().__init__(**kw)
        self.inner = inner

    def conforms(self, v):
        return v is None or self.inner.conforms(v)

    def phrase(self, lang):
        return f"None or {self.inner.phrase(lang)}" if lang == "en" else f"None 或{self.inner.phrase(lang)}"

    def invalid(self, base):
        return [(w, v) for w, v in self.inner.invalid(base if base is not None else None) if v is not None]

    def edges(self, base):
        return [("", None)] + (self.inner.edges(base) if base is not None else [])

    def children(self):
        return self.inner.children()

    def type_name(self):
        return f"{self.inner.type_name()} | None"

    def same(self, other):
        return type(other) is Optional and self.inner.same(other.inner) and self.note == other.note


class Either(Spec):
    """A value that conforms to at least one of the options."""

    def __init__(self, *options: Spec, **kw):
        super().__init__(**kw)
        self.options = options

    def conforms(self, v):
        return any(o.conforms(v) for o in self.options)

    def phrase(self, lang):
        return (" or " if lang == "en" else "或").join(o.phrase(lang) for o in self.options)

    def invalid(self, base):
        out = []
        for o in self.options:
            out += [(w, v) for w, v in o.invalid(base if o.conforms(base) else None)
                    if w or not self.conforms(v)]
        return out

    def edges(self, base):
        return [e for o in self.options for e in o.edges(base if o.conforms(base) else None)]

    def type_name(self):
        return " | ".join(o.type_name() for o in self.options)

    def same(self, other):
        return type(other) is Either and len(self.options) == len(other.options) and \
            all(a.same(b) for a, b in zip(self.options, other.options)) and self.note == other.note


class Any(Spec):
    """Anything; the rule is only words (``note``) and hand-written cases check it."""

    def conforms(self, v):
        return True

    def phrase(self, lang):
        return "any value" if lang == "en" else "任意值"

    def rule(self, lang):
        note = self.note_en if lang == "en" else self.note
        return note or self.phrase(lang)

    def type_name(self):
        return "object"


_KIND_NAMES = {"list": ("列表", "list"), "tuple": ("元组", "tuple")}


class List(Spec):
    """A sequence of ``kinds`` (``"list"``, ``"tuple"``) whose every item conforms to ``item``, with
    ``min_len`` <= length <= ``max_len``."""

    def __init__(self, item: Spec | None = None, kinds=("list",), min_len: int = 0,
                 max_len: int | None = None, **kw):
        super().__init__(**kw)
        self.item = item if item is not None else Any()
        self.kinds = tuple(kinds)
        self.min_len, self.max_len = min_len, max_len

    def conforms(self, v):
        if type(v).__name__ not in self.kinds or not isinstance(v, (list, tuple)):
            return False
        if len(v) < self.min_len or (self.max_len is not None and len(v) > self.max_len):
            return False
        return all(self.item.conforms(x) for x in v)

    def _noun(self, lang):
        i = 1 if lang == "en" else 0
        return (" or " if lang == "en" else "或").join(_KIND_NAMES[k][i] for k in self.kinds)

    def phrase(self, lang):
        noun = self._noun(lang)
        if self.max_len is not None and self.max_len == self.min_len:
            size = f"of length {self.min_len}" if lang == "en" else f"长度为 {self.min_len} 的"
        elif self.min_len == 1 and self.max_len is None:
            size = "non-empty" if lang == "en" else "非空的"
        elif self.min_len or self.max_len is not None:
            hi = "∞" if self.max_len is None else self.max_len
            size = f"of length in [{self.min_len}, {hi}]" if lang == "en" else f"长度在 [{self.min_len}, {hi}] 内的"
        else:
            size = "" if lang == "en" else "（可以为空的）"
        if lang == "en":
            head = f"a {size + ' ' if size and not size.startswith('of') else ''}{noun}" + \
                (f" {size}" if size.startswith("of") else "") + (" (may be empty)" if not size else "")
        else:
            head = f"{size}{noun}" if size != "（可以为空的）" else f"{noun}（可以为空）"
        if isinstance(self.item, Any) and not self.item.note:
            return head
        item = self.item.rule(lang)
        return head + (", each item " + item if lang == "en" else "，每项是" + spaced(item))

    def rule(self, lang):
        text = self.phrase(lang)
        note = self.note_en if lang == "en" else self.note
        return text + ((("; " if lang == "en" else "；") + note) if note else "")

    def invalid(self, base):
        base = list(base) if isinstance(base, (list, tuple)) else []
        out = []
        for kind in ("list", "tuple"):
            if kind not in self.kinds:
                out.append(("", list(base) if kind == "list" else tuple(base)))
        out += [("", 3), ("", None)]
        if self.min_len > 0:
            out.append(("", base[:self.min_len - 1]))
        if self.max_len is not None and base:
            out.append(("", (base * (self.max_len + 1))[:self.max_len + 1]))
        if base:
            for where, v in self.item.invalid(base[0]):
                out.append((f"[0]{where}", [v] + base[1:]))
        return [(w, self._kind(v)) for w, v in out]

    def _kind(self, v):
        return v

    def edges(self, base):
        base = list(base) if isinstance(base, (list, tuple)) else []
        out = [("", tuple(base) if k == "tuple" else list(base)) for k in self.kinds]
        if self.min_len == 0:
            out.append(("", [] if "list" in self.kinds else ()))
        if base:
            make = list if "list" in self.kinds else tuple
            for where, v in self.item.edges(base[0]):
                out.append((f"[0]{where}", make([v] + base[1:])))
        return out

    def children(self):
        return [("", self.item)]

    def type_name(self):
        return "list" if "list" in self.kinds else "tuple"

    def same(self, other):
        return type(other) is List and self.item.same(other.item) and self.kinds == other.kinds and \
            (self.min_len, self.max_len, self.note) == (other.min_len, other.max_len, other.note)


class Tuple(Spec):
    """A fixed-length sequence (of ``kinds``) whose i-th item conforms to ``items[i]``; ``names``
    label the positions in the statement (``[tp, alpha_us, beta_gbs]``)."""

    def __init__(self, *items: Spec, names=(), kinds=("list", "tuple"), **kw):
        super().__init__(**kw)
        self.items, self.names, self.kinds = tuple(items), tuple(names), tuple(kinds)

    def conforms(self, v):
        return type(v).__name__ in self.kinds and isinstance(v, (list, tuple)) and len(v) == len(self.items) \
            and all(s.conforms(x) for s, x in zip(self.items, v))

    def phrase(self, lang):
        noun = (" or " if lang == "en" else "或").join(_KIND_NAMES[k][1 if lang == "en" else 0] for k in self.kinds)
        label = f" `[{', '.join(self.names)}]`" if self.names else ""
        if lang == "en":
            return f"a {noun} of {len(self.items)}{label}"
        return f"长度为 {len(self.items)} 的{noun}{label}"

    def invalid(self, base):
        base = list(base) if isinstance(base, (list, tuple)) and len(base) == len(self.items) else [None] * len(self.items)
        make = tuple if "tuple" in self.kinds else list
        out = [("", v) for v in ((list(base),) if "list" not in self.kinds else ()) +
               ((tuple(base),) if "tuple" not in self.kinds else ()) + (3, None, make(base[:-1]), make(base + [0]))]
        for i, spec in enumerate(self.items):
            for where, v in spec.invalid(base[i]):
                out.append((f"[{i}]{where}", make(base[:i] + [v] + base[i + 1:])))
        return out

    def edges(self, base):
        base = list(base) if isinstance(base, (list, tuple)) and len(base) == len(self.items) else None
        if base is None:
            return []
        make = tuple if "tuple" in self.kinds else list
        out = [("", tuple(base) if k == "tuple" else list(base)) for k in self.kinds]
        for i, spec in enumerate(self.items):
            for where, v in spec.edges(base[i]):
                out.append((f"[{i}]{where}", make(base[:i] + [v] + base[i + 1:])))
        return out

    def type_name(self):
        return "list" if "list" in self.kinds else "tuple"

    def same(self, other):
        return type(other) is Tuple and len(self.items) == len(other.items) and self.names == other.names and \
            self.kinds == other.kinds and all(a.same(b) for a, b in zip(self.items, other.items))


class Dict(Spec):
    """A ``dict`` with exactly the keys of ``keys`` (each value conforming to its spec), plus any of
    ``optional``."""

    def __init__(self, keys: dict[str, Spec] | None = None, optional: dict[str, Spec] | None = None,
                 open: bool = False, **kw):  # noqa: A002 - reads as Dict(..., open=True)
        super().__init__(**kw)
        self.keys = dict(keys or {})
        self.optional = dict(optional or {})
        self.open = open        # other keys allowed (and ignored)

    def conforms(self, v):
        if not isinstance(v, dict):
            return False
        if any(k not in v for k in self.keys):
            return False
        if not self.open and any(k not in self.keys and k not in self.optional for k in v):
            return False
        specs = {**self.keys, **self.optional}
        return all(specs[k].conforms(x) for k, x in v.items() if k in specs)

    def phrase(self, lang):
        names = ("、" if lang != "en" else ", ").join(f"`{k}`" for k in self.keys)
        if lang == "en":
            text = f"a dict with exactly the keys {names}"
            if self.optional:
                text += " (optionally also " + ", ".join(f"`{k}`" for k in self.optional) + ")"
            if self.open:
                text = text.replace("exactly the keys", "at least the keys")
        else:
            text = f"正好有键 {names} 的字典" if not self.open else f"至少有键 {names} 的字典"
            if self.optional:
                text = f"有键 {names}（还可以有 " + "、".join(f"`{k}`" for k in self.optional) + "）的字典"
        return text

    def invalid(self, base):
        base = dict(base) if isinstance(base, dict) else {}
        out = [("", list(base.items())), ("", None)]
        if self.keys:
            first = next(iter(self.keys))
            out.append(("", {k: v for k, v in base.items() if k != first}))
        if not self.open:
            out.append(("", {**base, "extra_key": 0}))
        for key, spec in list(self.keys.items()) + list(self.optional.items()):
            if key in base:
                for where, v in spec.invalid(base[key]):
                    out.append((f"[{key!r}]{where}", {**base, key: v}))
        return out

    def edges(self, base):
        base = dict(base) if isinstance(base, dict) else {}
        out = []
        for key, spec in list(self.keys.items()) + list(self.optional.items()):
            if key in base:
                for where, v in spec.edges(base[key]):
                    out.append((f"[{key!r}]{where}", {**base, key: v}))
        for key in self.optional:
            if key in base:
                out.append(("", {k: v for k, v in base.items() if k != key}))
        return out

    def children(self):
        return list(self.keys.items()) + list(self.optional.items())

    def type_name(self):
        return "dict"

    def same(self, other):
        return type(other) is Dict and list(self.keys) == list(other.keys) and self.open == other.open and \
            list(self.optional) == list(other.optional) and self.note == other.note and \
            all(a.same(other.keys[k]) for k, a in self.keys.items()) and \
            all(a.same(other.optional[k]) for k, a in self.optional.items())


class Map(Spec):
    """A ``dict`` with any keys conforming to ``key`` and values to ``value``."""

    def __init__(self, key: Spec, value: Spec, min_len: int = 0, **kw):
        super().__init__(**kw)
        self.key, self.value, self.min_len = key, value, min_len

    def conforms(self, v):
        return isinstance(v, dict) and len(v) >= self.min_len and \
            all(self.key.conforms(k) and self.value.conforms(x) for k, x in v.items())

    def phrase(self, lang):
        size = ("non-empty " if lang == "en" else "非空") if self.min_len else ""
        if lang == "en":
            return f"a {size}dict whose keys are {self.key.rule(lang)} and values {self.value.rule(lang)}"
        return f"{size}字典，键是{spaced(self.key.rule(lang))}，值是{spaced(self.value.rule(lang))}"

    def invalid(self, base):
        base = dict(base) if isinstance(base, dict) else {}
        out = [("", list(base.items())), ("", None)]
        if self.min_len:
            out.append(("", {}))
        if base:
            k0 = next(iter(base))
            for where, v in self.value.invalid(base[k0]):
                out.append((f"[{k0!r}]{where}", {**base, k0: v}))
            for _, k in self.key.invalid(k0):
                try:
                    hash(k)
                except TypeError:
                    continue
                if k not in base:
                    rest = {kk: vv for kk, vv in base.items() if kk != k0}
                    out.append(("<key>", {k: base[k0], **rest}))
        return out

    def edges(self, base):
        out = [("", {})] if not self.min_len else []
        if isinstance(base, dict) and base:
            k0 = next(iter(base))
            for where, v in self.value.edges(base[k0]):
                out.append((f"[{k0!r}]{where}", {**base, k0: v}))
        return out

    def type_name(self):
        return "dict"


class Fn:
    """One function: its parameters' specs in signature order, its return spec, one valid call
    (``example``: every parameter by name, defaults included) and cross-field rules in words
    (``rules``; hand-written hidden cases check those). ``when={param: {other: value}}`` limits a
    parameter's rule to calls where ``other == value`` (e.g. MLA-only fields); ``also`` lists more
    valid calls, and a parameter's generated cases start from the first call that meets its
    ``when``; ``infeasible`` names the parameters that a cross-field rule can reject even inside
    their domain (e.g. a TPOT target no batch meets)."""

    def __init__(self, *, returns: Spec, example: dict, rules=(), rules_en=(), when=None, also=(),
                 infeasible=(), **params: Spec):
        self.params = params
        self.returns = returns
        self.example = dict(example)
        self.also = [dict(e) for e in also]
        # parameters whose valid values can still make the call infeasible (a rule in ``rules``
        # names them): a boundary value the reference rejects naming one of them must be rejected
        self.infeasible = tuple(infeasible)
        self.rules = list(rules)
        self.rules_en = list(rules_en) or list(rules)
        self.when = dict(when or {})

    def applies(self, param: str, call: dict) -> bool:
        """Whether ``param``'s rule applies to ``call`` (its ``when`` holds there)."""
        return all(call.get(k) == v for k, v in self.when.get(param, {}).items())

    def base_for(self, param: str) -> dict:
        """The valid call a parameter's generated cases change."""
        for call in [self.example] + self.also:
            if self.applies(param, call):
                return dict(call)
        return {**self.example, **self.when.get(param, {})}


# --- generated cases --------------------------------------------------------------------------

class Case:
    """Every variant of one parameter of one function: (where, value, valid) triples."""

    def __init__(self, function: str, param: str, field: str, base: dict, variants: list):
        self.function, self.param, self.field, self.base, self.variants = function, param, field, base, variants
        self.id = f"{function}-{param}"


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _rule_at(spec: Spec, where: str, lang: str) -> tuple[Spec, str]:
    """The spec that a variant's path points into, and the field that path reports."""
    node, report = spec, spec.report
    for part in re.findall(r"\[[^\]]*\]|<key>", where):
        inner = node.inner if isinstance(node, Optional) else node
        if isinstance(inner, Either):       # the option this part can go into
            key = part[1:-1]
            inner = next((o for o in inner.options if isinstance(o, Dict) and key.startswith(("'", '"'))
                          and eval(key, {}) in {**o.keys, **o.optional}),  # noqa: S307 - our own repr
                         next((o for o in inner.options if isinstance(o, (List, Dict, Map))), inner))
        if isinstance(inner, List):
            node = inner.item
        elif isinstance(inner, Dict):
            key = eval(part[1:-1], {})  # noqa: S307 - our own repr of a str key
            node = inner.keys.get(key) or inner.optional[key]
        elif isinstance(inner, Map):
            node = inner.key if part == "<key>" else inner.value
        elif isinstance(inner, Tuple):
            node = inner.items[int(part[1:-1])]
        report = node.report or report
    return node, report


def cases(functions: dict[str, Fn], reference=None) -> list[Case]:
    """The generated cases. Each variant is (where, value, expect, field) with ``expect`` one of
    "raise" (outside the domain: ``ValueError`` naming the field), "accept" (inside: no exception)
    or "infeasible" (inside the domain, but the reference rejects the call by a rule of
    ``Fn(infeasible=...)``: the same ``ValueError`` is due). With ``reference``, a valid-side
    variant the reference rejects naming other parameters too, or with another exception, is
    dropped (an infeasible mix of otherwise valid values, or an overflow far from the rule); one it
    rejects naming only this field is kept as "accept", so the reference fails that case and
    ``check`` reports the disagreement."""
    out = []
    for fname, fn in functions.items():
        for pname, spec in fn.params.items():
            if isinstance(spec, Any):
                continue
            base = fn.base_for(pname)
            variants = []
            for where, value in spec.invalid(base[pname]):
                _, report = _rule_at(spec, where, "zh")
                variants.append((where, value, "raise", report or pname))
            for where, value in spec.edges(base[pname]):
                _, report = _rule_at(spec, where, "zh")
                field = report or pname
                expect = "accept"
                if reference is not None:
                    expect = _reference_says(reference, fname, {**base, pname: value}, field,
                                             [p for p in fn.params if p != field], fn.infeasible)
                if expect is not None:
                    variants.append((where, value, expect, field))
            if variants:
                out.append(Case(fname, pname, spec.report or pname, base, variants))
    return out


def _names(message: str, field: str) -> bool:
    return re.search(r"(?<![A-Za-z0-9_])" + re.escape(field) + r"(?![A-Za-z0-9_])", message) is not None


def _reference_says(reference, fname, kwargs, field, others, infeasible) -> str | None:
    import copy
    try:
        getattr(reference, fname)(**copy.deepcopy(kwargs))
    except ValueError as exc:
        message = str(exc)
        if not _names(message, field):
            return None
        if field in infeasible:
            return "infeasible"
        # Blaming this field alone: the reference contradicts the declaration (kept, so it fails).
        # Naming other parameters too: an infeasible combination of valid values (dropped).
        return None if any(_names(message, o) for o in others) else "accept"
    except Exception:  # noqa: BLE001 - overflowing valid input: not this rule's case
        return None
    return "accept"


def spaced(rule: str) -> str:
    """A space before a rule that starts with a symbol or a Latin letter ("应为 > 0 的有限数")."""
    return " " + rule if rule and ord(rule[0]) < 0x2E80 else rule


def rule_for(functions: dict, function: str, field: str, lang: str = "zh") -> str | None:
    """The declared rule of ``function``'s parameter ``field`` (None when not declared)."""
    fn = functions.get(function)
    spec = fn.params.get(field) if fn is not None else None
    if spec is None:
        return None
    text = spec.rule(lang)
    mark = f"`{field}`"
    across = [r for r in (fn.rules_en if lang == "en" else fn.rules) if mark in r]
    if across:
        text += ("; " if lang == "en" else "；") + ("; " if lang == "en" else "；").join(across)
    return spaced(text) if lang != "en" else text


def _leaf(value, where: str):
    """The part of ``value`` that ``where`` (``[0]['key']``...) points at (the whole for a key)."""
    for part in re.findall(r"\[[^\]]*\]|<key>", where):
        try:
            if part == "<key>":
                return value
            index = eval(part[1:-1], {})  # noqa: S307 - our own repr of an index or a str key
            value = value[index]
        except Exception:  # noqa: BLE001 - a replaced container: show it whole
            return value
    return value


def run_case(case: Case, functions: dict[str, Fn], submission) -> None:
    """Every variant in turn; the first that goes wrong raises ``judgekit.Mismatch`` naming the
    field, the rule it breaks (or keeps) and the value passed, never an expected result."""
    from judgekit import Mismatch, call
    fn = call(submission, case.function)
    spec = functions[case.function].params[case.param]
    for where, value, expect, field in case.variants:
        valid = expect == "accept"
        node, _ = _rule_at(spec, where, "zh")
        params = {"field": field, "where": case.param + where, "value": _short(_leaf(value, where)),
                  "rule": spaced(node.rule("zh")), "rule_en": node.rule("en"), "function": case.function}
        kwargs = {**case.base, case.param: value}
        try:
            fn(**kwargs)
        except ValueError as exc:
            if valid:
                raise Mismatch("decl_rejected", **params) from None
            if not _names(str(exc), field):
                raise Mismatch("decl_field", **params) from None
            continue
        except Exception as exc:  # noqa: BLE001 - only the learner's own exception becomes a reason
            if type(exc).__name__ != "SubmissionError":
                raise                 # a dead worker, memory, a bad reply: the judge's usual verdicts
            info = getattr(exc, "info", None) or {}
            if info.get("base") == "NotImplementedError":
                raise                 # an unwritten function says so, not "wrong exception"
            raise Mismatch("decl_crash_valid" if valid else "decl_crash",
                           type=str(info.get("type") or "?"), **params) from None
        if expect == "infeasible":
            raise Mismatch("decl_infeasible", **params)
        if not valid:
            raise Mismatch("decl_no_raise", **params)
