"""First-party backends, registered through the ``neuroplug.backends`` entry point group."""
