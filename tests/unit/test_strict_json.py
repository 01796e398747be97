"""Issue 36 item 9: the one strict JSON reader (rcjudge.strict_json), case by case.

Each refusal names the field where there is one and never echoes a long value; ``syntax``
tells "no acceptable JSON" (an API's 400) from "a value no column holds" (422).
"""

from __future__ import annotations

import io

import pytest

from rcjudge.errors import one_line, shown
from rcjudge.strict_json import INT_MAX, INT_MIN, StrictJsonError, load_stream, loads

RANGE = f"[{INT_MIN}, {INT_MAX}]"


@pytest.mark.parametrize(("raw", "field", "syntax", "reason"), [
    (b'{"task": {"tier": "A", "tier": "B"}}', "task.tier", True,
     "given twice in one object (which one counts is not defined)"),
    (b'{"env": {"lighting_k": Infinity}}', "env.lighting_k", True,
     "Infinity is not JSON (numbers must be finite)"),
    (b'{"body": {"mount_h_mm": NaN}}', "body.mount_h_mm", True,
     "NaN is not JSON (numbers must be finite)"),
    (b'{"a": [1, -Infinity]}', "a[1]", True, "-Infinity is not JSON (numbers must be finite)"),
    (b'{"x": 1e400}', "x", True, "number 1e400 is out of range (not a finite double)"),
    (b'{"body": {"dof": 1000000000000000000000000000000}}', "body.dof", False,
     f"integer of 31 digits is outside the 64-bit range {RANGE}"),
    (b'{"n": 9223372036854775808}', "n", False,
     f"integer 9223372036854775808 is outside the 64-bit range {RANGE}"),
    (b'{"n": -9223372036854775809}', "n", False,
     f"integer -9223372036854775809 is outside the 64-bit range {RANGE}"),
    (b'{"policy": {"name": "a\\u0000b"}}', "policy.name", False,
     "contains a NUL character at character 1"),
    (b'{"k": ["\\udc00"]}', "k[0]", False, "contains a lone surrogate U+DC00 at character 0 "
     "(text must be valid Unicode scalar values)"),
    (b'{"a\\nb": {"c": 1, "c": 2}}', "a\\nb.c", True,
     "given twice in one object (which one counts is not defined)"),
    (b"\xef\xbb\xbf{}", None, True, "a UTF-8 byte-order mark at the start: send UTF-8 "
     "without one"),
    ('{"a": 1}'.encode("utf-16"), None, True, "UTF-16 or UTF-32, not UTF-8 (it holds NUL "
     "bytes or a UTF-16 byte-order mark): send UTF-8"),
    ('{"a": 1}'.encode("utf-16-le"), None, True, "UTF-16 or UTF-32, not UTF-8 (it holds NUL "
     "bytes or a UTF-16 byte-order mark): send UTF-8"),
    (b'{"a": "\xc3"}', None, True, "invalid UTF-8 at byte 7"),
    (b"[" * 33 + b"]" * 33, None, True, "nested deeper than 32 levels"),
    (b"[" * 50000 + b"]" * 50000, None, True, "nested deeper than 32 levels"),
    (b'{"a": ', None, True, "Expecting value (line 1, column 7)"),
])
def test_refusals_name_the_field(raw, field, syntax, reason):
    with pytest.raises(StrictJsonError) as info:
        loads(raw)
    exc = info.value
    assert (exc.field, exc.syntax, exc.reason) == (field, syntax, reason)
    assert str(exc) == (f"{field}: {reason}" if field else reason)


def test_what_is_accepted():
    assert loads(b'{"a": [1, 2.5, -3e2, true, null, "\\ud83d\\ude00 \xea\xb0\x80"]}') == {
        "a": [1, 2.5, -300.0, True, None, "\U0001F600 \uac00"]}
    assert loads(f'{{"n": {INT_MAX}, "m": {INT_MIN}}}'.encode()) == {"n": INT_MAX, "m": INT_MIN}
    assert loads(b"[" * 32 + b"]" * 32) == eval("[" * 31 + "[]" + "]" * 31)


def test_size_limits_do_not_read_past_the_limit():
    with pytest.raises(StrictJsonError, match=r"^12 bytes, over the 10-byte limit$"):
        loads(b'{"a": "xyz"}', max_bytes=10)
    stream = io.BytesIO(b'{"a": "' + b"x" * 10_000 + b'"}')
    with pytest.raises(StrictJsonError, match=r"^more than 100 bytes \(the limit\)$"):
        load_stream(stream, max_bytes=100)
    assert stream.tell() == 101


def test_a_long_key_is_named_cut_and_a_long_value_never_echoed():
    with pytest.raises(StrictJsonError) as info:
        loads(('{"' + "k" * 100_000 + '": {"x": 1, "x": 2}}').encode())
    assert str(info.value) == "k" * 61 + "....x: given twice in one object (which one counts " \
                              "is not defined)"
    assert shown("v" * 1_000_000) == "'" + "v" * 56 + "..."


def test_one_line_escapes_controls_and_keeps_korean():
    assert one_line("a\nb\r\tc \x1b[2J \u2028 \ud800 배포 후보") == \
        "a\\nb\\r\\tc \\x1b[2J \\u2028 \\ud800 배포 후보"
