"""First-party algorithms, registered through the ``neuroplug.algorithms`` entry point group."""
