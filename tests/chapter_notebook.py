"""What the chapter tests read from an executed notebook, in one place (tests/test_chNN.py import it).

Each chapter is committed executed (``notebooks/run_notebooks.py``); these helpers read its stored
outputs: the code cells, their printed text, the Chinese prose, and the checks every chapter makes
(cells ran in order without errors or stderr, one saved panel with the "run it first" note before it).
"""

from __future__ import annotations

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
RUN_FIRST = "运行下面这个单元之后才会响应"      # the sentence before every panel cell


def code_cells(nb) -> list:
    return [c for c in nb.cells if c.cell_type == "code"]


def stdout(nb) -> str:
    """Everything the code cells printed (stdout streams), in order."""
    return "".join(o.get("text", "") for c in code_cells(nb) for o in c.outputs if o.output_type == "stream")


def prose(nb) -> str:
    return "".join(c.source for c in nb.cells if c.cell_type == "markdown")


def han_chars(nb) -> int:
    """Chinese characters in the prose (how much of the chapter is written, not generated)."""
    return sum("\u4e00" <= ch <= "\u9fff" for ch in prose(nb))


def checked_cells(nb) -> list:
    return [c for c in code_cells(nb) if "nbval-check-output" in c.metadata.get("tags", [])]


def figures(nb) -> int:
    """Code-cell outputs that are images (matplotlib figures)."""
    return sum("image/png" in o.get("data", {}) for c in code_cells(nb) for o in c.outputs)


def assert_ran_in_order(nb) -> None:
    """Execution counts 1..N, every cell with output, no error and nothing on stderr."""
    cells = code_cells(nb)
    assert [c.execution_count for c in cells] == list(range(1, len(cells) + 1))
    for i, c in enumerate(cells):
        kinds = [o.output_type for o in c.outputs]
        assert c.outputs and "error" not in kinds, f"code cell {i}"
        assert not any(o.output_type == "stream" and o.name == "stderr" for o in c.outputs), f"code cell {i}"


def assert_saved_one_panel(nb, call: str) -> dict:
    """One widget view, saved in the notebook's widget state, from the cell that runs ``call``, with
    the "run it first" sentence in the cell before. Returns the saved widget state."""
    views = [o.data[WIDGET_VIEW]["model_id"] for c in code_cells(nb) for o in c.outputs
             if WIDGET_VIEW in o.get("data", {})]
    assert len(views) == 1
    state = nb.metadata["widgets"][WIDGET_STATE]["state"]
    assert views[0] in state
    i = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and call in c.source)
    assert RUN_FIRST in nb.cells[i - 1].source
    return state


def has_svg_chart(state: dict) -> bool:
    return any(m["model_name"] == "HTMLModel" and "</svg>" in m["state"].get("value", "") for m in state.values())
