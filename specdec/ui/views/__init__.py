"""Pure renderers: plain functions from the engine's records to HTML, figures and tables (no events, no torch). A view
imports other views and the plain data modules (session, exercises, tour_state, cost_prediction) only: never a tab
or a wiring module (tests/test_ui_boundaries.py).
"""
