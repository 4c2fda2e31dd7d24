"""Large-batch replay on Dask against the in-process engine: throughput and peak memory, in one run.

    python benches/bench_dask.py [--rows 2000000] [--scopes N] [--workers 1,2] [--corpus PATH]
    python benches/bench_dask.py --single-scope [--limit N] [--max-rows-per-task M] [--workers 1,2]

Generates ``--rows`` writes from the shared PyPI corpus (else the bundled sample) spread over thousands
of scopes (skewed sizes, interleaved in time, a share of them restatements of an earlier write of the same
scope: case, punctuation, an added word, a typo), writes them as Parquet, then times the same job end to
end (read Parquet, replay, write Parquet) three ways:

- in-process: ``memdedup.batch.replay`` in one process, with 1 Rust thread and with every core;
- Dask: ``memdedup.dask.dedup`` on a ``LocalCluster`` of 1 and of 2 worker processes (1 thread each,
  ``RAYON_NUM_THREADS=1``), cluster start not counted.

It prints rows/s, the ratios to the in-process engine, and the peak RSS of each process (each Dask
worker's ``VmHWM``), and checks that every Dask result equals the in-process one row for row.

``--single-scope``: one scope of the corpus's first ``--limit`` labels (default: all), joined and
clustered (``mode="join"``): in-process (``batch.clusters``, 1 Rust thread), then on Dask with the
group split across tasks (``max_rows_per_task``, default half the labels: 4 blocks, 6 block-pair
joins) on 1 and 2 workers. It prints the wall time, each worker's CPU seconds and peak and final RSS
(``VmHWM``/``VmRSS``), where the worker time went, and whether the results are equal.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _corpus import default_corpus, read_labels


def _restate(rng: np.random.Generator, label: str) -> str:
    kind = rng.integers(5)
    if kind == 0:
        return label.lower() if label != label.lower() else label.upper()
    if kind == 1:
        return label.rstrip(".") + rng.choice([".", "!", " ."])
    if kind == 2:
        return label + " " + rng.choice(["too", "again", "as well", "(updated)"])
    if kind == 3 and len(label) > 4:
        k = int(rng.integers(1, len(label) - 1))
        return label[:k] + label[k + 1 :]
    return "  " + label


def generate(corpus: Path, rows: int, scopes: int, restate: float, seed: int = 8) -> dict[str, list]:
    """``rows`` writes over ``scopes`` scopes (Zipf-like sizes), in a random interleaving."""
    rng = np.random.default_rng(seed)
    labels_in = read_labels(corpus)
    weights = 1.0 / np.arange(1, scopes + 1) ** 0.8
    scope_of = rng.choice(scopes, size=rows, p=weights / weights.sum())
    fresh = rng.integers(len(labels_in), size=rows)
    again = rng.random(rows) < restate
    recent: dict[int, list[str]] = {}
    labels: list[str] = []
    for k in range(rows):
        s = int(scope_of[k])
        history = recent.setdefault(s, [])
        if again[k] and history:
            label = _restate(rng, history[int(rng.integers(len(history)))])
        else:
            label = labels_in[int(fresh[k])]
        if len(history) < 64:
            history.append(label)
        labels.append(label)
    names = [f"tenant:{s % 997}/user:{s}" for s in range(scopes)]
    return {"label": labels, "scope": [names[s] for s in scope_of]}


def write_parquet(data: dict[str, list], directory: Path, files: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(data)
    step = -(-table.num_rows // files)
    directory.mkdir(parents=True)
    for f in range(files):
        pq.write_table(table.slice(f * step, step), directory / f"part-{f:04d}.parquet", row_group_size=step)


def _peak_rss_mb() -> float:
    """This process's peak RSS since it started (or since :func:`_reset_peak_rss`), in MiB.

    Linux's ``VmHWM``, not ``ru_maxrss``: a process started by fork and exec (a Dask worker, whose nanny
    runs in this process; the in-process child) inherits its parent's RSS in ``ru_maxrss``."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _reset_peak_rss() -> None:
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")  # Linux >= 4.0: the peak RSS restarts from the current RSS
    except OSError:
        pass


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def in_process_child(src: Path, dst: Path) -> None:
    """Run in a fresh process (so ``RAYON_NUM_THREADS`` applies and the peak RSS is its own)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from memdedup import batch

    cpu = _cpu_seconds()
    start = time.perf_counter()
    table = pq.read_table(sorted(src.iterdir())[0].parent)
    labels, scopes = table.column("label").to_pylist(), table.column("scope").to_pylist()
    read = time.perf_counter()
    r = batch.replay(labels, scopes=scopes)
    replayed = time.perf_counter()
    out = pa.table(
        {"row_id": np.arange(len(labels)), "canonical": r.canonical, "reason": r.reason, "score": r.score}
    )
    pq.write_table(out, dst)
    done = time.perf_counter()
    print(
        json.dumps(
            {
                "seconds": done - start,
                "read": read - start,
                "replay": replayed - read,
                "peak_mb": _peak_rss_mb(),
                "cpu": _cpu_seconds() - cpu,
            }
        )
    )


def run_in_process(src: Path, dst: Path, threads: int | None) -> dict:
    env = dict(os.environ)
    if threads is not None:
        env["RAYON_NUM_THREADS"] = str(threads)
    else:
        env.pop("RAYON_NUM_THREADS", None)
    cmd = [sys.executable, __file__, "--in-process-child", str(src), str(dst)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_dask(src: Path, dst: Path, workers: int, npartitions: int | None) -> dict:
    import logging

    from distributed import get_task_stream
    from memdedup import dask as mdd

    logging.getLogger("distributed").setLevel(logging.ERROR)
    t0 = time.perf_counter()
    with mdd.local_client(workers, silence_logs=logging.ERROR) as client:
        client.run(importlib.import_module, "memdedup.dask")  # warm: imports pandas, pyarrow, the engine
        client.run(_reset_peak_rss)
        started = time.perf_counter() - t0
        cpu = client.run(_cpu_seconds)
        with get_task_stream(client) as stream:
            start = time.perf_counter()
            result = mdd.dedup(src, layer=None, npartitions=npartitions)
            surveyed = time.perf_counter()
            result[["row_id", "canonical", "reason", "score"]].to_parquet(dst)
            done = time.perf_counter()
        peaks = client.run(_peak_rss_mb)
        cpu = {w: c - cpu[w] for w, c in client.run(_cpu_seconds).items()}
    # Worker compute seconds by task kind: where the time goes.
    busy: dict[str, float] = {}
    for task in stream.data:
        key = task["key"] if isinstance(task["key"], str) else str(task["key"][0])
        kind = "dedup" if key.startswith("_dedup_partition") else key.split("-")[0]
        for span in task["startstops"]:
            if span["action"] == "compute":
                busy[kind] = busy.get(kind, 0.0) + span["stop"] - span["start"]
    return {
        "seconds": done - start,
        "survey": surveyed - start,
        "startup": started,
        "peak_mb": sorted(peaks.values()),
        "cpu": sorted(cpu.values()),
        "busy": sorted(busy.items(), key=lambda kv: -kv[1]),
    }


def _rss_mb() -> tuple[float, float]:
    """This process's ``(VmHWM, VmRSS)`` in MiB (Linux)."""
    found = {}
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(("VmHWM:", "VmRSS:")):
                found[line.split(":")[0]] = int(line.split()[1]) / 1024
    return found.get("VmHWM", math.nan), found.get("VmRSS", math.nan)


def join_child(src: Path, dst: Path) -> None:
    """The in-process single-scope join and clusters, in a fresh process (see :func:`in_process_child`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from memdedup import batch

    cpu = _cpu_seconds()
    start = time.perf_counter()
    labels = pq.read_table(src).column("label").to_pylist()
    read = time.perf_counter()
    c = batch.clusters(labels)
    clustered = time.perf_counter()
    out = pa.table(
        {"row_id": np.arange(len(labels)), "canonical": c.canonical, "reason": c.reason, "score": c.score}
    )
    pq.write_table(out, dst)
    done = time.perf_counter()
    print(
        json.dumps(
            {
                "seconds": done - start,
                "read": read - start,
                "clusters": clustered - read,
                "peak_mb": _peak_rss_mb(),
                "cpu": _cpu_seconds() - cpu,
            }
        )
    )


def run_dask_join(src: Path, dst: Path, workers: int, max_rows: int) -> dict:
    """The single-scope join on a fresh local cluster of ``workers`` processes, split by ``max_rows``."""
    import logging

    from distributed import get_task_stream
    from memdedup import dask as mdd

    logging.getLogger("distributed").setLevel(logging.ERROR)
    with mdd.local_client(workers, silence_logs=logging.ERROR) as client:
        client.run(importlib.import_module, "memdedup.dask")
        client.run(_reset_peak_rss)
        cpu = client.run(_cpu_seconds)
        with get_task_stream(client) as stream:
            start = time.perf_counter()
            result = mdd.dedup(src, mode="join", scope=None, layer=None, max_rows_per_task=max_rows)
            result[["row_id", "canonical", "reason", "score"]].to_parquet(dst)
            done = time.perf_counter()
        rss = client.run(_rss_mb)
        cpu = {w: c - cpu[w] for w, c in client.run(_cpu_seconds).items()}
    busy: dict[str, float] = {}
    tasks: dict[str, int] = {}
    for task in stream.data:
        key = task["key"] if isinstance(task["key"], str) else str(task["key"][0])
        kind = key.split("-")[0]
        tasks[kind] = tasks.get(kind, 0) + 1
        for span in task["startstops"]:
            if span["action"] == "compute":
                busy[kind] = busy.get(kind, 0.0) + span["stop"] - span["start"]
    workers_sorted = sorted(rss)
    return {
        "seconds": done - start,
        "peak_mb": [rss[w][0] for w in workers_sorted],
        "rss_mb": [rss[w][1] for w in workers_sorted],
        "cpu": [cpu[w] for w in workers_sorted],
        "busy": sorted(((k, v, tasks[k]) for k, v in busy.items()), key=lambda kv: -kv[1]),
    }


def single_scope(args: argparse.Namespace) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from memdedup import dask as mdd

    corpus = args.corpus or default_corpus()
    labels = read_labels(corpus, args.limit)
    n = len(labels)
    max_rows = args.max_rows_per_task or max(2, n // 2)
    blocks = mdd._blocks_for(n, max_rows)
    tasks = blocks * (blocks - 1) // 2 or 1
    with tempfile.TemporaryDirectory(prefix="bench_dask_join_") as tmp:
        src = Path(tmp) / "labels.parquet"
        pq.write_table(pa.table({"label": labels}), src)
        del labels
        print(
            f"one scope of {n:,} labels from {corpus.name}; max_rows_per_task {max_rows:,}: {blocks} blocks "
            f"of at most {-(-n // blocks):,} labels, {tasks} block-pair join tasks of at most "
            f"{2 * -(-n // blocks):,} labels each; {os.cpu_count()} CPUs, load average "
            f"{os.getloadavg()[0]:.1f} before the runs"
        )
        ref = Path(tmp) / "in-process.parquet"
        env = dict(os.environ, RAYON_NUM_THREADS="1")
        cmd = [sys.executable, __file__, "--join-child", str(src), str(ref)]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
        r = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"\n  {'engine':<26}{'seconds':>9}  {'CPU s':<13}  {'peak/final RSS MB':<21}  notes")
        print(
            f"  {'in-process, 1 thread':<26}{r['seconds']:>9.1f}  {r['cpu']:<13.1f}  {r['peak_mb']:<21.0f}  "
            f"read {r['read']:.1f} s, clusters {r['clusters']:.1f} s"
        )
        for w in (int(x) for x in args.workers.split(",")):
            out = Path(tmp) / f"dask-{w}"
            d = run_dask_join(src, out, w, max_rows)
            cpu = "/".join(f"{c:.1f}" for c in d["cpu"])
            rss = (
                "/".join(f"{p:.0f}" for p in d["peak_mb"]) + " | " + "/".join(f"{p:.0f}" for p in d["rss_mb"])
            )
            busy = ", ".join(f"{k.lstrip('_')} {v:.1f} s ({c})" for k, v, c in d["busy"][:4])
            label = f"dask split, {w} worker{'s' if w > 1 else ''}"
            print(
                f"  {label:<26}{d['seconds']:>9.1f}  {cpu:<13}  {rss:<21}  "
                f"equal: {'yes' if same_result(ref, out) else 'NO'}; worker s (tasks): {busy}"
            )
        print(
            "\n  seconds: wall clock of read, join, clusters, write Parquet (Dask: cluster start excluded);"
            "\n  CPU s and RSS per process (each Dask worker: VmHWM since warm | VmRSS at the end)."
        )


def same_result(reference: Path, other: Path) -> bool:
    import pandas as pd

    a = pd.read_parquet(reference).sort_values("row_id").reset_index(drop=True)
    b = pd.read_parquet(other).sort_values("row_id").reset_index(drop=True)
    return (
        len(a) == len(b)
        and np.array_equal(a["row_id"].to_numpy(), b["row_id"].to_numpy())
        and np.array_equal(a["canonical"].to_numpy(), b["canonical"].to_numpy())
        and a["reason"].astype(str).tolist() == b["reason"].astype(str).tolist()
        and np.array_equal(a["score"].to_numpy(float), b["score"].to_numpy(float), equal_nan=True)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--scopes", type=int, help="default: rows / 500, at least 1000")
    parser.add_argument("--restate", type=float, default=0.25, help="share of restatement writes (0.25)")
    parser.add_argument("--workers", default="1,2", help="Dask cluster sizes to time (1,2)")
    parser.add_argument("--files", type=int, help="Parquet files (default: one per 100,000 rows)")
    parser.add_argument("--npartitions", type=int, help="partitions after the shuffle (default: as read)")
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument("--single-scope", action="store_true", help="one scope's join, split across workers")
    parser.add_argument(
        "--limit", type=int, help="--single-scope: the corpus's first N labels (default: all)"
    )
    parser.add_argument("--max-rows-per-task", type=int, help="--single-scope: default half the labels")
    args = parser.parse_args()
    if args.single_scope:
        single_scope(args)
        return
    scopes = args.scopes or max(1000, args.rows // 500)
    corpus = args.corpus or default_corpus()
    files = args.files or max(2, args.rows // 100_000)

    with tempfile.TemporaryDirectory(prefix="bench_dask_") as tmp:
        tmp_path = Path(tmp)
        t = time.perf_counter()
        data = generate(corpus, args.rows, scopes, args.restate)
        write_parquet(data, tmp_path / "in", files)
        sizes = np.unique(data["scope"], return_counts=True)[1]
        del data
        print(
            f"{args.rows:,} rows over {scopes:,} scopes (largest {sizes.max():,}, "
            f"median {int(np.median(sizes))}), {files} Parquet files, from {corpus.name}; "
            f"generated in {time.perf_counter() - t:.1f} s; {os.cpu_count()} CPUs, "
            f"load average {os.getloadavg()[0]:.1f} before the runs"
        )
        rows = []
        ref = tmp_path / "in-process.parquet"
        base = None
        for threads in (1, None):
            r = run_in_process(tmp_path / "in", ref, threads)
            base = base or r["seconds"]
            label = f"in-process, {threads or os.cpu_count()} Rust thread{'s' if threads != 1 else ''}"
            note = f"read {r['read']:.1f} s, replay {r['replay']:.1f} s"
            rows.append((label, r["seconds"], f"{r['cpu']:.1f}", f"{r['peak_mb']:.0f}", note))
        for n in (int(w) for w in args.workers.split(",")):
            out = tmp_path / f"dask-{n}"
            r = run_dask(tmp_path / "in", out, n, args.npartitions)
            ok = same_result(ref, out)
            peaks = "/".join(f"{p:.0f}" for p in r["peak_mb"])
            cpu = "/".join(f"{c:.1f}" for c in r["cpu"])
            busy = ", ".join(f"{kind} {sec:.1f}" for kind, sec in r["busy"][:3])
            note = (
                f"equal: {'yes' if ok else 'NO'}; survey {r['survey']:.1f} s, startup {r['startup']:.1f} s; "
                f"worker s: {busy}"
            )
            rows.append((f"dask, {n} worker{'s' if n > 1 else ''}", r["seconds"], cpu, peaks, note))
        header = f"{'engine':<28}{'seconds':>9}{'rows/s':>11}{'vs in-process, 1 thread':>25}"
        print(f"\n  {header}  {'CPU s':<11}  {'peak RSS MB':<11}  notes")
        for label, seconds, cpu, peak, note in rows:
            speed = f"{args.rows / seconds:>11,.0f}{base / seconds:>24.2f}x"
            print(f"  {label:<28}{seconds:>9.1f}{speed}  {cpu:<11}  {peak:<11}  {note}")
        print(
            "\n  seconds: wall clock of read Parquet, dedup, write Parquet (Dask: cluster start excluded);"
            "\n  CPU s, peak RSS (VmHWM): per process: the in-process run; each Dask worker, from warm."
        )


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--in-process-child":
        in_process_child(Path(sys.argv[2]), Path(sys.argv[3]))
    elif len(sys.argv) == 4 and sys.argv[1] == "--join-child":
        join_child(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        main()
