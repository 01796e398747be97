"""Inspect: what is in a bundle, for a person debugging it (like ``mcap info``).

Runs intake, reads the streams, detects contacts and computes the sampled
timestamps exactly as judging would (inside the span every camera covers), with the
contact and sampling settings of
``configs/sampling.yaml``, or of a judge version (``--judge``); the only pictures decoded are
each camera's first (for its resolution, as stored: a rotated camera shows its upright size).
Each contact's peak is given in its channel's unit (N, Nm, mm) beside the robust z-score
of an impact.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from judge.bundle.contacts import DETECTORS, contact_detector, impact_floor
from judge.bundle.decode import frame_size, load_streams
from judge.bundle.intake import intake
from judge.bundle.sample import common_span, plan_targets, span_warning
from judge.bundle.streams import GRIPPER_META
from judge.config import sampling_config


def inspect_bundle(uri: str, judge: str | None = None) -> dict[str, Any]:
    """A JSON-ready report of the bundle at ``uri``, contacts found with the settings of the
    judge version ``judge`` (a name or YAML file; default ``configs/sampling.yaml``)."""
    settings, source = sampling_config(), "configs/sampling.yaml"
    if judge is not None:
        from judge.ensemble.version import load_judge_version

        version = load_judge_version(judge)
        settings, source = version.sampling_settings(), f"judge version {version.name}"
    bundle = intake(uri)
    streams = load_streams(bundle)
    contacts, targets = plan_targets(streams, settings)
    from judge.bundle.fingers import gripper_warnings
    from judge.config import resolve_gripper

    record = streams.metadata.get(GRIPPER_META)
    gripper = resolve_gripper(record)
    warnings = gripper_warnings(streams.signals, gripper, settings.contacts.force_on_n,
                                settings.fingers)
    floor_nm, floor_from = impact_floor(settings.contacts, gripper)
    if floor_from == "gripper profile":
        floor_from = (f"gripper profile {record['profile']}" if "profile" in record
                      and "impact_min_nm" not in record else "the bundle's gripper record")
    elif floor_from == "settings":
        floor_from = source
    else:
        floor_from = None
    from judge.tasks import catalog, unknown_message

    if bundle.attribution.task.id not in catalog():  # judging would refuse it
        warnings.append(unknown_message(bundle.attribution.task.id))
    if spans := span_warning(streams.videos):
        warnings.append(spans)
    duration = streams.duration_s
    cameras = {}
    for name, v in sorted(streams.videos.items()):
        keys = v.t[v.keyframe]
        width, height = frame_size(v)
        cameras[name] = {
            "width": width, "height": height,
            "source": "mp4" if name in bundle.sidecars else "mcap",
            "frames": len(v.t), "fps": round(v.fps, 3), "keyframes": int(v.keyframe.sum()),
            "keyframe_interval_s": round(float(np.median(np.diff(keys))), 3) if len(keys) > 1
            else None,
            "first_t": round(float(v.t[0]), 3), "last_t": round(float(v.t[-1]), 3),
            "bytes": sum(len(d) for d in v.data),
        }
    s = streams.signals
    rates = {f"/camera/{n}": c["fps"] for n, c in cameras.items()}
    rates.update({"/joint_states": s.rate_hz,
                  "/gripper": (len(s.gripper_t) - 1) / float(s.gripper_t[-1] - s.gripper_t[0])
                  if len(s.gripper_t) > 1 else 0.0})
    return {
        "bundle": uri,
        "bundle_hash": bundle.bundle_hash,
        "files": [f.model_dump() for f in bundle.manifest.files],
        "task": bundle.attribution.task.model_dump(),
        "duration_s": round(duration, 3),
        "common_span_s": [round(x, 3) for x in common_span(streams.videos)],
        "channels": [{"topic": c.topic, "schema": c.schema, "encoding": c.encoding,
                      "messages": c.messages,
                      "rate_hz": round(rates.get(c.topic, 0.0), 2) or None}
                     for c in streams.channels],
        "cameras": cameras,
        "signals": {"joints": list(s.joint_names), "rate_hz": round(s.rate_hz, 2),
                    "samples": len(s.t), "gripper_samples": len(s.gripper_t)},
        "gripper": streams.metadata.get(GRIPPER_META),  # the profile record, None without
        "warnings": warnings,
        "contact_settings": {"from": source, **settings.contacts.model_dump()},
        "contact_detector": contact_detector(gripper),
        "impact_floor": {"nm": floor_nm, "from": floor_from},  # from: None without one
        "contacts": [c.as_dict() for c in contacts],
        "sampled_timestamps": [round(float(t), 4) for t in targets],
    }


def format_report(r: dict[str, Any]) -> str:
    """Human-readable text of :func:`inspect_bundle`'s report."""
    lines = [f"bundle:    {r['bundle']}", f"hash:      {r['bundle_hash']}",
             f"task:      {r['task']['id']} (tier {r['task']['tier']})",
             f"duration:  {r['duration_s']:.3f} s", "channels:"]
    width = max(len(c["topic"]) for c in r["channels"])
    for c in r["channels"]:
        lines.append(f"  {c['topic']:<{width}}  {c['messages']:>6} msgs  "
                     f"{c['rate_hz'] or 0:>7.2f} Hz  {c['schema']} [{c['encoding']}]")
    lines.append("cameras:")
    cw = max((len(n) for n in r["cameras"]), default=0)
    for name, c in r["cameras"].items():
        lines.append(f"  {name:<{cw}}  {c['width']}x{c['height']:<5} {c['frames']:>5} frames  "
                     f"{c['fps']:>6.2f} fps  "
                     f"keyframe every {c['keyframe_interval_s']} s  ({c['source']})")
    lines.append(f"signals:   {len(r['signals']['joints'])} joints at "
                 f"{r['signals']['rate_hz']} Hz")
    if r.get("gripper"):
        fields = ", ".join(f"{k}={v}" for k, v in r["gripper"].items())
        lines.append(f"gripper:   {fields} (docs/contacts.md)")
    cs, floor = r["contact_settings"], r["impact_floor"]
    lines.append(f"contacts:  {len(r['contacts'])} from the {DETECTORS[r['contact_detector']]}"
                 f"; settings of {cs['from']}")
    lines.append(f"impacts:   from {cs['impact_on_sigma']:g} robust sigmas and " + (
        f"{floor['nm']:g} Nm ({floor['from']})" if floor["from"] else "no physical floor (set "
        "impact_min_nm in the gripper profile or the judge version, docs/contacts.md)"))
    for c in r["contacts"]:
        z = f" ({c['peak']:.1f} robust sigmas)" if c["kind"] == "impact" else ""
        lines.append(f"  {c['t']:>8.3f} s  {c['kind']:<8} peak {c['peak_value']:.2f} "
                     f"{c['unit']}{z}")
    lines += [f"warning:   {w}" for w in r["warnings"]]
    ts = ", ".join(f"{t:.2f}" for t in r["sampled_timestamps"])
    lines.append(f"sampled:   {len(r['sampled_timestamps'])} per camera: {ts}")
    return "\n".join(lines)
