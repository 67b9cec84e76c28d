"""Reports: a kernel's stored results (check, bench, sweep, profile, diagnosis, history) as
Markdown or HTML with plots. May import views and everything below; no torch, no textual."""
