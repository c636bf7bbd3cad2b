"""``python -m neuroplug``."""

from neuroplug.cli import run

if __name__ == "__main__":
    run()
