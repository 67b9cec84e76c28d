"""Widgets of the app's own: the kernel list, the job bar, the code view."""

from textual.binding import Binding

LINE_KEYS = [
    Binding("up", "move(-1)", "up", show=False),
    Binding("down", "move(1)", "down", show=False),
    Binding("pageup", "page(-1)", "page up", show=False),
    Binding("pagedown", "page(1)", "page down", show=False),
]
"""Line and page moves, shared by the list-like widgets (each adds its own Home/End)."""
