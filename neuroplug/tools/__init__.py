"""What a user runs on a finished run: ``python -m neuroplug.tools.watch <run dir>`` plays its
policy and writes a video (:mod:`.video`), ``python -m neuroplug.tools.plot <dirs>`` draws
learning curves, ``python -m neuroplug.tools.compare <dirs>`` tells groups of runs apart with
statistics over seeds (:mod:`.comparison`). Both read the runs through :mod:`.runs` and get
their confidence intervals from :mod:`.intervals`."""
