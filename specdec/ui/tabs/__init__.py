"""The app's tabs and the tour above them, one package each: layout.py (its components, its layout and its event
wiring) and callbacks.py (plain callbacks returning or yielding {output name: value} dicts, testable without a
server). A tab imports views and the shared modules, never another tab (tests/test_ui_boundaries.py).
"""
