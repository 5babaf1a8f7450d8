import { heavyTurn } from './heavy-turns';

describe('heavyTurn', () => {
  it('resumes one step per event-loop turn, oldest request first, FIFO among equals, with I/O polled between two', async () => {
    const order: string[] = [];
    const polls: number[] = [];
    // A 1 ms timer fires in the timers phase, at most once per turn: it counts the turns between steps.
    let turns = 0;
    const tick = setInterval(() => turns++, 0);
    const step = (name: string, since: number) =>
      heavyTurn(since).then(() => {
        order.push(name);
        polls.push(turns);
        // A heavy step: 2 ms of work, so the 1 ms timer is due when the turn ends.
        for (const t = Date.now(); Date.now() - t < 2; );
      });
    await Promise.all([step('c', 30), step('a', 10), step('b', 10), step('d', 20)]);
    clearInterval(tick);
    expect(order).toEqual(['a', 'b', 'd', 'c']);
    for (let i = 1; i < polls.length; i++) expect(polls[i]).toBeGreaterThan(polls[i - 1]);
  });
});
