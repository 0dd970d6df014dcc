"""Timing and reporting shared by the benchmarks."""
import os
import statistics

import torch


def captured(run, sets, calls):
    """run(0), run(1), .. (calls of them, over the input sets) captured in one CUDA graph:
    its replay, or None when a call cannot be captured."""
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            for i in range(calls):
                run(i % sets)
    except (RuntimeError, AssertionError):
        torch.cuda.synchronize()
        return None
    graph.replay()
    torch.cuda.synchronize()
    return graph.replay


def time_ms(run, sets, batches=7, per_batch=10, warmup=5, graph=False):
    """Median per-call time of run(i) over input sets i = 0..sets-1, in ms. With `graph`,
    each batch is one replay of a CUDA graph of its calls, so that kernels shorter than
    their launch from Python (a few tokens through a projection: 10-30 us) are timed
    back to back on the GPU rather than waiting on the host (eager when the capture fails).
    graph="best": the lower of the eager and the graph time (a library whose eager calls
    overlap, as cuDNN's convolutions did, keeps that; a call slower from Python than on
    the GPU is timed on the GPU)."""
    if graph == "best":
        return min(time_ms(run, sets, batches, per_batch, warmup, graph=False),
                   time_ms(run, sets, batches, per_batch, warmup, graph=True))
    for i in range(warmup):
        run(i % sets)
    torch.cuda.synchronize()
    replay = captured(run, sets, per_batch) if graph else None
    times = []
    for _ in range(batches):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        if replay:
            replay()
        else:
            for i in range(per_batch):
                run(i % sets)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / per_batch)
    return statistics.median(times)


def time_interleaved_ms(runs, sets, batches=15, per_batch=10, warmup=5, graph=False):
    """Median per-call times in ms of several runs ({name: run(i)}) timed in alternating
    batches: batch b of each run before batch b + 1 of any, so that every run sees the same
    GPU state (a large GEMM draws enough power to lower the clocks within a run; cuBLAS's
    8192^3 f16 GEMM took 1.53 ms timed alone in a full run and 1.70-1.72 ms in batches
    alternating with ours in a lab the same day, on other random inputs). Odd batches go in
    reverse order, so that no run always follows the same one.
    `graph` as for time_ms: a batch is one replay of a CUDA graph of its calls (eager where
    the capture fails); "best": each run's lower of the eager and the graph time."""
    if graph == "best":
        eager = time_interleaved_ms(runs, sets, batches, per_batch, warmup, graph=False)
        graphs = time_interleaved_ms(runs, sets, batches, per_batch, warmup, graph=True)
        return {name: min(eager[name], graphs[name]) for name in runs}
    for run in runs.values():
        for i in range(warmup):
            run(i % sets)
    torch.cuda.synchronize()
    batch_of = {}
    for name, run in runs.items():
        replay = captured(run, sets, per_batch) if graph else None
        batch_of[name] = replay or (lambda run=run: [run(i % sets) for i in range(per_batch)])
    times = {name: [] for name in runs}
    order = list(batch_of.items())
    for b in range(batches):
        # every other batch in reverse, so that no run always follows the same one
        for name, batch in (order if b % 2 == 0 else order[::-1]):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            batch()
            end.record()
            end.synchronize()
            times[name].append(start.elapsed_time(end) / per_batch)
    return {name: statistics.median(t) for name, t in times.items()}


def add_checked_kernels(runs, names, call_of, outs, ref, label):
    """A lab's kernels: runs[name] = call_of(name, i) for each of `names`, each called once
    first and its output outs[name] printed with its status and error against `ref`."""
    for name in names:
        runs[name] = lambda i, name=name: call_of(name, i)
        status = runs[name](0)
        torch.cuda.synchronize()
        print(f"{name} {label}: status {status} error {rel_error(outs[name].float(), ref.float()):.2e}")


def print_rounds(label, runs, sets, library, ours, rounds=2):
    """A lab's report: `rounds` timings of runs ({name: run(i)}) in alternating batches of
    CUDA-graph replays, each printed with the library's time over each of ours."""
    for r in range(rounds):
        t = time_interleaved_ms(runs, sets, graph=True)
        line = ", ".join(f"{name} {t[name]:.4f}" for name in runs)
        ratios = ", ".join(f"{name} {t[library] / t[name]:.2f}x" for name in ours)
        print(f"{label} round {r}: {line}  ({ratios})", flush=True)


class Contenders:
    """Our default kernel (`*_default`) and our fastest so far, from their times alone:
    `runs` ({kernel name: run(i)}) is what head_to_head times again beside the library."""

    def __init__(self):
        self.runs, self.best_ms = {}, float("inf")

    def add(self, name, run, ms):
        """A correct kernel and its time alone."""
        if ms < self.best_ms:
            self.best_ms = ms
            self.runs = {n: r for n, r in self.runs.items() if n.endswith("_default")}
            self.runs[name] = run
        elif name.endswith("_default"):
            self.runs[name] = run


def head_to_head(libraries, ours, sets, detail, graph=False):
    """The libraries' calls ({label: run(i)}) and our kernels ({kernel name: run(i)}) timed
    again in alternating batches (time_interleaved_ms, `graph` as there); the kernels'
    last entries in `detail` (this case's) take their new times. Prints the times; returns
    the libraries' ({label: ms}) and (ms, name) of the faster of ours (the default may win)."""
    times = time_interleaved_ms({**libraries, **ours}, sets, graph=graph)
    left = set(ours)
    for j in reversed(range(len(detail))):  # each kernel's last entry: this case's
        name, case, ms, tf, err = detail[j]
        if name in left:
            detail[j] = (name, case, times[name], tf * ms / times[name], err)
            left.discard(name)
    print("  head to head: " + ", ".join(f"{n} {t:.3f} ms" for n, t in times.items()), flush=True)
    name = min(ours, key=times.get)
    return {label: times[label] for label in libraries}, (times[name], name)


def rel_error(out, ref):
    return ((out.double() - ref.double()).norm() / ref.double().norm()).item()


def measure_kernel(name, launch, out, ref, sets, flop, case, detail, graph=False):
    """One configuration of ours: `out` poisoned, launch(0) checked against `ref`, then
    launch(i) timed over the input sets; appends (name, case, ms, TFLOP/s, error) to
    `detail`, prints it and returns (ms, error). A CUDA error status raises RuntimeError."""
    def run(i):
        status = launch(i)
        if status != 0:
            raise RuntimeError(f"{name} returned cudaError {status}")
    out.fill_(float("nan"))
    run(0)
    torch.cuda.synchronize()
    err = rel_error(out, ref)
    ms = time_ms(run, sets, graph=graph)
    detail.append((name, case, ms, flop / ms / 1e9, err))
    print(f"  {name:40s} {ms:8.3f} ms {flop / ms / 1e9:7.1f} TFLOP/s  err {err:.2e}", flush=True)
    return ms, err


def comparison_markdown(heading, rows, detail, detail_column):
    """A results section: `heading` lines, then one row per (label, our kernel, ms, TFLOP/s,
    library, its ms, its TFLOP/s, target ratio) and the per-kernel details (kernel,
    `detail_column`, ms, TFLOP/s, error) in a folded table."""
    lines = heading + [
        "| case | ours (best configuration) | ms | TFLOP/s | vs | ms | TFLOP/s | ratio | target | met |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for label, name, ms, tf, other, oms, otf, target in rows:
        if name is None:
            lines.append(f"| {label} | (no correct kernel) | | | {other} | {oms:.3f} | {otf:.1f} | | "
                         f">= {target:.2f}x | no |")
            continue
        ratio = oms / ms
        lines.append(f"| {label} | {name} | {ms:.3f} | {tf:.1f} | {other} | {oms:.3f} | {otf:.1f} | "
                     f"{ratio:.2f}x | >= {target:.2f}x | {'yes' if ratio >= target else 'no'} |")
    lines += ["", "<details><summary>every configuration</summary>", "",
              f"| kernel | {detail_column} | ms | TFLOP/s | rel. error vs torch |",
              "| --- | --- | --- | --- | --- |"]
    lines += [f"| {n} | {c} | {ms:.3f} | {tf:.1f} | {e:.1e} |" for n, c, ms, tf, e in detail]
    lines += ["", "</details>", ""]
    return "\n".join(lines)


def publish(table, heading, results, out_name):
    """Prints a markdown table, appends it under `### heading` to the file `results` (when
    given) and writes it to $OUT/out_name (when OUT is set)."""
    print(table)
    if results:
        with open(results, "a") as f:
            f.write(f"\n### {heading}\n\n{table}\n")
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], out_name), "w") as f:
            f.write(table + "\n")


def profile_kernels(runs, rows=14):
    """Prints the GPU kernels of 3 calls of each zero-argument function in `runs`
    ({name: run}) as torch.profiler's table, by total CUDA time."""
    from torch.profiler import ProfilerActivity, profile
    for name, run in runs.items():
        with torch.no_grad(), profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(3):
                run()
            torch.cuda.synchronize()
        print(f"{name}, 3 forwards:")
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=rows,
                                        max_name_column_width=70))
