import { KeyedScheduler } from './keyed-scheduler';

const gate = () => {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
};

describe('KeyedScheduler', () => {
  it('runs tasks of different keys at once, up to the limit', async () => {
    const scheduler = new KeyedScheduler(2);
    const g = gate();
    let running = 0;
    let most = 0;
    const task = async () => {
      running++;
      most = Math.max(most, running);
      await g.opened;
      running--;
    };
    const all = ['a', 'b', 'c', 'd'].map((k) => scheduler.run(k, task));
    await new Promise((r) => setImmediate(r));
    expect(running).toBe(2);
    g.open();
    await Promise.all(all);
    expect(most).toBe(2);
    expect(scheduler.size).toBe(0);
  });

  it('runs the tasks of one key one after another, in order, even when one fails', async () => {
    const scheduler = new KeyedScheduler(8);
    const order: string[] = [];
    const slow = gate();
    const first = scheduler.run('x', async () => {
      await slow.opened;
      order.push('x1');
      throw new Error('x1 failed');
    });
    const second = scheduler.run('x', async () => void order.push('x2'));
    const other = scheduler.run('y', async () => void order.push('y1'));
    await other;
    expect(order).toEqual(['y1']);
    slow.open();
    await expect(first).rejects.toThrow('x1 failed');
    await second;
    expect(order).toEqual(['y1', 'x1', 'x2']);
  });

  it('makes room wait while the limit of pending tasks is reached, and idle wait for all of them', async () => {
    const scheduler = new KeyedScheduler(1);
    const g = gate();
    void scheduler.run('a', () => g.opened);
    let roomy = false;
    const room = scheduler.room().then(() => (roomy = true));
    await new Promise((r) => setImmediate(r));
    expect(roomy).toBe(false);
    g.open();
    await room;
    await scheduler.idle();
    expect(scheduler.size).toBe(0);
  });
});
