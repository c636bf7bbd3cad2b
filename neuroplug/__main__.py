"""``python -m neuroplug``."""

from neuroplug.cli import main

if __name__ == "__main__":
    main()
