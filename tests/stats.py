"""The chi-square test the distribution tests use: the engine's own (specdec/stats.py), so the app's
exactness check and the test suite share one implementation."""
from specdec.stats import MIN_EXPECTED, chi_square_p_value  # noqa: F401
