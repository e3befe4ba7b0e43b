"""sim.progress: a bar on stderr only where someone watches it; tqdm when installed, else a counter."""

import io
import sys

import pytest

from sim import progress
from sim.progress import progress_bar


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_nothing_is_written_to_a_stream_that_is_not_a_terminal():
    stream = io.StringIO()
    with progress_bar("jobs", stream=stream, delay_s=0) as bar:
        for i in range(1, 6):
            bar(i, 5)
    assert stream.getvalue() == "" and (bar.done, bar.total) == (5, 5)


def test_never_silences_even_a_terminal():
    stream = Terminal()
    with progress_bar("jobs", stream=stream, enabled=False, delay_s=0) as bar:
        bar(3, 5)
    assert stream.getvalue() == ""


@pytest.fixture
def no_tqdm(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)          # import tqdm raises ImportError


def test_without_tqdm_a_terminal_gets_a_plain_counter(no_tqdm, monkeypatch):
    monkeypatch.setattr(progress, "REDRAW_S", 0.0)
    stream = Terminal()
    with progress_bar("fleets simulated", stream=stream, delay_s=0) as bar:
        bar(1, None)
        bar(2, None)
    assert stream.getvalue() == "\rfleets simulated: 1\rfleets simulated: 2\n"
    stream = Terminal()
    with progress_bar("options", stream=stream, delay_s=0) as bar:
        bar(4, 8)
    assert stream.getvalue() == "\roptions: 4/8\n"


def test_the_delay_keeps_quick_work_silent(no_tqdm):
    stream = Terminal()
    with progress_bar("options", stream=stream, delay_s=60) as bar:
        bar(1, 2)
        bar(2, 2)
    assert stream.getvalue() == ""


def test_always_forces_it_onto_a_pipe(no_tqdm):
    stream = io.StringIO()
    with progress_bar("options", stream=stream, enabled=True, delay_s=0) as bar:
        bar(2, 2)
    assert stream.getvalue() == "\roptions: 2/2\n"


def test_tqdm_draws_it_when_installed():
    pytest.importorskip("tqdm")
    stream = Terminal()
    with progress_bar("options", stream=stream, delay_s=0) as bar:
        bar(3, 7)
        bar(7, 7)
    assert "options" in stream.getvalue() and "7/7" in stream.getvalue()


def test_the_sweep_reports_each_option(capsys):
    from sim.cli import main
    calls = []
    real = progress.Progress.__call__
    try:
        progress.Progress.__call__ = lambda self, done, total=None: (calls.append((done, total)),
                                                                     real(self, done, total))
        assert main(["sweep", "--model", "llama-3-8b", "--qps", "20", "--input", "500", "--output", "100",
                     "--ttft", "1", "--tpot", "0.05", "--gpus", "h100-sxm", "--tps", "1", "2", "--dtypes", "fp8",
                     "--workers", "1"]) == 0
    finally:
        progress.Progress.__call__ = real
    assert calls == [(1, 2), (2, 2)]
    assert capsys.readouterr().err == ""                   # pytest's stderr is not a terminal


def test_tqdm_too_keeps_quick_work_silent():
    pytest.importorskip("tqdm")
    stream = Terminal()
    with progress_bar("options", stream=stream, delay_s=60) as bar:
        bar(1, 3)
        bar(3, 3)
    assert stream.getvalue() == ""


def test_sim_imports_tqdm_only_when_a_bar_is_drawn():
    import subprocess
    code = ("import sys, io, sim.cli, sim.progress, sim.fleet.sizing\n"
            "sim.progress.progress_bar('x', stream=io.StringIO())(1, 2)\n"
            "print('tqdm' in sys.modules)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "False"
