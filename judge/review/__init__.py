"""The review queue's page: people label the runs the queue picks (``docs/review.md``).

``judge.learn.select`` ranks the runs; this package shows one at a time in a browser and
stores what a person says as an operator label: ``store`` (the label and what the queue
knew of it, undo), ``card`` (one run's evidence from the explain view's pieces), ``page``
(the HTML and its keyboard), ``routes`` (HTTP, with the API's keys or a local operator),
``reach`` (the runs a key reviews: its own and its datasets'), ``queue`` (why a queue is
empty), ``cli`` (``rcjudge review serve``).
"""
