"""First-party learners, registered through the ``neuroplug.learners`` entry point group."""
