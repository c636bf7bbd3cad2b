"""What every plugin's config is built from, importing no torch: :mod:`.bases` (the base
each kind's ``config_class`` derives from, exported by :mod:`neuroplug.api`) and
:mod:`.presets` (the published reference settings a learner's unset values take, per kind
of task)."""
