"""Widgets of the app's own: the kernel list, the job bar, the code view."""
