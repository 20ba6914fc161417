"""The on-disk journal of finished work units, so an interrupted run can resume.

One JSON line per finished unit (``{"key": [...], "result": ..., "seconds": t}``) after a
header line naming the experiment, its configuration and the seed.  Lines are appended
and flushed as units finish, so killing the run loses at most the units in flight; a
truncated last line is ignored when the journal is read back.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

__all__ = ["Journal", "to_jsonable"]

_FORMAT = 1


def to_jsonable(obj):
    """``obj`` with tuples, numpy scalars and arrays turned into JSON types."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if hasattr(obj, "tolist"):  # numpy arrays and scalars
        return to_jsonable(obj.tolist())
    if isinstance(obj, float) and not math.isfinite(obj):
        return obj  # json writes NaN / Infinity and reads them back
    return obj


def _key(value):
    return tuple(_key(v) if isinstance(v, list) else v for v in value)


class Journal:
    """Append-only record of ``key -> result`` for one (experiment, configuration, seed)."""

    def __init__(self, path, experiment, config, seed, ignores=()):
        self.path = Path(path)
        self.header = {"format": _FORMAT, "experiment": experiment,
                       "config": to_jsonable(config), "seed": seed}
        self.ignores = tuple(ignores)
        self._fh = None

    def _comparable(self, header):
        header = json.loads(json.dumps(header))
        header["config"] = {k: v for k, v in header.get("config", {}).items()
                            if k not in self.ignores}
        return header

    def load(self):
        """``({key: result}, {key: seconds})`` of the units already in the journal.

        Raises ``ValueError`` if the journal was written for another configuration or
        seed (resuming it would mix two experiments)."""
        if not self.path.exists():
            return {}, {}
        with open(self.path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
        if not lines:
            return {}, {}
        try:
            header = json.loads(lines[0])
        except json.JSONDecodeError:
            raise ValueError(f"{self.path} is not a results journal.") from None
        # compare through JSON so that tuples and lists, ints and floats match as written
        if self._comparable(self.header) != self._comparable(header):
            raise ValueError(
                f"{self.path} holds results of another configuration or seed "
                f"({header.get('config')}, seed {header.get('seed')}); remove it or run "
                f"without resume.")
        results, seconds = {}, {}
        for line in lines[1:]:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short when the run was killed
            key = _key(record["key"])
            results[key] = record["result"]
            seconds[key] = record.get("seconds", float("nan"))
        return results, seconds

    def start(self, fresh):
        """Open for appending; ``fresh`` starts a new journal (an existing one is renamed
        to ``<name>.bak``) and writes the header."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if fresh and self.path.exists() and self.path.stat().st_size > 0:
            # never destroy finished work: the previous journal is kept beside the new one
            self.path.replace(self.path.with_name(self.path.name + ".bak"))
        if fresh or not self.path.exists() or self.path.stat().st_size == 0:
            self._fh = open(self.path, "w", encoding="utf-8")
            self._fh.write(json.dumps(self.header) + "\n")
            self._fh.flush()
        else:
            with open(self.path, "rb") as fh:
                fh.seek(-1, 2)
                ends_clean = fh.read(1) == b"\n"
            self._fh = open(self.path, "a", encoding="utf-8")
            if not ends_clean:  # finish a line cut short so the next record stands alone
                self._fh.write("\n")
        return self

    def add(self, key, result, seconds):
        line = json.dumps({"key": to_jsonable(key), "result": to_jsonable(result),
                           "seconds": float(seconds)})
        self._fh.write(line + "\n")
        self._fh.flush()

    def close(self):
        if self._fh is not None:
            self._fh.close()
            self._fh = None
