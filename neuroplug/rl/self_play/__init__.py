"""Self-play for the learners (``selfplay=pool``): an opponent pool of the learner itself,
its frozen past snapshots and scripted bots, drawn per game (uniform or AlphaStar's PFSP),
swapped only at a world's game end, every network-driven agent acting in one batched
forward of the learners and their snapshots, ratings and a tournament table per segment.
The pool, its ratings and bots are :mod:`neuroplug.opponents`' (coevolution's too).

- :mod:`.seats`: who plays which agent of each world, each game's scores and outcome;
- :mod:`.seating`: a league's worlds where they are stepped (here or on a Ray actor):
  seats, each world's draws, the records of the games played;
- :mod:`.acting`: the learner's and its opponents' choices in one forward, bound to the
  seatings of the process that steps the envs;
- :mod:`.league`: a learner's pool, results and ratings, the seatings' records booked
  (snapshot, report, checkpoint);
- :mod:`.leagues`: what the rollout loop calls: one league per learner (a population's
  members each over their own envs), the acting wrapped, each learner's own transitions
  kept.
"""
