"""The chapter notebooks' helpers: widget panels, matplotlib figures and Chinese explanations.

    from course import panel, plots, explain

Needs the ``course`` extra (matplotlib, ipywidgets): ``pip install -e '.[course]'`` or ``make lab``.
The simulator itself, ``sim``, needs only numpy and imports nothing from here.
"""
