"""The class results board: runs pooled per exercise and configuration, best K from pooled sweeps, reset, storage."""
from specdec.serving.class_board import PRIVATE_LABEL, ClassBoard, BoardRun, SweepRecord, best_k, board_path


def run(label="Exercise 1", config="eagle3 · K=4 · T=0", acceptance=0.5, per_forward=2.0, speedup=1.4):
    return BoardRun(label, config, acceptance, per_forward, speedup, at=0.0)


def test_runs_of_one_exercise_and_configuration_pool_into_one_row():
    board = ClassBoard()
    board.record_run(run(acceptance=0.4, speedup=1.3))
    board.record_run(run(acceptance=0.6, speedup=1.5))
    board.record_run(run(config="eagle3 · K=2 · T=0"))
    rows = board.rows()
    assert [r.runs for r in rows] == [2, 1]
    assert abs(rows[0].acceptance_rate - 0.5) < 1e-9 and abs(rows[0].speedup - 1.4) < 1e-9


def test_runs_without_a_measured_speedup_count_but_do_not_move_the_figure():
    board = ClassBoard()
    board.record_run(run(speedup=None))
    board.record_run(run(speedup=1.2))
    row = board.rows()[0]
    assert row.runs == 2 and row.measured_runs == 1 and row.speedup == 1.2


def test_the_best_k_is_the_highest_median_over_the_pooled_sweeps():
    sweeps = [SweepRecord("Exercise 6", "eagle3 · T=0", {1: 1.1, 2: 1.3, 4: 1.2}, 0.0),
              SweepRecord("Exercise 6", "eagle3 · T=0", {1: 1.0, 2: 1.1, 4: 1.4}, 0.0),
              SweepRecord("Exercise 6", "eagle3 · T=0", {1: 1.0, 2: 1.25, 4: 1.0}, 0.0)]
    assert best_k(sweeps) == (2, 1.25)


def test_a_sweep_adds_its_best_k_to_the_board():
    board = ClassBoard()
    board.record_sweep(SweepRecord("Exercise 6", "eagle3 · T=0", {2: 1.3, 4: 1.1}, 0.0))
    row = board.rows()[0]
    assert row.best_k == 2 and row.sweeps == 1 and row.runs == 0


def test_reset_empties_the_board():
    board = ClassBoard()
    board.record_run(run())
    board.reset()
    assert board.rows() == [] and board.reset_at is not None


def test_the_board_survives_a_restart_in_its_file(tmp_path):
    path = tmp_path / "board.json"
    board = ClassBoard(path)
    board.record_run(run(label=PRIVATE_LABEL))
    board.record_sweep(SweepRecord("Exercise 6", "eagle3 · T=0", {2: 1.3}, 0.0))
    again = ClassBoard(path)
    assert [r.label for r in again.rows()] == [PRIVATE_LABEL, "Exercise 6"] and again.rows()[1].best_k == 2


def test_an_unreadable_file_starts_an_empty_board(tmp_path):
    path = tmp_path / "board.json"
    path.write_text("not json")
    assert ClassBoard(path).rows() == []


def test_the_board_is_kept_on_persistent_storage_only_where_it_exists(tmp_path):
    assert board_path(tmp_path) == tmp_path / "specdec-class-board.json"
    assert board_path(tmp_path / "missing") is None
