"""The terminal UI: the app (kernel list, job lifecycle) and one module per tab.

May import views and below; no logic of its own, and no torch or triton in its process.
"""
