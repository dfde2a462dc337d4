import type { Scenario } from '../lib/scenario';
import { bulk } from './bulk';
import { distributed } from './distributed';
import { feeds } from './feeds';
import { leads } from './leads';
import { listingsGet } from './listings-get';
import { media } from './media';
import { reso } from './reso';
import { search } from './search';
import { soak } from './soak';
import { webhooks } from './webhooks';

/** Every scenario, in the order a plain `npm run bench` runs them. */
export const scenarios: readonly Scenario[] = [
  listingsGet,
  search,
  reso,
  media,
  bulk,
  feeds,
  leads,
  webhooks,
  soak,
  distributed,
];
