"""The app's screens: the main one (kernel list and tabs) and the modal ones it opens."""
