"""Views of a run: plain functions from the engine's records to HTML, figures and tables (no gradio here
beyond types; no torch).
"""
