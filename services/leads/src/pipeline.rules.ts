import { openLeadStatuses, type LeadStatus } from '@estate/contracts/leads';

const OPEN: ReadonlySet<LeadStatus> = new Set(openLeadStatuses);
const WIN_FROM: ReadonlySet<LeadStatus> = new Set(['offer', 'under_contract']);

/** Open stages are the ones an agent works (and that count toward its capacity). */
export function isOpen(status: LeadStatus): boolean {
  return OPEN.has(status);
}

/**
 * The pipeline of SPEC section 7. Staying in the same status is not a transition (a PATCH that
 * repeats the status changes nothing) and is therefore not asked here.
 */
export function canTransition(from: LeadStatus, to: LeadStatus): boolean {
  if (from === to) return true;
  switch (to) {
    case 'new':
    case 'contacted':
    case 'qualified':
      // Reopening from closed_lost or nurture lands in one of these three.
      return OPEN.has(from) || from === 'closed_lost' || from === 'nurture';
    case 'showing':
    case 'offer':
    case 'under_contract':
      return OPEN.has(from);
    case 'closed_won':
      return WIN_FROM.has(from);
    case 'nurture':
      return OPEN.has(from);
    case 'closed_lost':
      return OPEN.has(from) || from === 'nurture';
  }
}

/** The statuses a lead may move to from `from` (for error messages). */
export function nextStatuses(from: LeadStatus, all: readonly LeadStatus[]): LeadStatus[] {
  return all.filter((to) => to !== from && canTransition(from, to));
}
