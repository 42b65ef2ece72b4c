"""Measurement: speedups as interval estimates, sweeps, benchmarks and the cost model.

  speedup.py         timed runs -> "1.42x, 95% interval 1.37-1.48, 9 paired runs"
  sweep.py           sweeps over K, temperature, drafter and schedule, each point a measured speedup
  bench.py           our engine against transformers on the same model, interleaved
  bench_suite.py     the benchmark table of the machine it runs on
  cost_model.py      predicted speedup from the models' shapes, a dtype and a device
  device_presets.py  devices for the cost model (bandwidth, FLOP/s), and this machine measured
"""
