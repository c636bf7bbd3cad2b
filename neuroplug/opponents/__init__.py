"""Opponents in multi-agent worlds, shared by the learners' self-play
(:mod:`neuroplug.rl.self_play`) and the evolution family's coevolution
(:mod:`neuroplug.evolution.coevolution`).

- :mod:`.pool`: the learner (or population), its frozen snapshots and scripted bots, drawn
  per game (uniform or AlphaStar's PFSP), their games and ratings, the tournament table;
- :mod:`.ratings`: OpenSkill's model;
- :mod:`.seating`: which agents a player takes, who won a game;
- :mod:`.bots`: scripted opponents;
- :mod:`.matches`: two players' games with a confidence interval (``neuroplug.tools.match``,
  evaluations against ``selfplay.eval_opponent``).
"""
