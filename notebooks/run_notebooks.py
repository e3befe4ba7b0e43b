"""Execute the chapter notebooks in place, in order, from a fresh kernel each, saving widget state.

    .venv/bin/python notebooks/run_notebooks.py            # every notebooks/NN-*.ipynb
    .venv/bin/python notebooks/run_notebooks.py 02         # those whose name starts with 02

Each notebook's outputs are cleared, its cells run top to bottom (execution counts 1..N), and the
widgets' state is stored in the notebook's metadata so the sliders render when it is opened. A cell
that raises stops the run with a non-zero exit status and leaves the notebook file unchanged.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
TIMEOUT_S = 600


def execute(path: Path) -> float:
    """Run one notebook in place (cwd = notebooks/); return the seconds it took."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        cell.metadata.pop("execution", None)
    nb.metadata.pop("widgets", None)
    start = time.perf_counter()
    client = NotebookClient(nb, timeout=TIMEOUT_S, kernel_name="python3", store_widget_state=True,
                            record_timing=False,   # no per-cell timestamps: reruns diff only where outputs change
                            resources={"metadata": {"path": str(HERE)}})
    client.execute()
    elapsed = time.perf_counter() - start
    nbformat.validate(nb)
    nbformat.write(nb, path)
    return elapsed


def main(argv: list[str]) -> int:
    prefixes = argv or [""]
    paths = sorted(p for p in HERE.glob("[0-9][0-9]-*.ipynb") if any(p.name.startswith(x) for x in prefixes))
    if not paths:
        print(f"no notebook matches {prefixes}", file=sys.stderr)
        return 2
    for path in paths:
        print(f"{path.name}: ", end="", flush=True)
        print(f"{execute(path):.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
