"""The Gradio web app (the only part of specdec that imports gradio or plotly).

Its shape: layout.py is the page shell (the sidebar, the prompt, the tour and the tabs); tabs/<tab>/ holds a tab's
layout and wiring (layout.py) and its plain callbacks (callbacks.py); views/ holds the pure renderers; the modules
here are what the tabs share (lab.py: the engine binding and the common callbacks' pieces; wiring.py, session.py,
guard.py, sidebar.py, ...), with the tour's plain data and state (exercises.py, tour_state.py). Imports point one way:
plain data <- views <- shared modules <- tabs <- the page shell (tests/test_ui_boundaries.py).

Import the submodules you need; `build_app` is re-exported lazily so that importing a renderer does
not import gradio's whole server.
"""


def build_app(*args, **kwargs):
    from specdec.ui.layout import build_app as _build_app

    return _build_app(*args, **kwargs)
