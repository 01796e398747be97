"""Physics rollouts: MuJoCo + Meta-World scripted experts, perturbed, written as bundles.

Stages, one module each: ``tasks`` (catalog) → ``perturb`` (what is injected) →
``physics`` (the rollout and its trace; the only module that imports the simulator) →
``labels`` (attempt / success / failure class from the trace) → ``generate`` (bundles,
sets, workers) → ``truth_labels`` (operator-label files from ``truth.json``). ``cameras``
draws the camera poses; ``deps`` knows what the ``sim`` extra needs. Importing this
package never imports MuJoCo or Meta-World. See ``docs/sim.md``.
"""
