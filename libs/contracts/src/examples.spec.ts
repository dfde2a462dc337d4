import { examples } from './examples';
import { lead } from './leads/leads';
import { listing } from './listings';
import { media } from './media';

describe('the answers shown as examples', () => {
  it.each([
    ['listing', listing, examples.listing],
    ['media', media, examples.media],
    ['lead', lead, examples.lead],
  ] as const)('%s is what the API answers (its own schema, no field left out)', (_name, schema, example) => {
    const parsed = schema.safeParse(example);
    expect(parsed.error?.issues ?? []).toEqual([]);
    // Every field of the answer is in the example: a new field of the contract shows up in the reference too.
    expect(Object.keys(example).sort()).toEqual(Object.keys(schema.shape).sort());
  });
});
