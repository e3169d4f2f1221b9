"""Plugins shipped with policy-scheduler and registered like any third-party plugin.

Each module here is written against the public API alone (:mod:`policy_scheduler.framework`)
and is found through this project's own entry points (``pyproject.toml``,
``[project.entry-points."policy_scheduler.plugins"]``), the way an installed package's
plugins are found: nothing in the scheduler names them.

* :mod:`.coscheduling`: ``Coscheduling``, scheduler-plugins' gang scheduling with its
  PodGroup CRD (``docs/gang-scheduling.md``).
"""
