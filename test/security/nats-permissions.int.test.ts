import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { subjects } from '@estate/contracts/events';

/**
 * The NATS users file (scripts/engines/nats-users.conf, used by up.sh and docker-compose) against the subject map of
 * the contracts: each service may publish exactly the domain subjects it owns, so a compromised or misconfigured
 * service cannot publish another's events, and a subject added to the contracts cannot be forgotten here (its
 * publisher would be refused by the server at run time, in the distributed profile only).
 */
const SERVICES = ['gateway', 'listings', 'media', 'leads', 'webhooks'] as const;
/** Commands sent by integration bridges (with their own NATS user), never by a service. */
const COMMANDS = new Set(['leads.activity.record']);

function publishAllowed(): Map<string, Set<string>> {
  const conf = readFileSync(join(__dirname, '..', '..', 'scripts', 'engines', 'nats-users.conf'), 'utf8');
  const allowed = new Map<string, Set<string>>();
  // Each user block: `user: <name>` ... `publish: { allow: [ ... ] }` up to the next user.
  const blocks = conf.split(/\n\s*user:\s*/).slice(1);
  for (const block of blocks) {
    const name = /^(\S+)/.exec(block)![1];
    const publish = /publish:\s*\{\s*allow:\s*\[([\s\S]*?)\]/.exec(block);
    allowed.set(name, new Set(publish ? [...publish[1].matchAll(/"([^"]+)"/g)].map((m) => m[1]) : []));
  }
  return allowed;
}

describe('NATS users: who may publish which domain subject', () => {
  const allowed = publishAllowed();

  it('names a user for every service, each with its own publish list', () => {
    for (const service of SERVICES) expect([service, allowed.has(service)]).toEqual([service, true]);
  });

  it('lets each service publish the subjects it owns, bare and under a namespace', () => {
    for (const subject of Object.keys(subjects)) {
      if (COMMANDS.has(subject)) continue;
      const owner = subject.split('.')[0];
      const list = allowed.get(owner) ?? new Set();
      expect([subject, owner, list.has(subject), list.has(`*.${subject}`)]).toEqual([subject, owner, true, true]);
    }
  });

  it("lets no service publish another service's subjects, nor the commands of integration bridges", () => {
    for (const subject of Object.keys(subjects)) {
      const owner = COMMANDS.has(subject) ? undefined : subject.split('.')[0];
      for (const service of SERVICES) {
        if (service === owner) continue;
        const list = allowed.get(service)!;
        const granted = [subject, `*.${subject}`].filter((s) => list.has(s)).length > 0;
        expect([subject, service, granted]).toEqual([subject, service, false]);
        // No wildcard that would cover it either.
        for (const pattern of list)
          if (!pattern.startsWith('$') && !pattern.startsWith('_INBOX'))
            expect([pattern, service, pattern === '>' || pattern.endsWith('.>')]).toEqual([pattern, service, false]);
      }
    }
  });
});
