import atexit
import os
import re
import shutil
import sys
import tempfile

import pytest
import torch

# Tests drive thousands of tiny forwards; one intra-op thread avoids pool hand-offs dominating them.
torch.set_num_threads(1)

# Bytecode caches for the tests and the package even where the environment asks for none (PYTHONDONTWRITEBYTECODE):
# without them every process, each test worker included, compiles and rewrites the assertions of ~280 modules again,
# ~4 s of a worker's start. __pycache__ is git-ignored.
sys.dont_write_bytecode = False

# What the tests measure (the tuned path, drafters' costs) is measured while other workers share the cores: it is
# kept in a folder of this process's own, never in the machine's records the app and the CLI read (SPECDEC_RECORDS).
if "SPECDEC_RECORDS" not in os.environ:
    os.environ["SPECDEC_RECORDS"] = tempfile.mkdtemp(prefix="specdec-test-records-")
    atexit.register(shutil.rmtree, os.environ["SPECDEC_RECORDS"], True)


# The two tiers (README, "Set up"): `python -m pytest -m "not slow"` is the everyday loop; .ci/run runs all.
# Slow: whole modules that start the app server, a browser or fresh Python processes, or train, or plant bugs in the
# engine (test_mutations: does each planted bug fail two correctness tests?); the long sampling tests by name (every
# parametrisation); the other cases of each sampling law the fast tier runs once (FAST_CASES); and single tests that
# start a fresh Python (SLOW_SINGLE_TESTS). The fast tier keeps greedy identity on every path
# (test_engine_greedy_identity, test_drafters, test_zoo_heads' greedy tests, test_zoo_shipped, test_block_target's
# kept case) and each chi-square law on one case (FAST_CASES) beside test_verifier's laws of one verification.
SLOW_MODULES = re.compile(r"test_browser\w*|test_\w+_api|test_training_pipeline|test_vllm_server|test_process_setup|"
                          r"test_llamacpp_server|test_mutations|"
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
    # the power of the same tests against a broken verifier (the fast tier keeps test_lossless's kept case)
    "test_always_accepting_verifier_fails_the_same_test",             # 20,000 runs, ~20 s
    "test_the_same_switching_run_with_an_always_accepting_verifier_fails",
    "test_draft_distribution_differs_from_target",
    # two paths' own laws, 10-20 s a case: in the fast tier, test_verifier's bonus rows and EOS by every path
    "test_bonus_after_one_accepted_draft_follows_the_target_law",
    "test_sampled_outputs_that_stop_at_eos_follow_the_target_law",
}
# Each sampling law's one case in the fast tier (its parametrisation id); its other cases are slow.
FAST_CASES = {
    "test_every_token_of_a_long_run_follows_the_target_law": "draft model-temperature 0.7, top-k 3",
    "test_long_runs_produce_accepted_corrected_and_bonus_tokens": "draft model-temperature 0.7, top-k 3",
    "test_short_runs_produce_accepted_corrected_and_bonus_tokens": "draft model-K=2",
    "test_every_token_of_a_sampled_target_only_run_follows_the_warped_law": "temperature 0.7, top-k 3",
    "test_every_token_follows_the_target_law_while_speculation_switches_off_and_on": "temperature 1.0",
    "test_sampled_eos_comes_by_every_path": "prompt lookup",
    "test_the_real_verifier_passes": "draft model-2",
    "test_the_target_alone_passes_the_same_test": "prompt lookup",
    "test_every_broken_verifier_fails": "prompt lookup-always accept the draft",
    "test_one_uniform_for_all_positions_is_invisible_on_the_first_token": "prompt lookup",
    # greedy on the GGUF's blocks: one trained head here, every zoo drafter in the slow tier
    "test_every_zoo_drafter_on_the_published_q4_1_file_emits_its_greedy_tokens": "smollm2-135m-eagle3",
}
SLOW_SINGLE_TESTS = {  # a test's name (every case) or one case's ("name[id]")
    "test_module_entry_point_reports_errors_without_traceback",       # `python -m specdec` in a fresh Python
    "test_invalid_utf8_bytes_on_a_real_command_line_get_one_line",    # the same
    "test_the_cpu_peak_is_the_rss_high_water_mark_over_the_start_reset_for_each_run",  # a probe process of its own
    "test_the_real_package_gives_a_pinned_greedy_chat_answer_in_float32",  # transformers' generate on SmolLM2
    # the app's 60-node tree: the tree path's greedy identity stays in the fast tier with the smaller trees
    "test_shipped_drafter_greedy_output_is_the_target_alone[smollm2-135m-eagle-tree-60]",
}


def case_id(item) -> str | None:
    """The parametrisation id of a test item ("draft model-K=2"), None for a test without parameters."""
    callspec = getattr(item, "callspec", None)
    return callspec.id if callspec is not None else None


COLLECTED_CASES: dict[str, set] = {}  # test name -> the parametrisation ids collected (tests/test_test_tiers.py)


def is_slow(item) -> bool:
    name = item.originalname
    kept_case = FAST_CASES.get(name)
    return bool(SLOW_MODULES.fullmatch(item.path.stem) or name in SLOW_TESTS
                or name in SLOW_SINGLE_TESTS or item.name in SLOW_SINGLE_TESTS
                or (kept_case is not None and case_id(item) != kept_case))


@pytest.fixture(scope="session")
def avx2_kernels(tmp_path_factory):
    """The lab kernels' AVX2 code path (8-float vectors), built once per test process on any x86-64 CPU that has it:
    the AVX-512 path and the AVX2 path are both tested wherever the tests run."""
    from specdec.runners import native_kernels

    return native_kernels.build_and_load(tmp_path_factory.mktemp("avx2") / "kernels.so", native_kernels.AVX2)


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
# modules that share one worker, where each would otherwise make the same costly thing again
SHARED_GROUPS = {stem: "zoo prompts" for stem in ("test_zoo_prompts", "test_zoo_asked", "test_zoo_topics")}  # corpus
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
        COLLECTED_CASES.setdefault(item.originalname, set()).add(case_id(item))
        long_sampling = item.originalname in SLOW_TESTS
        if is_slow(item):
            item.add_marker(pytest.mark.slow)
        if not long_sampling:
            item.add_marker(pytest.mark.xdist_group(SHARED_GROUPS.get(item.path.stem, item.path.stem)))
    items.sort(key=run_order)  # stable
