/**
 * The lead-management resources, one file each under ./leads; this barrel is the
 * '@estate/contracts/leads' entry point every importer uses.
 */
export * from './leads/leads';
export * from './leads/activities';
export * from './leads/agents';
export * from './leads/routing';
export * from './leads/scoring';
export { emailInput, phoneInput, propertyInterestInput } from './leads/common';
