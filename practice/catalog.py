"""Problem discovery: the folders under ``practice/problems`` and their ``problem.md``.

``problem.md`` starts with a front matter block between ``---`` lines, one ``key: value`` per
line (lists as ``[a, b]``), then the statement. The statement holds exactly one fenced block
whose info string is ``json example``: the worked example as data (function, args, kwargs,
expected, rtol). Sections ``## 提示`` (hints) and ``## 解析`` (explanation) follow the statement.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

PROBLEMS_DIR = Path(__file__).resolve().parent / "problems"
REQUIRED_KEYS = ("id", "slug", "title", "title_en", "difficulty", "chapter", "tags", "functions")
DIFFICULTIES = ("简单", "中等", "困难")
DIFFICULTY_EN = {"简单": "easy", "中等": "medium", "困难": "hard"}
# The chapter a problem's ``chapter`` front matter points at (the notebook that teaches it).
CHAPTERS = {
    "01": ("压测、SLO 与容量", "Load testing, SLOs and capacity"),
    "02": ("系统设计", "System design"),
    "03": ("设计题解答 I", "Design answers I"),
    "04": ("设计题解答 II", "Design answers II"),
    "05": ("量化部署", "Quantized deployment"),
    "06": ("前缀缓存与 KV 分层", "Prefix caching and KV tiers"),
    "07": ("PD 分离", "PD disaggregation"),
    "08": ("投机解码", "Speculative decoding"),
    "09": ("并行", "Parallelism"),
    "10": ("长上下文", "Long context"),
    "11": ("进阶专题", "Later topics"),     # every topic after chapter 10
}
HINT_HEADING = "## 提示"
EXPLANATION_HEADING = "## 解析"
DECLARATION_FILE = "declare.py"
# The statement's generated input-check block sits between these two lines (see declkit.render).
DECLARED_BEGIN = "<!-- declared:begin (generated from declare.py; edit declare.py, then run `judge.py declare`) -->"
DECLARED_END = "<!-- declared:end -->"
_FOLDER = re.compile(r"^(\d+)-([a-z0-9][a-z0-9-]*)$")
_EXAMPLE_BLOCK = re.compile(r"^```json example[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)


class FrontMatterError(ValueError):
    pass


def _parse_value(raw: str):
    raw = raw.strip()
    if raw.startswith("[") and raw.endswith("]"):
        inner = raw[1:-1].strip()
        return [_parse_value(x) for x in inner.split(",")] if inner else []
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'":
        return raw[1:-1]
    if re.fullmatch(r"-?\d+", raw):
        return int(raw)
    if re.fullmatch(r"-?\d+\.\d*", raw):
        return float(raw)
    return raw


def parse_front_matter(text: str) -> tuple[dict, str]:
    """Split ``problem.md`` into (front matter dict, body)."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise FrontMatterError("problem.md must start with a '---' line")
    meta: dict = {}
    for i in range(1, len(lines)):
        line = lines[i].strip()
        if line == "---":
            return meta, "".join(lines[i + 1:])
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise FrontMatterError(f"front matter line {i + 1} is not 'key: value': {line!r}")
        meta[key.strip()] = _parse_value(value)
    raise FrontMatterError("front matter has no closing '---' line")


@dataclass
class Problem:
    folder: Path
    meta: dict
    body: str = field(repr=False)

    @property
    def id(self) -> int:
        return int(self.meta["id"])

    @property
    def slug(self) -> str:
        return str(self.meta["slug"])

    @property
    def key(self) -> str:
        return f"{self.id}-{self.slug}"

    @property
    def title(self) -> str:
        return str(self.meta.get("title", ""))

    @property
    def title_en(self) -> str:
        return str(self.meta.get("title_en", ""))

    def display_title(self, lang: str = "zh") -> str:
        return self.title_en if lang == "en" and self.title_en else self.title

    @property
    def chapter(self) -> str:
        """Two digits, e.g. "03" (front matter ``chapter: 03``)."""
        raw = self.meta.get("chapter", "")
        return f"{raw:02d}" if isinstance(raw, int) else str(raw).strip()

    def display_chapter(self, lang: str = "zh") -> str:
        names = CHAPTERS.get(self.chapter)
        if names is None:
            return self.chapter
        return f"{self.chapter} {names[1] if lang == 'en' else names[0]}"

    def display_difficulty(self, lang: str = "zh") -> str:
        d = str(self.meta.get("difficulty", ""))
        return DIFFICULTY_EN.get(d, d) if lang == "en" else d

    @property
    def functions(self) -> list[str]:
        return [str(f) for f in self.meta.get("functions", [])]

    @property
    def time_limit_s(self) -> float:
        return float(self.meta.get("time_limit_s", 5.0))

    @property
    def run_limit_s(self) -> float:
        return float(self.meta.get("run_limit_s", 60.0))

    @property
    def memory_mb(self) -> int:
        return int(self.meta.get("memory_mb", 1024))

    # files
    @property
    def statement_path(self) -> Path:
        return self.folder / "problem.md"

    @property
    def starter_path(self) -> Path:
        return self.folder / "starter.py"

    @property
    def solution_path(self) -> Path:
        return self.folder / "solution.py"

    @property
    def declaration_path(self) -> Path:
        return self.folder / DECLARATION_FILE

    @property
    def example_tests(self) -> Path:
        return self.folder / "test_example.py"

    @property
    def hidden_tests(self) -> Path:
        return self.folder / "test_hidden.py"

    # sections of the body
    def _split(self) -> tuple[str, str, str]:
        body = self.body
        hint_at = body.find(HINT_HEADING)
        expl_at = body.find(EXPLANATION_HEADING)
        end_statement = min([i for i in (hint_at, expl_at) if i >= 0], default=len(body))
        statement = body[:end_statement]
        hint = body[hint_at + len(HINT_HEADING):expl_at if expl_at > hint_at else len(body)] \
            if hint_at >= 0 else ""
        explanation = body[expl_at + len(EXPLANATION_HEADING):] if expl_at >= 0 else ""
        return statement.strip(), hint.strip(), explanation.strip()

    @property
    def statement(self) -> str:
        """The statement as the learner reads it (the generated block's marker lines left out)."""
        text = self._split()[0]
        return "\n".join(line for line in text.split("\n")
                         if line.strip() not in (DECLARED_BEGIN, DECLARED_END))

    @property
    def hint(self) -> str:
        return self._split()[1]

    @property
    def hints(self) -> list[str]:
        """The hint ladder: the ``## 提示`` section's top-level list items, in order (the whole
        section as one hint when it is not a list)."""
        text = self.hint
        if not text:
            return []
        items, current = [], None
        for line in text.splitlines():
            if re.match(r"^(?:[-*]|\d+[.)])\s+", line):
                if current is not None:
                    items.append("\n".join(current).strip())
                current = [re.sub(r"^(?:[-*]|\d+[.)])\s+", "", line)]
            elif current is not None:
                current.append(line.strip())
            elif line.strip():
                current = [line]
        if current is not None:
            items.append("\n".join(current).strip())
        return [i for i in items if i]

    @property
    def explanation(self) -> str:
        return self._split()[2]

    @cached_property
    def example(self) -> dict:
        """The worked example block of the statement, parsed."""
        blocks = _EXAMPLE_BLOCK.findall(self.statement)
        if len(blocks) != 1:
            raise FrontMatterError(f"{self.key}: the statement needs exactly one ```json example block, "
                                   f"found {len(blocks)}")
        return json.loads(blocks[0])


def load_problem(folder: Path) -> Problem:
    text = (folder / "problem.md").read_text(encoding="utf-8")
    meta, body = parse_front_matter(text)
    return Problem(folder, meta, body)


def problem_folders(root: Path = PROBLEMS_DIR) -> list[Path]:
    if not root.is_dir():
        return []
    return sorted((p for p in root.iterdir() if p.is_dir() and _FOLDER.match(p.name)),
                  key=lambda p: int(_FOLDER.match(p.name).group(1)))


def all_problems(root: Path = PROBLEMS_DIR) -> list[Problem]:
    return [load_problem(p) for p in problem_folders(root)]


def find(key: str, root: Path = PROBLEMS_DIR) -> Problem | None:
    """Look a problem up by id (``184``), folder name (``184-deployment-size``) or slug."""
    key = str(key).strip()
    for folder in problem_folders(root):
        number, slug = _FOLDER.match(folder.name).groups()
        if key in (number, folder.name, slug) or (key.isdigit() and int(key) == int(number)):
            return load_problem(folder)
    return None
