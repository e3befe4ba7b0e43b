"""course/kit.py: the chapters' text table, key-value HTML table and dropdown panel base."""
import pytest

from course.kit import DropdownPanel, text_table


def test_text_table_pads_columns_and_rules_the_header():
    assert text_table(["a", "bb"], [(1, "x"), ("long", 2.5)]).splitlines() == [
        "a     bb", "----  ---", "1     x", "long  2.5"]


class Two(DropdownPanel):
    per_row, has_chart = 1, False

    def controls_spec(self):
        return {"n": ("n", (1, 2, 3), 2), "unit": ("unit", [("seconds", "s"), ("ms", "ms")], "s")}

    def update(self):
        self.calls = getattr(self, "calls", 0) + 1
        self.table.value = f"{self.choice()['n']} {self.choice()['unit']}"


def test_dropdown_panel_updates_once_per_change():
    pytest.importorskip("ipywidgets")
    p = Two()
    assert p.calls == 1 and p.table.value == "2 s" and len(p.widget.children) == 3
    p.controls["unit"].value = "ms"
    assert p.calls == 2 and p.table.value == "2 ms"


def test_rows_html_escapes_and_bolds_values():
    from course.kit import rows_html
    assert rows_html([("a<b", 1.5)], "max-width:10px") == (
        "<table style='max-width:10px'><tr><td style='padding:2px 12px 2px 0'>a&lt;b</td>"
        "<td><b>1.5</b></td></tr></table>")
