"""The practice problems a chapter prepares for, read from ``practice.catalog`` (each problem's
front matter names its chapter), so a notebook's closing list cannot drift from the practice set.

    from course import practice_links
    print(practice_links.practice_list("01"))
"""

from __future__ import annotations


def chapter_problems(chapter: str):
    """The problems whose front matter says ``chapter`` (two digits, e.g. "02"), by id."""
    from practice import catalog
    return sorted((p for p in catalog.all_problems() if p.chapter == chapter), key=lambda p: p.id)


def practice_list(chapter: str) -> str:
    """One line per problem: id, difficulty, title; then how to start one with the judge."""
    problems = chapter_problems(chapter)
    if not problems:
        return f"chapter {chapter}: no practice problems yet"
    lines = [f"{p.id:4}  {p.display_difficulty():2}  {p.title}" for p in problems]
    lines.append(f"start one: python practice/judge.py start {problems[0].id}"
                 f"  (list all: python practice/judge.py list)")
    return "\n".join(lines)
