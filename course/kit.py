"""What the chapter modules share: a fixed-width text table, a (label, value) HTML table, and a panel of dropdowns that answers in
the caller (cached plans and arithmetic, no worker thread).

    class MyPanel(DropdownPanel):
        def controls_spec(self):      # name -> (label, options, default); options may be (text, value)
            return {"gpu": ("GPU", ("h100-sxm", "h200"), "h100-sxm")}
        def update(self): ...         # read self.choice(), set self.table.value (and self.chart.value)
"""

from __future__ import annotations

import html


def text_table(head: list, rows: list) -> str:
    """Columns padded to their widest cell, a dashed rule under the header, trailing spaces cut."""
    cells = [[str(x) for x in r] for r in rows]
    head = [str(h) for h in head]
    widths = [max(len(x) for x in col) for col in zip(head, *cells)]
    fmt = lambda r: "  ".join(x.ljust(w) for x, w in zip(r, widths)).rstrip()   # noqa: E731
    return "\n".join([fmt(head), fmt(["-" * w for w in widths])] + [fmt(r) for r in cells])


def rows_html(rows, table_style: str = "") -> str:
    """(label, value) rows as a two-column HTML table, values in bold, both escaped."""
    style = f" style='{table_style}'" if table_style else ""
    cells = "".join(f"<tr><td style='padding:2px 12px 2px 0'>{html.escape(str(k))}</td>"
                    f"<td><b>{html.escape(str(v))}</b></td></tr>" for k, v in rows)
    return f"<table{style}>{cells}</table>"


class DropdownPanel:
    """Dropdown controls in rows of ``per_row`` over a table and (``has_chart``) an SVG chart; every
    change calls ``update`` once. Subclasses give ``controls_spec()`` and ``update()``."""

    width = "210px"
    per_row = 3
    has_chart = True

    def __init__(self):
        import ipywidgets as w
        self.controls = {name: w.Dropdown(description=label, options=options, value=value,
                                          layout=w.Layout(width=self.width))
                         for name, (label, options, value) in self.controls_spec().items()}
        self.table = w.HTML()
        values = list(self.controls.values())
        rows = [w.HBox(values[i:i + self.per_row]) for i in range(0, len(values), self.per_row)]
        if self.has_chart:
            self.chart = w.HTML()
            rows.append(w.HBox([self.table, self.chart]))
        else:
            rows.append(self.table)
        self.widget = w.VBox(rows)
        for c in values:
            c.observe(lambda _change: self.update(), names="value")
        self.update()

    def controls_spec(self) -> dict:
        raise NotImplementedError

    def update(self):
        raise NotImplementedError

    def choice(self) -> dict:
        return {k: c.value for k, c in self.controls.items()}

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)
