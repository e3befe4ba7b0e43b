"""Case results, the report of one judging run, and how they are printed (text or HTML)."""
from __future__ import annotations

import html
import json
import unicodedata
from dataclasses import dataclass, field

from .i18n import t

VERDICTS = ("pass", "wrong", "error", "timeout", "memory", "skipped")


@dataclass
class CaseResult:
    case: str                 # pytest node id, e.g. "test_hidden.py::test_tpot_bound"
    verdict: str              # one of VERDICTS
    reason: dict = field(default_factory=dict)
    time_s: float = 0.0
    output: str = ""
    output_chars: int = 0
    details: dict | None = None

    @classmethod
    def from_record(cls, rec: dict) -> "CaseResult":
        verdict = rec.get("verdict")
        if verdict not in VERDICTS:
            verdict = "error"
        reason = rec.get("reason") if isinstance(rec.get("reason"), dict) else {}
        try:
            time_s = float(rec.get("time_s") or 0.0)
        except (TypeError, ValueError):
            time_s = 0.0
        return cls(str(rec.get("case")), verdict, reason, time_s, str(rec.get("output") or ""),
                   int(rec.get("output_chars") or 0),
                   rec.get("details") if isinstance(rec.get("details"), dict) else None)

    @property
    def is_example(self) -> bool:
        return self.case.split("::")[0].endswith("test_example.py")

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    def name(self, lang: str = "zh") -> str:
        func = self.case.split("::")[-1]
        if func.startswith("test_"):
            func = func[5:]
        kind = t("kind.example" if self.is_example else "kind.hidden", lang)
        return f"{kind} {func}"


@dataclass
class Report:
    cases: list[CaseResult]
    elapsed_s: float = 0.0
    cannot: dict | None = None    # set when the file could not be judged at all
    sandbox: dict | None = None   # {"landlock": "abi<N>" or why not, "reason": ...}
    interrupted: bool = False     # stopped by Ctrl-C: the cases judged before it, the rest "skipped"

    @classmethod
    def cannot_judge(cls, info: dict, elapsed_s: float = 0.0, sandbox: dict | None = None) -> "Report":
        return cls([], elapsed_s, info, sandbox)

    @property
    def isolated(self) -> bool | None:
        """True when the worker ran under Landlock, False when not, None when no worker ran."""
        if not self.sandbox:
            return None
        return str(self.sandbox.get("landlock", "")).startswith("abi")

    @property
    def passed(self) -> int:
        return sum(c.passed for c in self.cases)

    @property
    def total(self) -> int:
        return len(self.cases)

    @property
    def accepted(self) -> bool:
        return self.cannot is None and not self.interrupted and self.total > 0 and self.passed == self.total

    def first_failure(self) -> CaseResult | None:
        return next((c for c in self.cases if not c.passed), None)

    def verdict_key(self) -> str:
        if self.cannot is not None:
            return "cannot"
        failure = self.first_failure()
        return "pass" if failure is None else failure.verdict


_ESCAPE_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Zl", "Zp"}
TEXT_LIMIT = 300


def clean(text, limit: int = TEXT_LIMIT, lang: str = "zh") -> str:
    """Learner text made safe to print: control, format and surrogate characters escaped (so no
    output can move the cursor, colour the terminal or start a fake line), cut with a marker."""
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    total = len(text)
    if total > limit:
        text = text[:limit]
    out = []
    for ch in text:
        if unicodedata.category(ch) in _ESCAPE_CATEGORIES:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else
                       (f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"))
        else:
            out.append(ch)
    text = "".join(out)
    if total > limit:
        text += t("truncated", lang, n=total)
    return text


_LEARNER_FIELDS = ("message", "type", "exit_code", "code", "got", "path", "name", "keys", "text")


def reason_text(case: CaseResult, lang: str = "zh") -> str:
    r = dict(case.reason)
    for key in _LEARNER_FIELDS:
        if key in r and not isinstance(r[key], (int, float)):
            r[key] = clean(r[key], lang=lang)
    code = r.get("code", "")
    if case.verdict == "pass":
        return ""
    if code == "length" and not case.is_example:
        code = "length_hidden"
    if code == "signal" and r.get("maybe_memory"):
        code = "signal_memory"
    if code in ("exception",) and r.get("message") in (None, ""):
        r["message"] = ""
    text = t("r." + code, lang, **r) if code else t("r.internal", lang)
    if r.get("line"):
        text += t("r.line", lang, line=r["line"])
    return text


def cannot_text(info: dict, lang: str = "zh") -> str:
    kind = info.get("kind", "no_collect")
    params = {k: (v if isinstance(v, (int, float)) and not isinstance(v, bool) else clean(v, lang=lang))
              for k, v in info.items() if k not in ("kind", "log")}
    if kind == "syntax" and not info.get("line"):
        kind = "syntax_noline"
    text = t("c." + kind, lang, **params)
    if kind == "exception" and info.get("line"):
        text += t("r.line", lang, line=info["line"])
    if kind == "syntax" and info.get("text"):
        text += "\n    " + clean(info["text"], lang=lang)
    return text


def sandbox_notice(report: "Report", lang: str = "zh") -> str | None:
    """The one-line notice when the worker ran without filesystem isolation (else None)."""
    if report.isolated is not False:
        return None
    why = report.sandbox.get("reason") or report.sandbox.get("landlock") or "?"
    return t("sandbox.unavailable", lang, why=clean(why, 80))


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _pad(text: str, width: int) -> str:
    return text + " " * max(0, width - _width(text))


def _fmt_time(seconds: float) -> str:
    return "<1 ms" if seconds < 0.0005 else (f"{seconds * 1e3:.0f} ms" if seconds < 10 else f"{seconds:.1f} s")


def _pretty(value) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=2)
    except (TypeError, ValueError):
        return repr(value)


def _block(value) -> str:
    return "\n  ".join(clean(ln, 2000) for ln in _pretty(value).split("\n")[:60])


def output_lines(output: str, lang: str = "zh", max_lines: int = 20) -> list[str]:
    """The learner's printed text as quoted lines ("    | ..."), escaped and cut."""
    text = output[:800]
    lines = text.split("\n")
    shown = ["    | " + clean(ln, 200, lang) for ln in lines[:max_lines]]
    if len(lines) > max_lines or len(output) > 800:
        shown.append("    | " + t("truncated", lang, n=len(output)))
    return shown


def call_text(inputs: dict) -> str:
    """Render {"function", "args", "kwargs"} as a Python call."""
    parts = [repr(a) for a in inputs.get("args", [])]
    parts += [f"{k}={v!r}" for k, v in inputs.get("kwargs", {}).items()]
    return f"{inputs.get('function', '?')}({', '.join(parts)})"


def render_text(report: Report, lang: str = "zh") -> str:
    if report.cannot is not None:
        return f"{t('v.cannot', lang)}：{cannot_text(report.cannot, lang)}" if lang == "zh" else \
            f"{t('v.cannot', lang)}: {cannot_text(report.cannot, lang)}"
    rows = [(c.name(lang), t("v." + c.verdict, lang), _fmt_time(c.time_s), reason_text(c, lang))
            for c in report.cases]
    head = (t("col.case", lang), t("col.verdict", lang), t("col.time", lang), t("col.reason", lang))
    widths = [max(_width(r[i]) for r in rows + [head]) for i in range(3)]
    lines = ["  ".join(_pad(head[i], widths[i]) for i in range(3)) + "  " + head[3]]
    lines.append("-" * (sum(widths) + 6 + 8))
    for row in rows:
        lines.append(("  ".join(_pad(row[i], widths[i]) for i in range(3)) + "  " + row[3]).rstrip())
    lines.append("")
    first = next((c for c in report.cases if not c.passed and c.is_example), None)
    if first is not None:
        lines.append(t("first_failure", lang, case=first.name(lang)))
        details = first.details or {}
        if "inputs" in details:
            lines.append(f"  {t('inputs', lang)}: {call_text(details['inputs'])}")
        if "expected" in details:
            lines.append(f"  {t('expected', lang)}: " + _block(details["expected"]))
        if "got" in details:
            lines.append(f"  {t('got', lang)}: " + _block(details["got"]))
        lines.append(f"  {t('col.reason', lang)}: {reason_text(first, lang)}")
        if first.output:
            lines.append("  " + t("output", lang, n=len(first.output), total=first.output_chars))
            lines.extend(output_lines(first.output, lang))
        lines.append("")
    closing = _closing_lines(report, lang)
    if closing and not report.interrupted:
        lines.append(closing[0])          # which cases ran out of time, before the summary
        closing = []
    elif report.interrupted and len(closing) > 1:
        lines.append(closing.pop(0))
    lines.append(t("summary", lang, passed=report.passed, total=report.total))
    lines.extend(closing)
    return "\n".join(lines)


_COLORS = {"pass": "#1a7f37", "wrong": "#cf222e", "error": "#bc4c00", "timeout": "#8250df",
           "memory": "#8250df", "skipped": "#6e7781"}


def render_html(report: Report, lang: str = "zh") -> str:
    esc = html.escape
    if report.cannot is not None:
        return (f"<div><b style='color:#cf222e'>{esc(t('v.cannot', lang))}</b>: "
                f"<pre>{esc(cannot_text(report.cannot, lang))}</pre></div>")
    head = "".join(f"<th style='text-align:left'>{esc(t(k, lang))}</th>"
                   for k in ("col.case", "col.verdict", "col.time", "col.reason"))
    body = []
    for c in report.cases:
        color = _COLORS.get(c.verdict, "#000")
        body.append(f"<tr><td><code>{esc(c.name(lang))}</code></td>"
                    f"<td style='color:{color};font-weight:bold'>{esc(t('v.' + c.verdict, lang))}</td>"
                    f"<td>{esc(_fmt_time(c.time_s))}</td><td>{esc(reason_text(c, lang))}</td></tr>")
    extra = ""
    first = next((c for c in report.cases if not c.passed and c.is_example), None)
    if first is not None and first.details:
        d = first.details
        parts = []
        if "inputs" in d:
            parts.append(f"{t('inputs', lang)}: {call_text(d['inputs'])}")
        if "expected" in d:
            parts.append(f"{t('expected', lang)}: {_block(d['expected'])}")
        if "got" in d:
            parts.append(f"{t('got', lang)}: {_block(d['got'])}")
        extra = (f"<p>{esc(t('first_failure', lang, case=first.name(lang)))}</p>"
                 f"<pre>{esc(chr(10).join(parts))}</pre>")
    summary = esc(t("summary", lang, passed=report.passed, total=report.total))
    color = "#1a7f37" if report.accepted else "#cf222e"
    notes = "".join(f"<p>{esc(line)}</p>" for line in _closing_lines(report, lang))
    return (f"<table>{'<tr>' + head + '</tr>'}{''.join(body)}</table>{extra}"
            f"<p style='font-weight:bold;color:{color}'>{summary}</p>{notes}")


def _closing_lines(report: Report, lang: str) -> list[str]:
    """The lines after the summary: which cases ran out of time, and an interruption."""
    lines = []
    timed_out = [c.name(lang) for c in report.cases if c.verdict == "timeout" and c.reason.get("code") != "timeout_hung"]
    hung = [c for c in report.cases if c.reason.get("code") == "timeout_hung"]
    if timed_out or hung:
        names = ", ".join(sorted({clean(c.reason.get("name"), 60) for c in hung}))
        lines.append(t("timeouts", lang, cases=", ".join(timed_out) or "-")
                     + (t("timeouts_hung", lang, n=len(hung), names=names) if hung else ""))
    if report.interrupted:
        lines.append(t("interrupted", lang))
    return lines
