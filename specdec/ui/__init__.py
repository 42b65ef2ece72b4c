"""The Gradio web app (the only part of specdec that imports gradio or plotly).

Import the submodules you need; `build_app` is re-exported lazily so that importing a renderer does
not import gradio's whole server.
"""


def build_app(*args, **kwargs):
    from specdec.ui.layout import build_app as _build_app

    return _build_app(*args, **kwargs)
