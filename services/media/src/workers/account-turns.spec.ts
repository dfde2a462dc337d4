import { AccountTurns } from './account-turns';

/** A task that runs until the test lets it finish, noting when it started. */
function gate(started: string[], name: string) {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return { task: () => (started.push(name), done), finish };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('render turns between accounts', () => {
  it("gives the next slot to an account that waits behind another's queue, after the task that runs", async () => {
    const turns = new AccountTurns(1, 100);
    const started: string[] = [];
    const a = Array.from({ length: 5 }, (_, i) => gate(started, `a${i + 1}`));
    const b = gate(started, 'b1');
    const runs = a.map((g) => turns.run('acc_a', g.task, 0));
    runs.push(turns.run('acc_b', b.task, 0));
    await settle();
    expect(started).toEqual(['a1']);
    a[0].finish();
    await settle();
    // The account that queued five is not served again before the one that queued after it.
    expect(started).toEqual(['a1', 'b1']);
    b.finish();
    for (const g of a.slice(1)) {
      await settle();
      g.finish();
    }
    await expect(Promise.all(runs)).resolves.toEqual([true, true, true, true, true, true]);
    expect(started).toEqual(['a1', 'b1', 'a2', 'a3', 'a4', 'a5']);
  });

  it('alternates between busy accounts, never running more than its slots', async () => {
    const turns = new AccountTurns(2, 100);
    const started: string[] = [];
    const tasks = ['a', 'a', 'a', 'b', 'b', 'c'].map((acc, i) => ({ acc, ...gate(started, `${acc}${i}`) }));
    const runs = tasks.map((t) => turns.run(`acc_${t.acc}`, t.task, 0));
    await settle();
    expect(started).toEqual(['a0', 'a1']);
    tasks[0].finish();
    await settle();
    tasks[1].finish();
    await settle();
    expect(started).toEqual(['a0', 'a1', 'b3', 'c5']);
    for (const t of tasks.slice(2)) t.finish();
    await Promise.all(runs);
    expect(started.slice(4).sort()).toEqual(['a2', 'b4']);
  });

  it("refuses a task beyond an account's share once the wait is over, and takes it when room comes in time", async () => {
    const turns = new AccountTurns(1, 2);
    const started: string[] = [];
    const [a1, a2, a3, a4] = ['a1', 'a2', 'a3', 'a4'].map((n) => gate(started, n));
    const r1 = turns.run('acc_a', a1.task, 0);
    const r2 = turns.run('acc_a', a2.task, 0);
    expect(turns.holding('acc_a')).toBe(2);
    await expect(turns.run('acc_a', a3.task, 0)).resolves.toBe(false);
    const r4 = turns.run('acc_a', a4.task, 60_000);
    await settle();
    a1.finish();
    await r1;
    a2.finish();
    await r2;
    await settle();
    a4.finish();
    await expect(r4).resolves.toBe(true);
    expect(started).toEqual(['a1', 'a2', 'a4']);
    expect(turns.holding('acc_a')).toBe(0);
  });
});
