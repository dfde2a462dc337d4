import { leadStatuses, type LeadStatus } from '@estate/contracts/leads';
import { canTransition, isOpen, nextStatuses } from './pipeline.rules';

const open: LeadStatus[] = ['new', 'contacted', 'qualified', 'showing', 'offer', 'under_contract'];

/** The allowed moves, written out from SPEC section 7 independently of the implementation. */
const allowed = new Set<string>([
  ...open.flatMap((a) => open.filter((b) => b !== a).map((b) => `${a}>${b}`)),
  'offer>closed_won',
  'under_contract>closed_won',
  ...open.map((a) => `${a}>nurture`),
  ...open.map((a) => `${a}>closed_lost`),
  'nurture>closed_lost',
  ...['closed_lost', 'nurture'].flatMap((a) => ['new', 'contacted', 'qualified'].map((b) => `${a}>${b}`)),
]);

describe('lead pipeline', () => {
  it('knows which stages are open', () => {
    expect(leadStatuses.filter(isOpen)).toEqual(open);
  });

  it.each(leadStatuses.flatMap((from) => leadStatuses.filter((to) => to !== from).map((to) => [from, to] as const)))(
    '%s -> %s follows the spec',
    (from, to) => {
      expect(canTransition(from, to)).toBe(allowed.has(`${from}>${to}`));
    },
  );

  it('has 51 allowed moves and 21 refused ones', () => {
    const pairs = leadStatuses.flatMap((from) =>
      leadStatuses.filter((to) => to !== from).map((to) => canTransition(from, to)),
    );
    expect(pairs.filter(Boolean)).toHaveLength(51);
    expect(pairs.filter((ok) => !ok)).toHaveLength(21);
  });

  it('treats closed_won as final and lists where a lead may go', () => {
    expect(nextStatuses('closed_won', leadStatuses)).toEqual([]);
    expect(nextStatuses('nurture', leadStatuses)).toEqual(['new', 'contacted', 'qualified', 'closed_lost']);
    expect(canTransition('closed_won', 'closed_won')).toBe(true);
  });
});
