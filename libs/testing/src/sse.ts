/** One server-sent event as a client sees it. */
export interface SseEvent {
  id?: string;
  event: string;
  data: string;
}

/**
 * Reads a `text/event-stream` response to its end, calling `onEvent` as each event arrives (so a
 * test can act in the middle of a stream). Comment lines (`: ...`) are collected apart.
 */
export async function readSse(
  res: Response,
  onEvent?: (event: SseEvent) => void,
): Promise<{ events: SseEvent[]; comments: string[] }> {
  if (!res.body) throw new Error('response has no body');
  const events: SseEvent[] = [];
  const comments: string[] = [];
  const decoder = new TextDecoder();
  let buffer = '';
  const take = (block: string) => {
    const event: SseEvent = { event: 'message', data: '' };
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) comments.push(line.slice(1).trim());
      else if (line.startsWith('id:')) event.id = line.slice(3).trim();
      else if (line.startsWith('event:')) event.event = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
    }
    if (data.length === 0) return;
    event.data = data.join('\n');
    events.push(event);
    onEvent?.(event);
  };
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let cut: number;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      take(buffer.slice(0, cut));
      buffer = buffer.slice(cut + 2);
    }
  }
  if (buffer.trim()) take(buffer);
  return { events, comments };
}
