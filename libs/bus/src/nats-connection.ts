/**
 * Servers and credentials for a NATS connection from a URL list (`nats://host:4222`, comma-separated),
 * where a URL may carry `user:password@` (the client library does not read them from the URL).
 * Replies come to an inbox named after the user, so a server can keep each user to its own inbox.
 */
export function natsConnectOptions(
  url: string,
  auth: { user?: string; password?: string } = {},
): { servers: string[]; user?: string; pass?: string; inboxPrefix?: string } {
  let user = auth.user;
  let pass = auth.password;
  const servers = url
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0)
    .map((server) => {
      const m = /^([a-z]+:\/\/)?([^/@]*)@(.*)$/i.exec(server);
      if (!m) return server;
      const [name, secret] = m[2].split(':');
      user ??= decodeURIComponent(name);
      if (secret !== undefined) pass ??= decodeURIComponent(secret);
      return `${m[1] ?? ''}${m[3]}`;
    });
  return user ? { servers, user, pass, inboxPrefix: inboxPrefixOf(user) } : { servers };
}

/** The reply inbox prefix of a NATS user: `_INBOX_<user>` (the server config allows each user only its own). */
export const inboxPrefixOf = (user: string): string => `_INBOX_${user.replace(/[^A-Za-z0-9_-]/g, '_')}`;
