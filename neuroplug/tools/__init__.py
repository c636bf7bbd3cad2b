"""What a user runs on a finished run: ``python -m neuroplug.tools.watch <run dir>`` plays its
policy and writes a video (:mod:`.video`), ``python -m neuroplug.tools.plot <dirs>`` draws
learning curves."""
