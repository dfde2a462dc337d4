import { GroupedWrites } from './grouped-writes';

/** A send whose requests are answered by the test, in order. */
function controlledSend() {
  const requests: Array<{
    groups: string[][];
    answer: (outcomes: Array<Error | undefined>) => void;
    fail: (err: Error) => void;
  }> = [];
  const send = (groups: string[][]) =>
    new Promise<Array<Error | undefined>>((resolve, reject) =>
      requests.push({ groups, answer: resolve, fail: reject }),
    );
  /** Waits until the writer has sent its next request. */
  const nextRequest = async (n: number) => {
    while (requests.length < n) await new Promise((r) => setImmediate(r));
    return requests[n - 1];
  };
  return { requests, send, nextRequest };
}

describe('GroupedWrites', () => {
  it('sends a lone write at once, and the writes that arrive meanwhile together as the next request', async () => {
    const { requests, send, nextRequest } = controlledSend();
    const writes = new GroupedWrites(send, 100);
    const first = writes.write(['a']);
    expect(requests.map((r) => r.groups)).toEqual([[['a']]]);
    const later = [writes.write(['b']), writes.write(['c', 'd']), writes.write(['e'])];
    expect(requests).toHaveLength(1);

    requests[0].answer([undefined]);
    await first;
    const second = await nextRequest(2);
    expect(second.groups).toEqual([['b'], ['c', 'd'], ['e']]);
    second.answer([undefined, undefined, undefined]);
    await Promise.all(later);
    expect(requests).toHaveLength(2);
  });

  it("gives each write its own outcome, and fails a whole request's writes when the request fails", async () => {
    const { requests, send, nextRequest } = controlledSend();
    const writes = new GroupedWrites(send, 100);
    const first = writes.write(['a']);
    const refused = writes.write(['b']);
    const written = writes.write(['c']);
    requests[0].fail(new Error('engine down'));
    await expect(first).rejects.toThrow('engine down');

    (await nextRequest(2)).answer([new Error('b refused'), undefined]);
    await expect(refused).rejects.toThrow('b refused');
    await expect(written).resolves.toBeUndefined();

    // The writer goes on after a failure.
    const after = writes.write(['d']);
    (await nextRequest(3)).answer([undefined]);
    await expect(after).resolves.toBeUndefined();
  });

  it('keeps a request within maxOps, and sends a larger write alone', async () => {
    const { requests, send, nextRequest } = controlledSend();
    const writes = new GroupedWrites(send, 3);
    const all = [
      writes.write(['a']),
      writes.write(['b', 'c']),
      writes.write(['d']),
      writes.write(['e', 'f', 'g', 'h']),
    ];
    requests[0].answer([undefined]);
    const second = await nextRequest(2);
    expect(second.groups).toEqual([['b', 'c'], ['d']]);
    second.answer([undefined, undefined]);
    const third = await nextRequest(3);
    expect(third.groups).toEqual([['e', 'f', 'g', 'h']]);
    third.answer([undefined]);
    await Promise.all(all);
  });
});
