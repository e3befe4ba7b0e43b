"""The committed notebooks: executed in order from a fresh kernel, with no errors, widget state
saved, and chapter 02 showing the chapter's three lines. (`make test` also reruns them under nbval;
these checks read the stored files only. Re-execute with `python notebooks/run_notebooks.py`.)"""

import json
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
CHAPTERS = ["01-load-testing.ipynb", "02-system-design.ipynb", "03-design-answers-1.ipynb"]
EXAMPLE = Path(__file__).resolve().parent / "data" / "chapter_example.py"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
THREE_LINES = (
    "低负载：TTFT 48 ms，TPOT 4.3 ms\n"
    "单实例满足 SLO 的最大速率约 16.8 req/s；200 QPS 需要 12 个实例，加 30% 余量为 16 个（128 张 H100）\n"
    "按每卡每小时 $2.5 计：每小时 $320，约合每百万输出 token $0.89\n"
)


def load(name):
    return nbformat.read(NOTEBOOKS / name, as_version=4)


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def stdout(cell):
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream" and o.name == "stdout")


@pytest.mark.parametrize("name", CHAPTERS)
def test_outputs_come_from_one_in_order_run(name):
    counts = [c.execution_count for c in code_cells(load(name))]
    assert counts == list(range(1, len(counts) + 1)), \
        f"{name}: execution counts {counts}; rerun `python notebooks/run_notebooks.py`"
    for cell in code_cells(load(name)):
        for out in cell.outputs:
            if "execution_count" in out:
                assert out["execution_count"] == cell.execution_count


@pytest.mark.parametrize("name", CHAPTERS)
def test_no_errors_and_every_cell_has_output(name):
    for i, cell in enumerate(code_cells(load(name))):
        kinds = [o.output_type for o in cell.outputs]
        assert "error" not in kinds, f"{name} code cell {i} stored an error"
        assert not any(o.output_type == "stream" and o.name == "stderr" for o in cell.outputs), \
            f"{name} code cell {i} wrote to stderr (a warning?)"
        assert cell.outputs, f"{name} code cell {i} has no output: every cell should show one thing"


@pytest.mark.parametrize("name", CHAPTERS)
def test_widget_state_is_saved_for_every_widget_shown(name):
    nb = load(name)
    views = [o.data[WIDGET_VIEW]["model_id"] for c in code_cells(nb) for o in c.outputs
             if o.output_type in ("display_data", "execute_result") and WIDGET_VIEW in o.get("data", {})]
    assert views, f"{name} shows no widget"
    state = nb.metadata["widgets"][WIDGET_STATE]["state"]
    for model_id in views:
        assert model_id in state, f"{name}: no saved state for widget {model_id}"
    charts = [m for m in state.values() if m["model_name"] == "HTMLModel"
              and m["state"].get("value", "").startswith("<svg")]
    assert charts, "the panel's chart (SVG in an HTML widget) was not saved"
    assert all("</svg>" in m["state"]["value"] for m in charts)


@pytest.mark.parametrize("name", CHAPTERS)
def test_checked_cells_are_tagged_for_nbval(name):
    checked = [c for c in code_cells(load(name)) if "nbval-check-output" in c.metadata.get("tags", [])]
    assert len(checked) >= 3
    for cell in checked:
        assert stdout(cell), "a checked cell must print something deterministic"
        assert not any(WIDGET_VIEW in o.get("data", {}) or "image/png" in o.get("data", {}) for o in cell.outputs)


def test_chapter_02_prints_the_three_lines_from_the_chapter_code_unchanged():
    cells = [c for c in code_cells(load("02-system-design.ipynb")) if "Setup(params=70.6e9" in c.source]
    assert len(cells) == 1
    cell = cells[0]
    assert cell.source.strip() == EXAMPLE.read_text(encoding="utf-8").split("\n", 1)[1].strip()
    assert stdout(cell) == THREE_LINES
    assert "nbval-check-output" in cell.metadata.get("tags", [])


@pytest.mark.parametrize("name", CHAPTERS)
def test_prose_is_chinese(name):
    md = "".join(c.source for c in load(name).cells if c.cell_type == "markdown")
    han = sum("\u4e00" <= ch <= "\u9fff" for ch in md)
    assert han > 1500, f"{name}: only {han} Chinese characters of prose"


@pytest.mark.parametrize("name", CHAPTERS)
def test_each_panel_says_the_sliders_come_alive_once_the_cell_runs(name):
    cells = load(name).cells
    for i, cell in enumerate(cells):
        if cell.cell_type == "code" and "panel()" in cell.source:
            assert cells[i - 1].cell_type == "markdown" and "运行下面这个单元之后才会响应" in cells[i - 1].source


def test_notebooks_are_valid_json_with_python3_kernel():
    for name in CHAPTERS:
        nb = json.loads((NOTEBOOKS / name).read_text(encoding="utf-8"))
        assert nb["metadata"]["kernelspec"]["name"] == "python3"
