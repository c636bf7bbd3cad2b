"""The run's local record: metrics.csv, written whatever loggers are chosen."""

from __future__ import annotations

import csv

from neuroplug.config.schema import LoggerConfig
from neuroplug.loggers import build_loggers
from neuroplug.loggers.csv_logger import CSVLogger


def _rows(path):
    with path.open(newline="") as stream:
        return list(csv.DictReader(stream))


def test_every_logger_choice_keeps_the_record(tmp_path):
    for kinds in (["none"], ["console"], ["console", "csv"]):
        run_dir = tmp_path / "_".join(kinds)
        run_dir.mkdir()
        loggers = build_loggers(LoggerConfig(kinds=kinds), run_dir, {}, config=None)
        loggers.log({"generation": 1, "return_mean": 2.5})
        loggers.close()
        assert _rows(run_dir / "metrics.csv") == [{"generation": "1", "return_mean": "2.5"}]


def test_a_column_that_appears_later_widens_the_header(tmp_path):
    path = tmp_path / "metrics.csv"
    record = CSVLogger(path)
    record.log({"generation": 1, "return_mean": 1.0})
    record.log({"generation": 2, "return_mean": 2.0, "loss": 0.5})
    record.log({"generation": 3, "loss": 0.25})
    assert _rows(path) == [
        {"generation": "1", "return_mean": "1.0", "loss": ""},
        {"generation": "2", "return_mean": "2.0", "loss": "0.5"},
        {"generation": "3", "return_mean": "", "loss": "0.25"},
    ]


def test_resume_drops_rows_past_the_checkpoint_and_keeps_appending(tmp_path):
    path = tmp_path / "metrics.csv"
    first = CSVLogger(path)
    for generation in (1, 2, 3):
        first.log({"generation": generation, "return_mean": float(generation)})
    resumed = CSVLogger(path)  # a new process after a crash, checkpoint at generation 2
    resumed.resumed(2)
    resumed.log({"generation": 3, "return_mean": 30.0})
    assert [(row["generation"], row["return_mean"]) for row in _rows(path)] == [
        ("1", "1.0"),
        ("2", "2.0"),
        ("3", "30.0"),
    ]
