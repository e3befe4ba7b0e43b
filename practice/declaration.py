"""A problem's ``declare.py`` on the maintainer side: load it, render the statement's generated
input-check block, write that block (``judge.py declare``), and find every way the declaration,
the statement and the reference disagree (``judge.py check``).

The specs themselves live in ``sandbox/declkit.py`` because the judge's trusted process uses them
too (it generates the invalid-input cases from the same declaration).
"""
from __future__ import annotations

import ast
import importlib.util
import re
import sys

from . import catalog
from .runner import SANDBOX

INPUT_CHECK_HEADING = re.compile(r"^(#{2,4})[ \t]*输入检查[ \t]*$", re.M)


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def kit():
    """``declkit`` (and the ``judgekit`` it imports), under the names ``declare.py`` imports."""
    if "judgekit" not in sys.modules:
        _load(SANDBOX / "judgekit.py", "judgekit")
    module = sys.modules.get("declkit")
    if module is None or getattr(module, "__file__", None) != str(SANDBOX / "declkit.py"):
        module = _load(SANDBOX / "declkit.py", "declkit")
    return module


def load(problem: catalog.Problem) -> dict:
    """``FUNCTIONS`` of the problem's ``declare.py`` (raises on a broken file)."""
    kit()
    module = _load(problem.declaration_path, f"_declare_{problem.id}")
    functions = getattr(module, "FUNCTIONS", None)
    if not isinstance(functions, dict):
        raise ValueError("declare.py has no FUNCTIONS dict")
    return functions


def signatures(problem: catalog.Problem) -> dict[str, tuple[str, list[str]]]:
    """name -> (the reference's argument list as written, its parameter names in order)."""
    tree = ast.parse(problem.solution_path.read_text(encoding="utf-8"))
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            a = node.args
            out[node.name] = (ast.unparse(a), [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs])
    return out


def render(problem: catalog.Problem, functions: dict | None = None, lang: str = "zh") -> str:
    functions = load(problem) if functions is None else functions
    sigs = {name: text for name, (text, _) in signatures(problem).items()}
    return kit().render(functions, sigs, problem.id, lang)


def _section_span(text: str) -> tuple[int, int] | None:
    """(start, end) of the input-check section's body in the whole problem.md text."""
    m = INPUT_CHECK_HEADING.search(text)
    if m is None:
        return None
    level = len(m.group(1))
    end = re.compile(r"^#{1,%d}\s" % level, re.M).search(text, m.end())
    return m.end(), end.start() if end else len(text)


def stated_block(text: str) -> str | None:
    """What problem.md has between the two marker lines, or None without them."""
    begin, end = text.find(catalog.DECLARED_BEGIN), text.find(catalog.DECLARED_END)
    if begin < 0 or end < begin:
        return None
    return text[begin + len(catalog.DECLARED_BEGIN):end].strip("\n") + "\n"


def write(problem: catalog.Problem) -> bool:
    """Put the rendered block into problem.md; True if the file changed. Between existing markers
    only the block is replaced; without markers the whole input-check section's body is (its
    hand-written cross-field rules belong in ``Fn(rules=[...])``)."""
    path = problem.statement_path
    text = path.read_text(encoding="utf-8")
    block = catalog.DECLARED_BEGIN + "\n" + render(problem) + catalog.DECLARED_END
    begin, end = text.find(catalog.DECLARED_BEGIN), text.find(catalog.DECLARED_END)
    if begin >= 0 and end > begin:
        new = text[:begin] + block + text[end + len(catalog.DECLARED_END):]
    else:
        span = _section_span(text)
        if span is None:
            raise ValueError(f"{problem.key}: problem.md has no '### 输入检查' section to write into")
        new = text[:span[0]] + "\n\n" + block + "\n\n" + text[span[1]:].lstrip("\n")
    if new != text:
        path.write_text(new, encoding="utf-8")
        return True
    return False


def _walk_examples(spec, value, where, out):
    """Containers whose example is empty, so that their items' rules would generate no case."""
    k = kit()
    inner = spec.inner if isinstance(spec, k.Optional) else spec
    if isinstance(inner, k.List) and not isinstance(inner.item, k.Any):
        if isinstance(value, (list, tuple)):
            if not value:
                out.append(where)
            else:
                _walk_examples(inner.item, value[0], f"{where}[0]", out)
    elif isinstance(inner, k.Dict) and isinstance(value, dict):
        for key, sub in list(inner.keys.items()) + list(inner.optional.items()):
            if key in value:
                _walk_examples(sub, value[key], f"{where}[{key!r}]", out)


def issues(problem: catalog.Problem) -> list[str]:
    """Every disagreement between declare.py, the statement and the reference."""
    p = problem.key
    try:
        functions = load(problem)
    except Exception as exc:  # noqa: BLE001
        return [f"{p}: declare.py cannot be loaded: {type(exc).__name__}: {exc}"]
    k = kit()
    out = []
    if list(functions) != problem.functions:
        out.append(f"{p}: declare.py declares {list(functions)}, the front matter lists {problem.functions}")
    sigs = signatures(problem)
    try:
        ref = _load(problem.solution_path, f"_declref_{problem.id}")
    except Exception as exc:  # noqa: BLE001
        return out + [f"{p}: the reference does not import: {type(exc).__name__}: {exc}"]
    for name, fn in functions.items():
        if not isinstance(fn, k.Fn):
            out.append(f"{p}: FUNCTIONS[{name!r}] is not an Fn(...)")
            continue
        if name not in sigs:
            out.append(f"{p}: declare.py declares {name}(), which solution.py does not define")
            continue
        names = sigs[name][1]
        if list(fn.params) != names:
            out.append(f"{p}: {name}(): declare.py's parameters {list(fn.params)} differ from the "
                       f"reference's {names} (same names, same order)")
            continue
        calls = [fn.example] + fn.also
        if any(set(c) != set(names) for c in calls):
            bad = next(c for c in calls if set(c) != set(names))
            out.append(f"{p}: {name}(): every declared example must give every parameter by name "
                       f"(missing {sorted(set(names) - set(bad))}, extra {sorted(set(bad) - set(names))})")
            continue
        for pname, spec in fn.params.items():
            for call in calls:
                if fn.applies(pname, call) and not spec.conforms(call[pname]):
                    out.append(f"{p}: {name}(): a declared example's {pname}={call[pname]!r} breaks its own rule")
            empty = []
            _walk_examples(spec, fn.base_for(pname)[pname], pname, empty)
            out += [f"{p}: {name}(): the declared example's {w} is empty, so its items' rules generate no case"
                    for w in empty]
        for pname in fn.when:
            if pname not in fn.params:
                out.append(f"{p}: {name}(): when= names {pname!r}, not a parameter")
        for call in calls:
            try:
                got = getattr(ref, name)(**call)
            except Exception as exc:  # noqa: BLE001
                out.append(f"{p}: {name}(): the reference fails on a declared example: {type(exc).__name__}: {exc}")
                continue
            if not fn.returns.conforms(got):
                out.append(f"{p}: {name}(): the reference's result on a declared example does not match the "
                           f"declared return type ({fn.returns.rule('en')})")
    out += _statement_issues(problem, functions)
    return out


def _statement_issues(problem: catalog.Problem, functions: dict) -> list[str]:
    p = problem.key
    out = []
    text = problem.statement_path.read_text(encoding="utf-8")
    stated = stated_block(text)
    try:
        rendered = render(problem, functions)
    except Exception as exc:  # noqa: BLE001
        return [f"{p}: the declaration cannot be rendered: {type(exc).__name__}: {exc}"]
    if stated is None:
        out.append(f"{p}: problem.md has no generated input-check block (run `judge.py declare {problem.id}`)")
    elif stated != rendered:
        out.append(f"{p}: problem.md's input-check block differs from declare.py "
                   f"(run `judge.py declare {problem.id}`)")
    else:
        span = _section_span(text)
        begin = text.find(catalog.DECLARED_BEGIN)
        if span is None or not span[0] <= begin < span[1]:
            out.append(f"{p}: the generated block is not inside the '### 输入检查' section")
    for name, fn in functions.items():
        want = fn.returns.type_name()
        for m in re.finditer(r"`" + re.escape(name) + r"\((?:[^`]*?)\)\s*->\s*([^`]+)`", problem.statement):
            if m.group(1).strip() != want:
                out.append(f"{p}: the statement gives {name}() -> {m.group(1).strip()}, declare.py -> {want}")
    return out
