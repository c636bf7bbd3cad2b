"""Small multi-agent games shipped with neuroplug, cheap enough to train on a laptop's CPU in
minutes: what self-play's tests and evidence run on (:mod:`.pong_duel`)."""
