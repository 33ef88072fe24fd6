#!/usr/bin/python3
"""summarize.py -- results.json (run.py's per-rank measurements) as a markdown table.

    /usr/bin/python3 bench/accuracy/dist/summarize.py [results.json]

Columns: case, held out, world size, per-rank peak_allocated (bytes), the phase of the peak,
the single-process peak of the same model/batch/optimizer (engine 'single', when measured),
the difference, DDP's bucket sizes after the rebuild (bytes) and, for ZeRO, the numel of the
parameters whose optimizer state each rank owns.  Only arithmetic on measured numbers.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv):
    path = argv[0] if argv else os.path.join(HERE, "results.json")
    with open(path) as f:
        recs = json.load(f)["records"]
    by_case = {}
    for r in recs:
        by_case.setdefault(r["case"], []).append(r)
    single = {}
    for cid, rs in by_case.items():
        c = rs[0]["config"]
        if c["engine"] == "single":
            single[(c["model"], c.get("input"), c["batch"], c["optim"])] = rs[0]["peak_allocated"]
    print("| case | held out | ranks | peak per rank (B) | peak phase | single process (B) | rank max - single (B) "
          "| DDP buckets after rebuild (B) | ZeRO partition numel per rank |")
    print("|---|---|---|---|---|---|---|---|---|")
    for cid, rs in by_case.items():
        rs = sorted(rs, key=lambda r: r["rank"])
        c = rs[0]["config"]
        ref = single.get((c["model"], c.get("input"), c["batch"], c["optim"]))
        peaks = [r["peak_allocated"] for r in rs]
        ddp = rs[0].get("ddp") or {}
        zero = rs[0].get("zero") or {}
        print("| %s | %s | %d | %s | %s | %s | %s | %s | %s |" % (
            cid, "yes" if rs[0]["held_out"] else "", len(rs), " / ".join("{:,}".format(p) for p in peaks),
            " / ".join(sorted(set(r["peak_phase"] for r in rs))),
            "{:,}".format(ref) if ref is not None else "",
            "{:+,}".format(max(peaks) - ref) if ref is not None and c["engine"] != "single" else "",
            ddp.get("rebuilt_bucket_sizes") or ddp.get("bucket_sizes") or "",
            " / ".join("{:,}".format(n) for n in zero.get("partition_numel", []))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
