"""The "What if?" tab: the closed forms redrawn in the browser, and the last run replayed on them."""
