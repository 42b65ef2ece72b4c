import atexit
import os
import re
import shutil
import tempfile

import pytest
import torch

# Tests drive thousands of tiny forwards; one intra-op thread avoids pool hand-offs dominating them.
torch.set_num_threads(1)

# What the tests measure (the tuned path, drafters' costs) is measured while other workers share the cores: it is
# kept in a folder of this process's own, never in the machine's records the app and the CLI read (SPECDEC_RECORDS).
if "SPECDEC_RECORDS" not in os.environ:
    os.environ["SPECDEC_RECORDS"] = tempfile.mkdtemp(prefix="specdec-test-records-")
    atexit.register(shutil.rmtree, os.environ["SPECDEC_RECORDS"], True)


# The two tiers (README, "Set up"): `python -m pytest -m "not slow"` is the everyday loop; .ci/run runs all.
# Slow: whole modules that start the app server, a browser or fresh Python processes, or train, and the long
# sampling tests by name
# (every parametrisation). The fast tier keeps greedy identity on every path (test_engine_greedy_identity,
# test_zoo_heads' greedy tests, test_zoo_shipped) and chi-square tests on small models (test_distribution_paths'
# per-token laws, test_engine_distribution's broken-verifier check, test_warpers, test_eos, test_lossless,
# test_verifier, test_mutations).
SLOW_MODULES = re.compile(r"test_browser\w*|test_\w+_api|test_training_pipeline|test_vllm_server|test_process_setup|"
                          r"test_llamacpp_server|"
                          r"test_vllm_bad_input")  # the last two start a fresh Python (and torch) per test
SLOW_TESTS = {
    "test_head_drafter_samples_follow_the_target_distribution",       # three trained heads, 100-200 s each
    "test_sampled_speculation_on_blocks_follows_the_targets_law",     # every family on a GGUF's blocks, 20,000 runs
    "test_sampled_tree_steps_follow_the_target_distribution",
    "test_sampled_eagle3_tree_steps_follow_the_target_distribution",
    "test_every_k_schedule_samples_follow_the_target_distribution",
    "test_prompt_lookup_samples_follow_the_target_distribution",
    "test_suffix_samples_follow_the_target_distribution",             # 20,000 sampled runs at K = 1 and 3
    "test_sampled_output_follows_the_target_law_with_the_heads_layers_on_the_lab_kernels",  # 20,000 runs, ~45 s
    "test_prompt_lookup_with_a_wrong_verifier_fails_the_same_test",
    "test_speculative_samples_follow_the_target_distribution",
    "test_whole_output_of_a_short_run_follows_the_target_law",
    "test_load_model_refuses_a_model_over_the_configured_budget_before_loading",
}


# Parallel runs (pytest.ini: `-n auto --dist loadgroup`, pytest-xdist). Almost every test drives one thread
# (above), so two workers use both cores of these machines. A module's tests run on one worker, so its module
# fixtures (app servers, vLLM servers, browsers, loaded models) are made once; the long sampling tests are the
# exception: each runs on whichever worker is free, so they do not queue behind one another at the end.
MAX_WORKERS = 4  # each worker may hold SmolLM2, a browser or a vLLM server: bound the memory on big machines


def pytest_xdist_auto_num_workers(config):
    return max(1, min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1,
                      MAX_WORKERS))


# Longest work first: xdist hands out work in collection order (pytest.ini: --no-loadscope-reorder; its default puts
# the modules with most tests first, which left the long sampling tests, one test a unit, for last, and a worker
# queues up to two units ahead, so one worker ran the final minutes alone). The vLLM servers' module, the long
# sampling tests and the modules that start an app, a browser or a process lead; the many short tests fill both
# workers at the end. The order inside a module is kept.
LEADING_MODULES = {"test_vllm_server"}
LONG_FAST_MODULES = {"test_distribution_paths", "test_zoo_shipped"}  # the longest modules of the fast tier


def run_order(item) -> int:
    if item.path.stem in LEADING_MODULES:
        return 0
    if item.originalname in SLOW_TESTS:
        return 1
    if SLOW_MODULES.fullmatch(item.path.stem) or item.path.stem in LONG_FAST_MODULES:
        return 2
    return 3


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config, items):
    for item in items:
        long_sampling = item.originalname in SLOW_TESTS
        if SLOW_MODULES.fullmatch(item.path.stem) or long_sampling:
            item.add_marker(pytest.mark.slow)
        if not long_sampling:
            item.add_marker(pytest.mark.xdist_group(item.path.stem))
    items.sort(key=run_order)  # stable
