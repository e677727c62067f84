"""The driver's progress on stderr while the Spark job runs: calib's stage, Spark's stages, rows done.

One job: instead of Spark's console progress bars and log lines (turned off by
:func:`calib.production.engines.spark.io.session`), a thread polls the status
tracker every ``every`` seconds and prints, when it changed, one line::

    calib spark: candidates: Spark stage 14 3/8 tasks, 1,204,311 rows in

where the rows are the active stages' input plus shuffle-read records (as the
executors report them: when a task ends, and with their heartbeats). At the end
it prints the application's Spark jobs and stages (:meth:`Progress.totals`). On a
terminal the line is rewritten in place; in a log one line is printed per
change, at most every ``every`` seconds. :meth:`Progress.log` is
:func:`calib.production.engines.spark.apply.apply_spark`'s ``log``: it names the stage
that finished, with its time and row count when the engine gives one.
"""

from __future__ import annotations

import sys
import threading

STAGES = ("signatures", "ids and exact copies", "candidates", "verification", "connected components", "clustering",
          "cluster ids", "write")  # apply_spark's, in order (the draw's: calib.production.engines.spark.draw.STAGES)


class Progress:
    def __init__(self, spark, stream=None, every: float = 2.0, stages: tuple[str, ...] = STAGES):
        self.sc = spark.sparkContext
        self.stages = tuple(stages)
        self.stream = stream if stream is not None else sys.stderr
        self.every = every
        self.stage = self.stages[0]
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="calib-spark-progress", daemon=True)
        self._last = ""
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def __enter__(self) -> "Progress":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        if self._tty and self._last:
            self.stream.write("\n")

    def _print(self, line: str, final: bool = False) -> None:
        with self._lock:
            if self._tty:
                self.stream.write("\r\x1b[K" + line + ("\n" if final else ""))
            else:
                self.stream.write(line + "\n")
            self.stream.flush()

    def note(self, line: str) -> None:
        self._print(f"calib spark: {line}", final=True)

    def log(self, stage: str, seconds: float, rows: int | None = None) -> None:
        """A calib stage finished: say so (and which one runs now, for the polled lines)."""
        done = f"calib spark: {stage} done in {seconds:.1f} s" + (f" ({rows:,} rows)" if rows is not None else "")
        self._print(done, final=True)
        self._last = ""
        self.stage = self.stages[self.stages.index(stage) + 1] if stage in self.stages[:-1] else stage
        if stage == self.stages[-1]:
            self.note(self.totals())

    def totals(self) -> str:
        """The application's Spark jobs and stages so far (stages run; those skipped, their shuffle output
        already there, counted apart): a measure of the job's fixed costs that does not depend on the load."""
        tracker = self.sc.statusTracker()
        jobs = tracker.getJobIdsForGroup()
        stages = {s for j in jobs if (info := tracker.getJobInfo(j)) is not None for s in info.stageIds}
        run = sum(1 for s in stages if (info := tracker.getStageInfo(s)) is not None and info.numCompletedTasks)
        return f"{len(jobs)} Spark jobs, {run} stages run ({len(stages) - run} skipped)"

    def status(self) -> str | None:
        """One line on the active Spark stages, or None when none is running."""
        tracker = self.sc.statusTracker()
        ids = sorted(tracker.getActiveStageIds())
        if not ids:
            return None
        tasks = done = 0
        for sid in ids:
            info = tracker.getStageInfo(sid)
            if info is not None:
                tasks += info.numTasks
                done += info.numCompletedTasks
        rows = self._rows()
        label = f"Spark stage{'s' if len(ids) > 1 else ''} {','.join(map(str, ids))}"
        return (f"calib spark: {self.stage}: {label} {done}/{tasks} tasks"
                + (f", {rows:,} rows in" if rows else ""))

    def _rows(self) -> int | None:
        """Input plus shuffle-read records of the active stages, from the JVM's status store."""
        try:
            stages = self.sc._jsc.sc().statusStore().activeStages()
            it = stages.iterator()
            total = 0
            while it.hasNext():
                s = it.next()
                total += int(s.inputRecords()) + int(s.shuffleReadRecords())
            return total
        except Exception:  # the store's API is Spark's internal one: progress without rows then
            return None

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                line = self.status()
            except Exception:  # the context is stopping
                return
            if line and line != self._last:
                self._print(line)
                self._last = line
