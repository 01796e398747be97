"""Pre-flight: what must hold before a batch or a training run starts (``rcjudge doctor``).

``rows`` holds the checks, each a small function from a :class:`rows.Context` to rows
(name, ok|warn|fail, detail); ``doctor`` runs the list of them (``doctor.CHECKS``) as the
``rcjudge doctor`` table and as the refusal ``rcjudge batch`` and ``rcjudge train`` give
first, so the table and the refusals agree. ``cli`` registers ``doctor`` and
``models fetch``.
"""
