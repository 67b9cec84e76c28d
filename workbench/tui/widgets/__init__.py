"""Widgets of the app's own: the kernel list, the job bar, the code view."""

from textual.binding import Binding, BindingType

LINE_KEYS: list[BindingType] = [
    Binding("up", "move(-1)", "up", show=False),
    Binding("down", "move(1)", "down", show=False),
    Binding("pageup", "page(-1)", "page up", show=False),
    Binding("pagedown", "page(1)", "page down", show=False),
    Binding("home", "jump(1)", "first line", show=False),
    Binding("end", "jump(-1)", "last line", show=False),
]
"""Line, page and end moves, shared by the list-like widgets (`action_move`, `action_page`,
`action_jump`)."""
