"""Learner-facing messages in Simplified Chinese (default) and English (``--lang en``)."""
from __future__ import annotations

LANGS = ("zh", "en")

MESSAGES: dict[str, dict[str, str]] = {
    # verdicts
    "v.pass": {"zh": "通过", "en": "Accepted"},
    "v.wrong": {"zh": "答案错误", "en": "Wrong Answer"},
    "v.error": {"zh": "运行错误", "en": "Runtime Error"},
    "v.timeout": {"zh": "超时", "en": "Time Limit Exceeded"},
    "v.memory": {"zh": "内存超限", "en": "Memory Limit Exceeded"},
    "v.skipped": {"zh": "未运行", "en": "Not Run"},
    "v.cannot": {"zh": "无法评测", "en": "Cannot Judge"},
    # table
    "col.case": {"zh": "用例", "en": "case"},
    "col.verdict": {"zh": "结果", "en": "verdict"},
    "col.time": {"zh": "用时", "en": "time"},
    "col.reason": {"zh": "说明", "en": "reason"},
    "kind.example": {"zh": "示例", "en": "example"},
    "kind.hidden": {"zh": "隐藏", "en": "hidden"},
    "summary": {"zh": "通过 {passed} / {total}", "en": "Passed {passed} / {total}"},
    "first_failure": {"zh": "第一个未通过的示例用例：{case}", "en": "First failing example case: {case}"},
    "inputs": {"zh": "输入", "en": "inputs"},
    "expected": {"zh": "期望", "en": "expected"},
    "got": {"zh": "实际", "en": "got"},
    "output": {"zh": "你的输出（截断到 {n} 字符，共 {total} 字符）", "en": "your output (first {n} of {total} characters)"},
    # wrong answers
    "r.exact": {"zh": "{path} 的值不对", "en": "{path} is wrong"},
    "r.value": {"zh": "{path} 的数值超出允许误差（rtol={rtol:g}, atol={atol:g}）",
                "en": "{path} is outside the tolerance (rtol={rtol:g}, atol={atol:g})"},
    "r.type": {"zh": "{path} 的类型应为 {want}，实际是 {got}", "en": "{path} should be a {want}, got {got}"},
    "r.nan": {"zh": "{path} 是 NaN 或无穷大", "en": "{path} is NaN or infinite"},
    "r.missing_keys": {"zh": "{path} 缺少键：{keys}", "en": "{path} is missing keys: {keys}"},
    "r.extra_keys": {"zh": "{path} 多出了键：{keys}", "en": "{path} has unexpected keys: {keys}"},
    "r.length": {"zh": "{path} 的长度不对（应为 {want}，实际 {got}）",
                 "en": "{path} has the wrong length ({got} instead of {want})"},
    "r.length_hidden": {"zh": "{path} 的长度不对", "en": "{path} has the wrong length"},
    "r.no_raise": {"zh": "应当抛出 ValueError（字段 {field} 不合法），但没有抛出",
                   "en": "should raise ValueError (invalid {field}) but did not"},
    "r.error_field": {"zh": "抛出了 ValueError，但错误信息里没有写出字段名 {field}",
                      "en": "raised ValueError, but its message does not name the field {field}"},
    "r.no_function": {"zh": "你的文件里没有函数 {name}", "en": "your file has no function {name}"},
    "r.return_type": {"zh": "{path} 的类型 {got} 不支持：只能返回数字、字符串、布尔值、None，以及由它们组成的列表、元组、字典",
                      "en": "{path} is a {got}: return only numbers, strings, booleans, None and lists, tuples, dicts of those"},
    "r.assert": {"zh": "结果不符合要求", "en": "the result does not meet the check"},
    # runtime errors
    "r.exception": {"zh": "{type}: {message}", "en": "{type}: {message}"},
    "r.not_implemented": {"zh": "NotImplementedError：还没有实现", "en": "NotImplementedError: not written yet"},
    "r.sys_exit": {"zh": "调用了 sys.exit({exit_code})", "en": "called sys.exit({exit_code})"},
    "r.output_limit": {"zh": "输出太多（超过 64 MB），已停止", "en": "too much output (over 64 MB), stopped"},
    "r.died": {"zh": "进程在这个用例中退出（退出码 {exit_code}，例如调用了 os._exit）",
               "en": "the process exited during this case (exit code {exit_code}, e.g. os._exit)"},
    "r.signal": {"zh": "进程被信号 {signal} 终止", "en": "the process was killed by signal {signal}"},
    "r.signal_memory": {"zh": "进程被信号 {signal} 终止（可能是内存用尽）",
                        "en": "the process was killed by signal {signal} (perhaps out of memory)"},
    "r.memory_total": {"zh": "你的代码（连同它启动的进程）用的内存超过 {limit_mb} MB",
                       "en": "your code (with the processes it started) used more than {limit_mb} MB"},
    "r.bad_reply": {"zh": "你的进程发回了无法识别的结果（例如返回值太大）",
                    "en": "your process sent back something that is not a result (e.g. a value too large)"},
    "r.internal": {"zh": "评测器内部错误", "en": "internal judge error"},
    "r.timeout": {"zh": "运行超过 {limit_s:g} s", "en": "ran longer than {limit_s:g} s"},
    "r.memory": {"zh": "内存超过上限（MemoryError）", "en": "memory over the cap (MemoryError)"},
    "r.run_limit": {"zh": "整次评测超过 {limit_s:g} s，未运行", "en": "the whole run passed {limit_s:g} s; not run"},
    "r.after_crash": {"zh": "前面的用例多次使进程退出，其余用例未运行",
                      "en": "earlier cases kept killing the process; the rest were not run"},
    "r.line": {"zh": "（你的代码第 {line} 行）", "en": " (your code, line {line})"},
    # cannot judge
    "c.syntax": {"zh": "语法错误，第 {line} 行：{message}", "en": "syntax error, line {line}: {message}"},
    "c.syntax_noline": {"zh": "语法错误：{message}", "en": "syntax error: {message}"},
    "c.bad_reply": {"zh": "导入你的文件时，它向评测通道写入了无法识别的数据", "en": "on import, your file wrote garbage on the judge's channel"},
    "c.tampered": {"zh": "评测期间题目或评测器的文件被改动了（已恢复原样），这次评测不算数",
                   "en": "the problem's or the judge's files were changed during the run (restored); this run does not count"},
    "c.internal": {"zh": "评测器没能运行用例（退出码 {exit_code}）", "en": "the judge could not run the cases (exit code {exit_code})"},
    "c.exception": {"zh": "导入你的文件时出错：{type}: {message}", "en": "importing your file failed: {type}: {message}"},
    "c.exit": {"zh": "导入你的文件时调用了 sys.exit({code})", "en": "your file called sys.exit({code}) on import"},
    "c.timeout": {"zh": "导入你的文件超过 {limit_s:g} s", "en": "importing your file took longer than {limit_s:g} s"},
    "c.memory": {"zh": "导入你的文件时内存超限", "en": "importing your file ran out of memory"},
    "c.run_timeout": {"zh": "评测进程超时，还没开始运行用例", "en": "the judge process timed out before any case ran"},
    "c.no_collect": {"zh": "评测进程在运行用例前退出（退出码 {exit_code}，例如导入时调用了 os._exit）",
                     "en": "the judge process exited before any case ran (exit code {exit_code}, e.g. os._exit on import)"},
    "c.unreadable": {"zh": "读不了文件：{message}", "en": "cannot read the file: {message}"},
    "c.no_cases": {"zh": "没有可运行的用例", "en": "no cases to run"},
    "truncated": {"zh": "…（已截断，共 {n} 字符）", "en": "… (cut, {n} characters in all)"},
    "sandbox.unavailable": {
        "zh": "注意：这台机器上没有文件系统隔离（Landlock 不可用：{why}）。你的代码仍在单独的受限进程里运行，"
              "结果仍只由评测器判定，但它能读写你的账户能读写的文件。",
        "en": "Note: no filesystem isolation on this machine (Landlock unavailable: {why}). Your code still runs "
              "in a separate limited process and only the judge decides the verdict, but it can read and write "
              "whatever your account can."},
    # command line
    "cli.bad_option": {"zh": "选项 {option} 的值 {value} 不合法：应为 {allowed}。",
                       "en": "Invalid value {value} for {option}: expected {allowed}."},
    "cli.unknown_problem": {"zh": "没有编号或名字为 {key} 的题目。用 `judge.py list` 查看全部题目。",
                            "en": "No problem with id or name {key}. See `judge.py list`."},
    "cli.started": {"zh": "已创建你的练习文件：{path}\n在这个文件里写代码，然后运行：{cmd}",
                    "en": "Created your practice file: {path}\nWrite your code there, then run: {cmd}"},
    "cli.exists": {"zh": "练习文件已存在，没有覆盖：{path}", "en": "Your practice file already exists (not overwritten): {path}"},
    "cli.no_file": {"zh": "找不到文件：{path}", "en": "File not found: {path}"},
    "cli.judging": {"zh": "评测 {id} {title}\n文件：{path}", "en": "Judging {id} {title}\nfile: {path}"},
    "cli.examples_only": {"zh": "（只运行示例用例）", "en": "(worked example only)"},
    "cli.all_passed": {"zh": "全部通过！可以用 `{cmd}` 查看参考解法与解析。",
                       "en": "All passed! See the reference and explanation with `{cmd}`."},
    "cli.examples_passed": {"zh": "示例通过。去掉 --examples 再运行全部隐藏用例。",
                            "en": "The example passes. Drop --examples to run the hidden cases."},
    "cli.try_hint": {"zh": "需要提示？运行 `{cmd}`。", "en": "Need a hint? Run `{cmd}`."},
    "cli.reset_confirm": {"zh": "这会用初始模板覆盖 {path}（旧文件会备份）。确认请加 --yes。",
                          "en": "This replaces {path} with the starter (the old file is backed up). Add --yes to confirm."},
    "cli.reset_done": {"zh": "已重置：{path}\n旧文件备份在：{backup}", "en": "Reset: {path}\nBackup of the old file: {backup}"},
    "cli.solution_locked": {"zh": "你的文件通过全部用例后才能看参考解法（或者加 --force）。",
                            "en": "The reference is shown once your file passes every case (or add --force)."},
    "cli.no_hint": {"zh": "这道题没有提示。", "en": "This problem has no hints."},
    "cli.hint_item": {"zh": "提示 {i}/{n}：{text}", "en": "Hint {i}/{n}: {text}"},
    "cli.hint_more": {"zh": "还想要下一条提示，再运行一次：{cmd}", "en": "For the next hint, run again: {cmd}"},
    "cli.status.solved": {"zh": "已通过", "en": "solved"},
    "cli.status.tried": {"zh": "尝试过", "en": "tried"},
    "cli.status.new": {"zh": "未开始", "en": "new"},
    "cli.progress": {"zh": "已通过 {solved} / {total} 题，尝试过 {tried} 题。",
                     "en": "Solved {solved} of {total}; tried {tried}."},
    "cli.chapter": {"zh": "章节 {chapter}", "en": "Chapter {chapter}"},
    "cli.progress_chapter": {"zh": "  章节 {chapter}：已通过 {solved} / {total}，尝试过 {tried}",
                             "en": "  Chapter {chapter}: solved {solved} of {total}, tried {tried}"},
    "cli.progress_next": {"zh": "下一题：{id} {title}（`{cmd}`）", "en": "Next: {id} {title} (`{cmd}`)"},
    "cli.edit_here": {"zh": "在这里写代码：{path}", "en": "Edit here: {path}"},
    "cli.check_ok": {"zh": "检查通过：{n} 道题", "en": "check passed: {n} problems"},
    "cli.check_fail": {"zh": "检查失败：{n} 个问题", "en": "check failed: {n} problems found"},
    "cli.progress_reset": {"zh": "进度文件损坏，已另存为 {path} 并重建。",
                           "en": "The progress file was corrupt; kept it as {path} and started afresh."},
}


def t(message: str, lang: str = "zh", /, **params) -> str:
    """The message ``message`` in ``lang``, formatted with ``params``."""
    entry = MESSAGES.get(message)
    if entry is None:
        return message
    template = entry.get(lang) or entry["zh"]
    try:
        return template.format(**params)
    except (KeyError, ValueError, IndexError):
        return template
