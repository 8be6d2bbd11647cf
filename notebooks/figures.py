"""figures.py -- how the notebooks show computation graphs (shared by notebooks 01 and 02).

tracing.draw_graph sizes its figure for 7-point text. Shown inline, a notebook scales a wide graph down to the page
width and that text becomes unreadable; so the figure is rendered at 150 dpi and shown unconfined, at its pixel
size (a reader scrolls sideways through a long graph instead of squinting at a shrunken one).
"""
import io


def show_graph(root, labels, title, dpi=150, fontsize=None):
    """Draw root's computation graph with tracing.draw_graph and show it at full size (150 dpi, unconfined)."""
    import matplotlib.pyplot as plt
    from IPython.display import Image, display

    from tracing import draw_graph

    ax = draw_graph(root, labels=labels)
    ax.set_title(title, fontsize=fontsize)
    buf = io.BytesIO()
    ax.figure.savefig(buf, format="png", dpi=dpi)
    plt.close(ax.figure)
    display(Image(data=buf.getvalue(), format="png", unconfined=True, alt=title))
