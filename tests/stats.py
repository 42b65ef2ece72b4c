"""The chi-square test the distribution tests use: the engine's own (specdec/exactness/chi_square.py), so the app's
exactness check and the test suite share one implementation."""
from specdec.exactness.chi_square import MIN_EXPECTED, chi_square_p_value  # noqa: F401
