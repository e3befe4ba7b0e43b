"""A problem's ``declare.py`` on the maintainer side: load it, render the statement's generated
input-check block, write that block (``judge.py declare``), and find every way the declaration,
the statement and the reference disagree (``judge.py check``).

The specs themselves live in ``sandbox/declkit.py`` because the judge's trusted process uses them
too (it generates the invalid-input cases from the same declaration).
"""
from __future__ import annotations

import ast
import importlib.util
import json
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
    return render_block(functions, sigs, problem.id, lang)


# --- the statement's block ------------------------------------------------------------------

HEADER = {
    "zh": ("下面由 `declare.py` 生成（改 `declare.py` 后运行 `python practice/judge.py declare {id}`）。"
           "不合法时抛 `ValueError`，信息里写出字段名。整数指 `int`（布尔值和 `2.0` 都不算）；"
           "数指 `int` 或 `float`（布尔值不算），没写“可以是 inf”的都必须有限（NaN、±inf 不合法）；"
           "列表里的一项或字典里的一个键有问题，报它所在的参数。"),
    "en": ("Generated from `declare.py`. Invalid input raises `ValueError` naming the field. An integer is "
           "an `int` (not a bool, not `2.0`); a number is an `int` or `float` (not a bool) and finite unless "
           "it says inf is allowed; a bad item or key is reported under the argument that holds it."),
}


def _notes(lang: str, *specs) -> str:
    """The specs' notes, joined after a rule (each starts with ；/; )."""
    sep = "; " if lang == "en" else "；"
    return "".join(sep + n for n in ((sp.note_en if lang == "en" else sp.note) for sp in specs) if n)


def _list_head(spec, lang: str) -> str:
    """"非空的列表" of a List's phrase, without its item part."""
    return spec.phrase(lang).split("，每项是")[0].split(", each item")[0]


def _bullet(name: str, spec, lang: str, indent: str, report: str | None, when: dict | None) -> list[str]:
    """One parameter (or key) as a bullet; a container of dicts or named tuples gets an indented
    bullet per key or position."""
    k = kit()
    sep = ": " if lang == "en" else "："
    cond = tail = ""
    if when:
        parts = ", ".join(f"`{key}` is `{json.dumps(value)}`" for key, value in when.items())
        cond = f" (checked only when {parts})" if lang == "en" else f"（仅当 {parts.replace(' is ', ' 为 ')} 时检查）"
    if spec.report and spec.report != report:
        tail = f" (reported as `{spec.report}`)" if lang == "en" else f"（报 `{spec.report}`）"
    inner = spec.inner if isinstance(spec, k.Optional) else spec
    item = inner.item if isinstance(inner, k.List) else None
    each = ", each item " if lang == "en" else "，每项是"
    sub_report = spec.report or report
    if isinstance(item, k.Either) and all(isinstance(o, k.Dict) for o in item.options):
        head = _list_head(inner, lang) + (", each item one of these dicts" if lang == "en" else "，每项是下面几种字典之一")
        lines = [f"{indent}- `{name}`{sep}{head}{cond}{tail}{_notes(lang, spec)}"]
        for option in item.options:
            lines.append(f"{indent}  - {option.rule(lang)}")
            for key, sub in list(option.keys.items()) + list(option.optional.items()):
                lines += _bullet(key, sub, lang, indent + "    ", sub_report, None)
        return lines
    if isinstance(item, k.Tuple) and item.names:
        lines = [f"{indent}- `{name}`{sep}{_list_head(inner, lang)}{each}{item.phrase(lang)}{cond}{tail}"
                 f"{_notes(lang, spec, item)}"]
        for key, sub in zip(item.names, item.items):
            lines += _bullet(key, sub, lang, indent + "  ", sub_report, None)
        return lines
    if isinstance(inner, k.Dict) or isinstance(item, k.Dict):
        d = inner if isinstance(inner, k.Dict) else item
        head = d.phrase(lang) if d is inner else _list_head(inner, lang) + each + d.phrase(lang)
        if isinstance(spec, k.Optional):
            head = ("None or " if lang == "en" else "None 或") + head
        owners = [s for s in dict.fromkeys([inner, spec, d]) if s is not None]
        lines = [f"{indent}- `{name}`{sep}{head}{cond}{tail}{_notes(lang, *owners)}"]
        for key, sub in list(d.keys.items()) + list(d.optional.items()):
            lines += _bullet(key, sub, lang, indent + "  ", sub_report, None)
        return lines
    return [f"{indent}- `{name}`{sep}{spec.rule(lang)}{cond}{tail}"]


def render_block(functions: dict, signatures: dict[str, str], problem_id, lang: str = "zh") -> str:
    """The ``### 输入检查`` block: one paragraph per function, one bullet per parameter (nested keys
    indented); a parameter declared exactly as in an earlier function says so."""
    out = [HEADER[lang].format(id=problem_id), ""]
    seen: list[tuple] = []
    for name, fn in functions.items():
        out.append(f"`{name}({signatures.get(name, ', '.join(fn.params))}) -> {fn.returns.type_name()}`")
        out.append("")
        for pname, spec in fn.params.items():
            earlier = next((f for f, p, s in seen if p == pname and s.same(spec)), None)
            when = fn.when.get(pname)
            if earlier is not None and not when:
                out.append(f"- `{pname}`: as in `{earlier}`" if lang == "en" else f"- `{pname}`：同 `{earlier}`")
            else:
                out += _bullet(pname, spec, lang, "", pname, when)
            seen.append((name, pname, spec))
        for rule in (fn.rules_en if lang == "en" else fn.rules):
            out.append(f"- {rule}")
        out.append("")
    return "\n".join(out).rstrip() + "\n"



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
