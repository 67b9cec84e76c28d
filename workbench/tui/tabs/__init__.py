"""One module per tab: each pane renders one kind of result and knows nothing of jobs."""
