"""What a person can start, the same from the command line and from the app: each command's
parameters built from its options by one builder (`params`), and the command started with them
(`start`). The CLI turns flags into those options and prints; the TUI turns its selection into
them (`actions`) and shows the outcome through `views`."""
