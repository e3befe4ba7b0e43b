"""course.memo: a shipped table answers only its own arguments, for its own code, with what the live
function returns; anything else is computed live."""

import random

import pytest

from course import memo

calls = []


def make(tmp_path, files=()):
    @memo.shipped("t.square", *files, folder=tmp_path)
    def square(x, scale=1):
        calls.append((x, scale))
        return {"x": x, "value": x * x * scale}
    return square


def test_a_stored_call_answers_without_running(tmp_path):
    square = make(tmp_path)
    square.store(3)
    square.table.save()
    fresh = make(tmp_path)              # a new process: reads the file
    calls.clear()
    assert fresh(3) == {"x": 3, "value": 9} and calls == []
    assert fresh.table.hits == 1


def test_other_arguments_are_computed_live_never_answered_from_a_neighbour(tmp_path):
    square = make(tmp_path)
    for x in (1, 2, 3):
        square.store(x)
    square.table.save()
    fresh = make(tmp_path)
    calls.clear()
    rng = random.Random(0)
    for x in rng.sample(range(4, 200), 20) + [2.0000001, -3]:
        assert fresh(x) == {"x": x, "value": x * x}
    assert fresh(3, scale=2) == {"x": 3, "value": 18}       # same x, another keyword: live
    assert fresh(3, 2) == {"x": 3, "value": 18}             # given by position: another key, live
    assert len(calls) == 24 and fresh.table.hits == 0


def test_a_change_to_the_code_or_data_it_depends_on_retires_the_table(tmp_path, monkeypatch):
    data = tmp_path / "input.txt"
    data.write_text("one")
    square = make(tmp_path, files=(str(data),))
    square.table.put(memo.key((5,), {}), "stored")          # a value the live function never returns
    square.table.save()
    assert make(tmp_path, files=(str(data),))(5) == "stored"
    data.write_text("two")                                   # the data changed: the file no longer matches
    calls.clear()
    assert make(tmp_path, files=(str(data),))(5) == {"x": 5, "value": 25} and calls == [(5, 1)]
    data.write_text("one")
    assert make(tmp_path, files=(str(data),))(5) == "stored"
    monkeypatch.setattr(memo, "_sim_digest", lambda: "another simulator")
    assert make(tmp_path, files=(str(data),))(5) == {"x": 5, "value": 25}


def test_a_damaged_table_is_computed_live_with_a_warning(tmp_path):
    square = make(tmp_path)
    square.store(4)
    path = square.table.save()
    path.write_bytes(b"not a table")
    with pytest.warns(UserWarning, match="unreadable"):
        assert make(tmp_path)(4) == {"x": 4, "value": 16}


def test_saving_keeps_one_file_per_table(tmp_path, monkeypatch):
    square = make(tmp_path)
    square.store(1)
    square.table.save()
    monkeypatch.setattr(memo, "_sim_digest", lambda: "another simulator")
    square = make(tmp_path)
    square.store(2)
    square.table.save()
    assert len(list(tmp_path.glob("t.square-*.pkl.gz"))) == 1


def test_objects_named_by_address_are_never_stored(tmp_path):
    square = make(tmp_path)

    class Opaque:
        def __mul__(self, other):
            return 0
        __rmul__ = __mul__
    square.store(Opaque())
    assert square.table.entries() == {}
    assert memo.key((Opaque(),), {}) is None


def test_keys_tell_floats_and_dataclasses_apart():
    from course.panel import Hardware
    assert memo.key((0.4,), {}) != memo.key((0.4000000001,), {})
    assert memo.key((Hardware(),), {}) != memo.key((Hardware(gpu="h200"),), {})
    assert memo.key((), {"a": 1, "b": 2}) == memo.key((), {"b": 2, "a": 1})


def test_the_chapter_02_table_stores_sim_plans_figures(tmp_path):
    """What build stores for a panel position is the live answer (the plan minus its run)."""
    from course import panel
    table = memo.Table("ch02.instance", ("course/panel.py",), tmp_path)
    args = (2000, 256, 0.4, panel.CHAPTER, 2.0, 0.05)
    live = panel.instance.__wrapped__.live(*args)
    table.put(memo.key(args, {}), panel._without_run(live))
    table.save()
    stored = memo.Table("ch02.instance", ("course/panel.py",), tmp_path).get(memo.key(args, {}))
    assert stored.plan == live.plan and stored.plan.run_at_rate is None
    assert stored.plan.rate_per_instance == live.plan.rate_per_instance


def test_infeasible_answers_survive_the_table():
    import pickle
    from sim.capacity import InfeasibleError
    e = pickle.loads(pickle.dumps(InfeasibleError("why", ttft_s=3.0, tpot_s=0.01)))
    assert (str(e), e.reason, e.ttft_s, e.tpot_s) == ("why", "why", 3.0, 0.01)


SHIPPED = [(chapter, i) for chapter in memo.CHAPTERS for i in range(2)]


@pytest.mark.parametrize("chapter,which", SHIPPED)
def test_shipped_tables_hold_what_the_live_functions_return(chapter, which):
    """For every shipped table that matches the code as it is, two of its entries (drawn at random)
    equal the live computation. A stale table is never read, so it needs no check."""
    grid = memo.grid(chapter)
    if which >= len(grid):
        pytest.skip("one table")
    func, grid_calls = grid[which]
    if not func.table.current():
        pytest.skip(f"{func.table.name}: no table for this code (python -m course.memo build {chapter})")
    entries = func.table.entries()
    rng = random.Random()
    for k in rng.sample(sorted(entries), 2):
        args, kwargs = next(memo._split(c) for c in grid_calls if memo.key(*memo._split(c)) == k)
        live = func.live(*args, **kwargs)
        stored = entries[k]
        if hasattr(live, "plan") and hasattr(live, "error"):          # chapter 02: the plan, or the error
            assert stored.plan == live.plan and repr(stored.error) == repr(live.error)
        elif hasattr(live, "rates"):                                   # a latency curve: arrays
            assert all((getattr(stored, f) == getattr(live, f)).all() for f in ("rates", "ttft_p99", "tpot_p99"))
        else:
            assert stored == live, k


def test_chapter_02s_grid_holds_every_first_move_and_every_instance_choice():
    """What the chapter's prose promises: one control away from the chapter's position, and any
    model x GPU x TP x dtype at the chapter's request, is a stored position (when it can run)."""
    from course import panel as p
    from course.panel_grids import chapter_02
    (instance, calls), (curve, curve_calls) = chapter_02()
    assert calls == curve_calls and len(set(calls)) == len(calls)
    stored = set(calls)
    base = (p.INPUT_LEN, p.OUTPUT_LEN, p.MFU, p.CHAPTER, p.TTFT_SLO_S, p.TPOT_SLO_S)
    assert base in stored
    for i, options in ((0, p.INPUT_OPTIONS), (1, p.OUTPUT_OPTIONS), (2, p.mfu_options()), (4, p.TTFT_SLO_OPTIONS),
                       (5, p.TPOT_SLO_OPTIONS)):
        for v in options:
            call = base[:i] + (v,) + base[i + 1:]
            runs = p._setup_or_reason(p.CHAPTER, call[2], call[0], call[1])[0] is not None
            assert (call in stored) == runs, call
    for hw in (p.Hardware(m, g, t, w, kv) for m in p.MODEL_OPTIONS for g in p.GPU_OPTIONS for t in p.TP_OPTIONS
               for w in p.DTYPE_OPTIONS for kv in p.DTYPE_OPTIONS):
        call = base[:3] + (hw,) + base[4:]
        assert (call in stored) == (p._setup_or_reason(hw, p.MFU, p.INPUT_LEN, p.OUTPUT_LEN)[0] is not None)


def test_chapter_02s_grid_holds_every_second_slider_move():
    """Two of the search sliders moved, or one hardware dropdown and one slider: stored when it runs."""
    from course import panel as p
    from course.panel_grids import SLIDERS_02, chapter_02
    (_, calls), _ = chapter_02()
    stored = set(calls)
    base = dict(input_len=p.INPUT_LEN, output_len=p.OUTPUT_LEN, mfu=p.MFU, hw=p.CHAPTER, ttft_slo=p.TTFT_SLO_S,
                tpot_slo=p.TPOT_SLO_S)
    options = {"input_len": p.INPUT_OPTIONS, "output_len": p.OUTPUT_OPTIONS, "mfu": p.mfu_options(),
               "ttft_slo": p.TTFT_SLO_OPTIONS, "tpot_slo": p.TPOT_SLO_OPTIONS}
    assert set(SLIDERS_02) == set(options)

    def call(x):
        return (x["input_len"], x["output_len"], x["mfu"], x["hw"], x["ttft_slo"], x["tpot_slo"])

    def runs(x):
        return p._setup_or_reason(x["hw"], x["mfu"], x["input_len"], x["output_len"])[0] is not None

    moves = [dict(base, **{a: options[a][-1], b: options[b][0]}) for a in SLIDERS_02 for b in SLIDERS_02 if a != b]
    moves += [dict(base, hw=p.Hardware(gpu="h200"), input_len=v) for v in p.INPUT_OPTIONS]
    moves += [dict(base, hw=p.Hardware(model="llama-3-8b"), tpot_slo=v) for v in p.TPOT_SLO_OPTIONS]
    for x in moves:
        assert (call(x) in stored) == runs(x), call(x)
    assert (call(dict(base, hw=p.Hardware(gpu="h200"), input_len=512, output_len=64)) in stored) is False   # three away


def test_a_live_answer_is_stripped_as_a_stored_one_is(tmp_path):
    """A call the table does not hold returns ``strip(value)``, as build stores it: the panels' caches
    keep no more per position than the table does (chapter 02: a plan without its 100k-request run)."""
    @memo.shipped("toy.strip", folder=tmp_path, strip=lambda v: v[:1])
    def f(x):
        return [x, list(range(1000))]
    assert f(3) == [3] and f.live(3)[0] == 3 and len(f.live(3)) == 2
    from course import panel
    args = (2000, 333, 0.4, panel.CHAPTER, 2.0, 0.05)          # off the grid: computed live
    assert memo.key(args, {}) not in panel.instance.__wrapped__.table.entries()
    assert panel.instance.__wrapped__(*args).plan.run_at_rate is None
