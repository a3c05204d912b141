"""Print mutmut's kill rate per module and in all, from the results of the
last `mutmut run` (run by `make mutate` in build/mutate)."""

import json
import subprocess
import sys
from collections import Counter, defaultdict


def statuses():
    """(module, mutant name, status) of every mutant mutmut knows."""
    listing = subprocess.run(
        [sys.executable, "-m", "mutmut", "results", "--all", "true"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    for line in listing.splitlines():
        name, _, status = line.strip().rpartition(": ")
        if name:
            yield name.split(".x")[0], name, status


def main():
    per_module = defaultdict(Counter)
    for module, _, status in statuses():
        per_module[module][status] += 1
    total = Counter()
    for module, counts in sorted(per_module.items()):
        total.update(counts)
        print(f"{module:50} {score(counts)}")
    print(f"{'all core modules':50} {score(total)}")
    print(json.dumps(dict(total)))


def score(counts):
    """Killed (a timeout is a kill) of every mutant tried: a mutant no test
    reaches counts as survived. Those a stopped run never reached ("not
    checked") are said apart, so a partial run still gives its rate."""
    waiting = counts["not checked"]
    tried = sum(counts.values()) - counts["skipped"] - waiting
    killed = counts["killed"] + counts["timeout"]
    rate = 100 * killed / tried if tried else 0.0
    left = f", {waiting} not run yet" if waiting else ""
    return f"{killed:4}/{tried:<4} killed ({rate:.1f}%){left}"


if __name__ == "__main__":
    main()
