"""First-party schedulers, registered through the ``neuroplug.schedulers`` entry point group."""
