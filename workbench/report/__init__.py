"""Reports: a kernel's stored results (check, bench, sweep, resources, profile, diagnosis,
history) as Markdown or HTML with plots. May import views and everything below; no torch, no
textual.

collect (the store read back typed: newest readable result per kind, failed runs, unreadable
results as problems), sections (one kernel's page, part by part), plots (roofline and trend
PNGs), doc (a page as data), render (Markdown and HTML, escaping), write (safe file names, the
pages, their images and the index).
"""
