"""What each version of the plugin contract (:data:`neuroplug.api.CONTRACT_VERSION`)
changed, in one sentence per version: the message a plugin written for an older version
gets when it is refused. CHANGELOG.md tells the same in full."""

from __future__ import annotations

CONTRACT_CHANGES: dict[int, str] = {
    2: (
        "learners: LearnerConfig fields left None take the reference setting for the task "
        "(LearnerConfig.presets), a config checks itself in check() rather than "
        "__post_init__, and a learner's model gives its deployed policy as policy_vector()"
    ),
    3: (
        "American spelling (EvaluationRequest.behavior, neuroplug.behaviors, the 'center' "
        "of ES states); the ES step and the PPO loss and update left the core for their "
        "plugins (neuroplug_algorithms.es, neuroplug_learners.ppo); one Adam, "
        "neuroplug.adam.FlatAdam (neuroplug.evolution.adam and neuroplug.rl.flat_adam "
        "are gone); a loss hands the actor-critic neuroplug.rl.actor_critic."
        "OutputGradients; the neuroplug.schedulers alias of neuroplug.engine is gone; the "
        "core's neuroplug.algorithms is neuroplug.evolution and neuroplug.learners is "
        "neuroplug.rl (the entry-point groups keep their names)"
    ),
    4: (
        "one learner loop: a lone learner is a population of one (neuroplug.rl.engine); a "
        "SegmentLearner writes learn_rollout() (abstract) instead of _train(), acts only "
        "through its population_acting() (neuroplug.rl.acting.Acting, was "
        "neuroplug.rl.population_acting.PopulationActing: act(observations, rows, states, "
        "generator) returns an Acted), and overrides segment_loop() to learn while it "
        "samples; SegmentLearner.act, sample() and shard_acting() are gone; samplers follow "
        "neuroplug.api.LearnerSampler (rollout(acting, length)); presets, Preset and "
        "Mutable live in neuroplug.presets (was neuroplug.rl.presets; neuroplug.api still "
        "exports Preset and Mutable); the PPO update is neuroplug_learners.ppo_update; "
        "settings name what they size: LearnerContext.env_threads and "
        "SamplerRequest.env_threads (were num_threads), scheduler.env_threads and "
        "backend.torch_threads; neuroplug.replay is neuroplug.watch"
    ),
    5: (
        "learners count segments, not generations: Learner.segments (was "
        "Learner.generation) grows by one in each train_segment(); a learner's state_dict(), "
        "the run's checkpoint and metrics.csv call it 'segment', as do a Segment's table rows"
    ),
}
"""Contract version -> what it changed."""

CHANGED_KINDS: dict[int, tuple[str, ...]] = {
    2: ("learners",),
    4: ("learners", "schedulers"),
    5: ("learners",),
}
"""The plugin kinds (:data:`neuroplug.registry.KINDS`) a version changed, where it changed
only some: a plugin of another kind written for the version before still loads."""


def contract_changes_since(version: int, kind: str | None = None) -> str:
    """The changes a plugin written for ``version`` has to catch up on, as one sentence
    ("" when none): those of every kind, or those that touch ``kind``."""
    return "; ".join(
        f"{number}: {change}"
        for number, change in sorted(CONTRACT_CHANGES.items())
        if number > version and (kind is None or kind in CHANGED_KINDS.get(number, (kind,)))
    )


def saved_count(state: dict, key: str) -> int:
    """The completed units (``key``: ``generation`` or ``segment``) a saved state records.
    A learner's state saved before contract 5 counted its segments under ``generation``:
    such a checkpoint still resumes."""
    return int(state[key] if key in state else state["generation"])
