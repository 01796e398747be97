"""The explain page's contact table: every peak carries its unit (issue 40, small things)."""

from __future__ import annotations

import re
from html import unescape

from judge.bundle.events import ContactEvent
from judge.explain import contacts_table


def _cells(html: str) -> list[list[str]]:
    return [re.findall(r"<td[^>]*>(.*?)</td>", row)
            for row in re.findall(r"<tr class='contact'>(.*?)</tr>", html)]


def test_each_peak_is_shown_in_its_channels_unit() -> None:
    events = [ContactEvent(1.0, "grasp", 0.9, 2.0, 12.345, 12.345, "N"),
              ContactEvent(2.5, "impact", 2.4, 2.6, 6.2, 0.853, "Nm"),
              ContactEvent(3.0, "release", 2.0, 3.0, 41.04, 41.04, "mm")]
    html = contacts_table(events)
    assert [c[4] for c in _cells(html)] == ["12.35 N", "0.85 Nm (6.20 σ)", "41.04 mm"]
    assert "<th>peak</th>" in html
    assert ("peak: a force event's grip force (N); an impact's joint-effort residual (Nm) "
            "and its robust z-score (σ); a finger event's held opening (mm)") in unescape(html)
    assert "<td colspan=5>none</td>" in contacts_table([])
