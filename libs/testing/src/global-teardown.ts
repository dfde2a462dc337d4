export default async function globalTeardown(): Promise<void> {
  const started = (globalThis as { __estateContainers?: { stop(): Promise<unknown> }[] }).__estateContainers ?? [];
  await Promise.all(started.map((c) => c.stop()));
}
