/**
 * Event-loop turns for heavy synchronous work (parsing a large body, building
 * the jobs of a large batch or flow, writing its answer): each caller of
 * {@link heavyTurn} resumes in an event-loop turn of its own, so that between
 * two heavy steps the loop polls I/O and answers what came in meanwhile
 * (`GET /healthz`: API.md v1.3 asks for an answer within 1 s while large
 * bodies are parsed; docs/benchmarks.md "Large bodies" has the figures).
 * Process-wide, as the event loop is.
 *
 * Order: the step of the oldest request first (`since`, its arrival), so a
 * request that has started finishes before a later one takes turns from it:
 * under a burst the first requests are answered in time and the last wait,
 * rather than all of them being answered late.
 *
 * A step is what runs from the resumption to the caller's next `await` of
 * I/O; one step per turn, never two back to back. Costs one loop turn
 * (well under 1 ms when idle): for large requests only.
 */
const waiting: { since: number; resume: () => void }[] = [];
let scheduled = false;

function next(): void {
  const step = waiting.shift();
  // Queued from an immediate callback, the next one runs in the next turn, after the poll phase.
  if (waiting.length) setImmediate(next);
  else scheduled = false;
  step?.resume();
}

/**
 * Resolves in an event-loop turn where no other heavy step runs.
 * @param since when the request this step serves arrived (ms since the epoch): older first, FIFO among equals.
 */
export function heavyTurn(since = Date.now()): Promise<void> {
  return new Promise((resume) => {
    let at = waiting.length;
    while (at > 0 && waiting[at - 1].since > since) at--;
    waiting.splice(at, 0, { since, resume });
    if (!scheduled) {
      scheduled = true;
      setImmediate(next);
    }
  });
}

/** Heavy steps waiting for their turn now. */
export function heavyTurnsWaiting(): number {
  return waiting.length;
}
