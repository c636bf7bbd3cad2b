"""Self-play for the learners (``selfplay=pool``): an opponent pool of the learner itself,
its frozen past snapshots and scripted bots, drawn per game (uniform or AlphaStar's PFSP),
swapped only at a world's game end, every network-driven agent acting in one batched
forward of the learner and its snapshots, ratings and a tournament table per segment.
The pool, its ratings and bots are :mod:`neuroplug.opponents`' (coevolution's too).

- :mod:`.seats`: who plays which agent of each world, each game's scores and outcome;
- :mod:`.acting`: the learner's and its opponents' choices in one forward;
- :mod:`.league`: what the rollout loop calls (wrap the acting, keep the learner's own
  transitions, snapshot, report, checkpoint).
"""
