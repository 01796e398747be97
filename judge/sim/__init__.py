"""Physics rollouts: MuJoCo + Meta-World scripted experts, perturbed, written as bundles.

Stages, one module each: ``tasks`` (catalog) → ``perturb`` (what is injected) →
``physics`` (the rollout and its trace; the only module that imports the simulator) →
``labels`` (attempt / success / failure class from the trace) → ``generate`` (bundles,
sets, workers) → ``truth_labels`` (operator-label files from ``truth.json``). ``cameras``
draws the camera poses; ``deps`` knows what the ``sim`` extra needs. Importing this
package never imports MuJoCo or Meta-World. See ``docs/sim.md``.

Product code of ``judge`` (``rcjudge sim`` and ``rcjudge truth-labels``; the loop of
docs/judge-quality.md runs on it): it writes bundles through ``judge.bundle.create`` and
labels with ``judge.bundle.events``, and never imports ``bench`` (``tests/unit/
test_imports.py``); the benchmarks in ``bench/`` use it.
"""
