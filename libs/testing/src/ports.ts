import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** The first port of the range the system hands out for port 0 and outgoing connections (Linux's default otherwise). */
function ephemeralRangeStart(): number {
  try {
    const first = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(first) && first > 2048) return first;
  } catch {
    // Not Linux: its default, below which macOS and Windows hand out nothing either.
  }
  return 32768;
}

const bindable = (port: number) =>
  new Promise<boolean>((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });

/**
 * A port for a server that must keep its address while it is stopped and started again (an engine a fault test
 * takes away, whose clients were given the address before it first starts): free now, and below the range the
 * system hands out for port 0 and outgoing connections, so no other process is given it in the meantime unless it
 * asks for that very number. Servers that can, bind port 0 instead and say which port they got.
 */
export async function fixedPort(): Promise<number> {
  const below = ephemeralRangeStart();
  const from = Math.min(10_000, Math.floor(below / 2));
  for (let tries = 0; tries < 50; tries++) {
    const port = from + Math.floor(Math.random() * (below - from));
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port found below ${below}`);
}

/** True for the failure of a server that could not bind its port because something else holds it. */
export function isAddressInUse(err: unknown): boolean {
  return err instanceof Error && /EADDRINUSE|address already in use/i.test(err.message);
}

/**
 * Starts a server that must come back on a port it had before (clients know the address) again while the port is
 * still taken, within `timeoutMs`. Any other failure is thrown at once.
 */
export async function startOnSamePort<T>(start: () => Promise<T>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await start();
    } catch (err) {
      if (!isAddressInUse(err) || Date.now() >= deadline) throw err;
    }
    await sleep(250);
  }
}
