"""What a run takes from the machine and the process: devices and thread counts
(:mod:`.devices`; the helper processes whose CPU time is the run's own,
:mod:`.own_processes`), the run's named random streams (:mod:`.seeds`) and the signals that
stop it cleanly (:mod:`.stop_signals`)."""
