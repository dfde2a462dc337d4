import { z } from 'zod';
import { fieldErrors } from './index';

const errorsOf = (schema: z.ZodType, value: unknown) => fieldErrors(schema.safeParse(value).error?.issues ?? []);

describe('fieldErrors over a union (a cross-field rule)', () => {
  const weight = z.number().min(0).max(100);
  const weights = z.union(
    (['a', 'b'] as const).map((above) =>
      z.strictObject({ a: above === 'a' ? weight.gt(0) : weight, b: above === 'b' ? weight.gt(0) : weight }),
    ),
    { error: 'at least one weight must be above 0' },
  );

  it('names the faults every option agrees on, at their paths', () => {
    expect(errorsOf(z.strictObject({ weights }), { weights: { a: 200, b: 1 } })).toEqual([
      { path: 'weights.a', message: 'Too big: expected number to be <=100' },
    ]);
  });

  it("says the union's own message when the options agree on nothing", () => {
    expect(errorsOf(z.strictObject({ weights }), { weights: { a: 0, b: 0 } })).toEqual([
      { path: 'weights', message: 'at least one weight must be above 0' },
    ]);
  });

  it("gives the first option's faults when the union has no message of its own", () => {
    const contact = z.union([
      z.strictObject({ email: z.string({ error: 'email or phone is required' }), phone: z.string().optional() }),
      z.strictObject({ email: z.string().optional(), phone: z.string() }),
    ]);
    expect(errorsOf(contact, {})).toEqual([{ path: 'email', message: 'email or phone is required' }]);
  });

  it('names the field an option forbids, and the unmatched discriminator', () => {
    const key = z.discriminatedUnion('role', [
      z.strictObject({ role: z.literal('agent'), agentId: z.string() }),
      z.strictObject({
        role: z.literal('admin'),
        agentId: z.never({ error: 'is only allowed for role agent' }).optional(),
      }),
    ]);
    expect(errorsOf(key, { role: 'admin', agentId: 'agt_1' })).toEqual([
      { path: 'agentId', message: 'is only allowed for role agent' },
    ]);
    expect(errorsOf(key, { role: 'root' }).map((e) => e.path)).toEqual(['role']);
  });
});
