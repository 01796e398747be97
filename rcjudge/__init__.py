"""rcjudge: the floor every package stands on, and the shell on top of them all.

The packages sit in three layers; imports point down only (``tests/unit/test_imports.py``
parses every import, function-local ones included, and holds these rules):

==========  ==========================================  =====================================
layer       modules                                     may import
==========  ==========================================  =====================================
shell       ``rcjudge.cli`` (the one entry point),      everything; imported by nothing
            ``rcjudge.serve`` (one server),             below (``bench`` and tests run it)
            ``rcjudge.client`` (the SDK)
packages    ``judge``, ``models``, ``verdict``          the floor; ``judge`` also ``models``
                                                        (``models`` and ``verdict`` import no
                                                        other package: DESIGN's table)
floor       ``rcjudge.errors`` (the error root),        the standard library, third-party
            ``rcjudge.aliases`` (old spellings),
            ``rcjudge.home`` (where files live),        libraries and one another: never a
            ``rcjudge.pages`` (explain page names),     package above, nor the shell
            ``rcjudge.progress`` (progress lines),
            ``rcjudge.strict_json`` (the JSON reader)
==========  ==========================================  =====================================

``bench`` sits above the shell (it runs the CLI in-process). The floor stays in this
package, where every package and the docs already name it (``rcjudge.errors.RcjudgeError``
is what a caller catches), and the shell stays its entry points: a new module of
``rcjudge`` joins one of :data:`FLOOR` and :data:`SHELL`, and the test refuses one in
neither. Nothing is imported here, so importing a floor module loads no shell module.
"""

#: The modules every package may import; they import no package above and no shell module.
FLOOR = ("aliases", "errors", "home", "pages", "progress", "strict_json")
#: The modules on top: they may import every package; only ``bench`` and tests import them.
SHELL = ("cli", "serve", "client")
