import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "tests"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import torch

# Tests drive thousands of tiny forwards; one intra-op thread avoids pool hand-offs dominating them.
torch.set_num_threads(1)


# The two tiers (README, "Set up"): `python -m pytest -m "not slow"` is the everyday loop; .ci/run runs all.
# Slow: whole modules that start the app server or a browser, or train, and the long sampling tests by name
# (every parametrisation). The fast tier keeps greedy identity on every path (test_engine_greedy_identity,
# test_zoo_heads' greedy tests, test_zoo_shipped) and chi-square tests on small models (test_distribution_paths'
# per-token laws, test_engine_distribution's broken-verifier check, test_warpers, test_eos, test_lossless,
# test_verifier, test_mutations).
SLOW_MODULES = re.compile(r"test_browser\w*|test_\w+_api|test_training_pipeline|test_vllm_server")
SLOW_TESTS = {
    "test_head_drafter_samples_follow_the_target_distribution",       # three trained heads, 100-200 s each
    "test_sampled_tree_steps_follow_the_target_distribution",
    "test_every_k_schedule_samples_follow_the_target_distribution",
    "test_prompt_lookup_samples_follow_the_target_distribution",
    "test_prompt_lookup_with_a_wrong_verifier_fails_the_same_test",
    "test_speculative_samples_follow_the_target_distribution",
    "test_whole_output_of_a_short_run_follows_the_target_law",
    "test_load_model_refuses_a_model_over_the_configured_budget_before_loading",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if SLOW_MODULES.fullmatch(item.path.stem) or item.originalname in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
