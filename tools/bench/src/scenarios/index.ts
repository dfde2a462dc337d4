import type { Scenario } from '../lib/scenario';
import { listingsGet } from './listings-get';

/** Every scenario, in the order a plain `npm run bench` runs them. */
export const scenarios: readonly Scenario[] = [listingsGet];
