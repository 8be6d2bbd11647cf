"""figures.py -- how the notebooks show computation graphs (notebooks 02 and 04).

tracing.draw_graph sizes its figure for 7-point text. Shown inline, a notebook scales a
wide graph down to the page width and that text becomes unreadable; so the figure is
rendered at 150 dpi and shown unconfined, at its pixel size (a reader scrolls sideways
through a long graph instead of squinting at a shrunken one).
"""
import io


def show_graph(root, labels, title, dpi=150, fontsize=None):
    """Draw root's computation graph with tracing.draw_graph and show it at full size
    (150 dpi, unconfined)."""
    import matplotlib.pyplot as plt
    from IPython.display import Image, display

    from tracing import draw_graph

    ax = draw_graph(root, labels=labels)
    ax.set_title(title, fontsize=fontsize)
    buf = io.BytesIO()
    ax.figure.savefig(buf, format="png", dpi=dpi)
    plt.close(ax.figure)
    display(Image(data=buf.getvalue(), format="png", unconfined=True, alt=title))


# Set by notebooks/build.py (and tests/test_notebooks.py) in the kernels they start: a
# headless run keeps the static figure and shows no widget (a widget would store random
# model ids in the notebook, and there is nobody to move it).
STATIC_ENV = "NOTEBOOK_STATIC"


def slider_figure(draw, sliders, description=None):
    """A figure the learner can move: draw(**values) draws it (and calls plt.show()).

    sliders: {name: (low, high, value)} for a linear slider, {name: ("log", low, high,
    value)} for a log-scale one (low and high are then the values at its ends). Run
    headless (STATIC_ENV set) or without ipywidgets, the figure is drawn once at each
    slider's value, followed by one line saying what would move it; in a live Jupyter
    session with ipywidgets, the sliders are shown and redraw the figure. Returns None:
    the panel is displayed here, once (returned, it would be displayed again as the
    value of the cell's last line).
    """
    import os

    names = "、".join(description or sliders)
    values = {name: spec[-1] for name, spec in sliders.items()}
    widgets = None
    if os.environ.get(STATIC_ENV) != "1":
        try:
            import ipywidgets as widgets
        except ImportError:
            widgets = None
    if widgets is None:
        draw(**values)
        print(f"（Jupyter で ipywidgets を入れて実行すると、この図は {names} のスライダーで"
              "動かせます）")
        return None
    show_sliders(draw, sliders, widgets)
    return None


def show_sliders(draw, sliders, widgets, display=None):
    """The ipywidgets.interactive of draw with one slider per entry of `sliders` (see
    slider_figure), displayed."""
    import math

    controls = {}
    for name, spec in sliders.items():
        if spec[0] == "log":
            _, low, high, value = spec
            controls[name] = widgets.FloatLogSlider(value=value, base=10, min=math.log10(low),
                                                    max=math.log10(high), step=0.01,
                                                    description=name, continuous_update=False)
        else:
            low, high, value = spec
            controls[name] = widgets.FloatSlider(value=value, min=low, max=high,
                                                 step=(high - low) / 200, description=name,
                                                 continuous_update=False)
    panel = widgets.interactive(draw, **controls)
    if display is None:
        from IPython.display import display
    display(panel)
    return panel
